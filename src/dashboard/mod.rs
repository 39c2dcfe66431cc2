//! The interactive dashboard: a live view of one claims root and its events
//! log, or of an etcd store (`model::store`, `update::store`), with acquire /
//! release / renew / force-release going through the same verbs as the CLI.
//!
//! Elm-shaped: [`model::App`] is the model, [`action::Action`] the messages,
//! [`update::update`] the transitions, [`view::draw`] the view. Threads
//! (input, the store's change feed → collector, op worker, signals) only
//! send actions; every read of the disk or the process table happens on
//! those threads, so `update` is pure. The main loop blocks on the channel
//! and redraws only when an update says something visible changed.

pub(crate) mod action;
pub(crate) mod collector;
pub(crate) mod fleet_reader;
mod heard;
pub(crate) mod input;
pub(crate) mod keys;
pub(crate) mod keys_doc;
pub(crate) mod model;
pub(crate) mod ops;
mod options;
pub(crate) mod roots;
pub(crate) mod terminal;
pub mod testing;
pub(crate) mod timeline;
pub(crate) mod update;
pub(crate) mod view;

pub use action::{Action, Op, OpResult};
pub use model::App;
pub use options::{Opening, Options};
pub use update::{update, Effects};

use crate::claims::{now_ms, LocalIdentity, Root};
use crate::events::file_history::FileHistory;
use crate::events::history::{History, HistoryError, Log};
use crate::events::service::{Opener, Which};
use ratatui::crossterm::queue;
use ratatui::crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

/// Most actions folded into one frame: a burst is applied as a whole, then
/// drawn once.
const MAX_BATCH: usize = 512;

/// Run the dashboard until the operator quits.
pub fn run(mut opts: Options) -> std::io::Result<()> {
    // Everything the model needs from the environment is read here, at the
    // edge, once.
    opts.no_color |= std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    // What the verbs word (a refusal's times) reads in the screen's zone.
    crate::time::set_local_words(opts.local_time);
    let identity = LocalIdentity::current();
    let operator = collector::operator_id(&identity);
    let (tx, rx) = channel::<Action>();
    let mut app = App::new(opts, now_ms(), identity, operator);

    let refresh = app.refresh_ms;
    let readers = spawn_readers_every(&app.roots, &tx, refresh)?;
    terminal::spawn_signals(tx.clone())?;
    let collect_txs: Vec<_> = readers.into_iter().map(|(c, _)| c).collect();
    sink_warnings(&tx);
    let roots = app.roots.clone();
    let ops_worker: OpsWorker =
        Box::new(move |op_rx, out| ops::worker_over(roots, op_rx, out, collect_txs));
    let log = LogService {
        history: Box::new(FileHistory::new(
            app.root.events_file(),
            crate::events::service::limits(),
        )),
        open: Box::new(crate::events::service::open_file),
    };
    let result = ui_loop(&mut app, &tx, rx, ops_worker, log);
    crate::diag::set_warning_sink(None);
    result
}

/// Run the dashboard over a store with a connection (etcd) until the
/// operator quits. The store is opened here, before the terminal is taken,
/// so a store that cannot be reached is said as a plain error.
pub fn run_store(
    mut opts: Options,
    source: collector::Source,
) -> Result<(), Box<dyn std::error::Error>> {
    opts.no_color |= std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let identity = LocalIdentity::current();
    let operator = collector::operator_id(&identity);
    let collector_store = source.open()?;
    let ops_store = source.open()?;
    // The whole-log views read on a connection of their own, so a long
    // pass over the events never delays a claim's re-read.
    let history_store = source.open()?;
    let log = LogService {
        history: audit_of(&history_store)?.history(&Log::Own)?,
        open: Box::new(move |which| match which {
            Which::Log(log) => audit_of(&history_store)
                .and_then(|a| a.history(log))
                .map_err(|e| HistoryError::Store(e.to_string())),
            Which::Path(p) => Err(HistoryError::Store(format!(
                "{} is a file, not a log of {}",
                p.display(),
                history_store.url()
            ))),
        }),
    };
    let (tx, rx) = channel::<Action>();
    let now = now_ms();
    let mut app = App::new(opts, now, identity, operator);
    app.over_store(model::store::StoreView::new(collector_store.url(), now));
    let inbox = spawn_store_readers_every(collector_store, &source, &tx, app.refresh_ms)?;
    terminal::spawn_signals(tx.clone())?;
    sink_warnings(&tx);
    // A publishing host is waited for as long as any store call: the
    // CLI's `force-release --host` waits the same.
    let ask_wait = source.ctx.timeout.unwrap_or(ops::DEFAULT_ASK_WAIT);
    let ops_worker: OpsWorker =
        Box::new(move |op_rx, out| ops::store_worker(ops_store, ask_wait, op_rx, out, inbox));
    let result = ui_loop(&mut app, &tx, rx, ops_worker, log);
    crate::diag::set_warning_sink(None);
    Ok(result?)
}

/// The events log(s) a store keeps, or why it has none.
fn audit_of(
    b: &Arc<dyn crate::store::Backend>,
) -> Result<&dyn crate::store::Audit, crate::store::StoreError> {
    b.audit().ok_or_else(|| {
        crate::store::StoreError::Unsupported(format!("{} keeps no events log", b.url()))
    })
}

/// The op worker a dashboard runs: file roots or a store, it takes ops and
/// answers with actions.
type OpsWorker = Box<dyn FnOnce(Receiver<Op>, Sender<Action>) + Send>;

/// The core's best-effort warnings go to the status line while the
/// dashboard owns the terminal.
fn sink_warnings(tx: &Sender<Action>) {
    let sink_tx = tx.clone();
    crate::diag::set_warning_sink(Some(Box::new(move |m: &str| {
        let _ = sink_tx.send(Action::Warning(m.to_string()));
    })));
}

/// Every thread that reads the outside world for one root, wired as the
/// live app wires them: the collector (which lists at once, then ticks
/// each second) and the root's change feed, which brings it what changed
/// and the events log's lines. Returns the collector's inbox and its read
/// counters.
pub fn spawn_readers(
    root: &Root,
    tx: &Sender<Action>,
) -> std::io::Result<(Sender<collector::Input>, Arc<collector::Counters>)> {
    spawn_root_readers(root, 0, tx, tx.clone(), options::DEFAULT_TICK_MS)
}

/// [`spawn_readers`] once per root: one feed and one collector each, so a
/// change re-reads exactly the changed key of its own root. With several
/// roots the events come tagged with their root ([`Action::InRoot`]); with
/// one they are as they always were. Returns each root's collector inbox
/// and counters, in root order.
pub fn spawn_readers_over(
    roots: &roots::ShownRoots,
    tx: &Sender<Action>,
) -> std::io::Result<Vec<(Sender<collector::Input>, Arc<collector::Counters>)>> {
    spawn_readers_every(roots, tx, options::DEFAULT_TICK_MS)
}

/// [`spawn_readers_over`], the clocks ticking every `tick_ms`.
fn spawn_readers_every(
    roots: &roots::ShownRoots,
    tx: &Sender<Action>,
    tick_ms: i64,
) -> std::io::Result<Vec<(Sender<collector::Input>, Arc<collector::Counters>)>> {
    let mut out = Vec::with_capacity(roots.len());
    for (i, root) in roots.iter().enumerate() {
        let events_tx = if roots.is_several() {
            tagged(i, tx)?
        } else {
            tx.clone()
        };
        out.push(spawn_root_readers(root, i, tx, events_tx, tick_ms)?);
    }
    Ok(out)
}

/// The threads that read a store with a connection, wired as the live app
/// wires them: its collector (over `store`, already open) and the probe of
/// its header facts (on a connection of its own, from `source`). Returns
/// the collector's inbox.
pub fn spawn_store_readers(
    store: Arc<dyn crate::store::Backend>,
    source: &collector::Source,
    tx: &Sender<Action>,
) -> std::io::Result<Sender<collector::Input>> {
    spawn_store_readers_every(store, source, tx, options::DEFAULT_TICK_MS)
}

/// [`spawn_store_readers`], the clock ticking every `tick_ms`.
fn spawn_store_readers_every(
    store: Arc<dyn crate::store::Backend>,
    source: &collector::Source,
    tx: &Sender<Action>,
    tick_ms: i64,
) -> std::io::Result<Sender<collector::Input>> {
    let mut c = collector::Collector::new(store, None, 0, now_ms());
    c.tick_ms = tick_ms;
    let inbox = collector::spawn(c, tx.clone(), tx.clone())?;
    let (probed, out) = (source.clone(), tx.clone());
    std::thread::Builder::new()
        .name("claimtop-probe".into())
        .spawn(move || collector::probe(probed, out))?;
    Ok(inbox)
}

/// A sender whose messages reach `tx` wrapped as root `i`'s.
fn tagged(i: usize, tx: &Sender<Action>) -> std::io::Result<Sender<Action>> {
    let (in_tx, in_rx) = channel::<Action>();
    let out = tx.clone();
    std::thread::Builder::new()
        .name(format!("claimtop-root{i}"))
        .spawn(move || {
            for a in in_rx {
                if out.send(Action::InRoot(i, Box::new(a))).is_err() {
                    return;
                }
            }
        })?;
    Ok(in_tx)
}

fn spawn_root_readers(
    root: &Root,
    i: usize,
    tx: &Sender<Action>,
    events_tx: Sender<Action>,
    tick_ms: i64,
) -> std::io::Result<(Sender<collector::Input>, Arc<collector::Counters>)> {
    let mut c = collector::Collector::local(root, i, now_ms());
    c.tick_ms = tick_ms;
    let counters = Arc::clone(&c.counters);
    let inbox = collector::spawn(c, tx.clone(), events_tx)?;
    Ok((inbox, counters))
}

/// The whole-log views' source: the history they start on, and how to
/// open another log of the same store when they move.
struct LogService {
    history: Box<dyn History>,
    open: Opener,
}

fn ui_loop(
    app: &mut App,
    tx: &Sender<Action>,
    rx: Receiver<Action>,
    ops_worker: OpsWorker,
    log: LogService,
) -> std::io::Result<()> {
    let (op_tx, op_rx) = channel::<Op>();
    let out = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-ops".into())
        .spawn(move || ops_worker(op_rx, out))?;

    // The pane's tail comes from the follower (a file's, or the store's
    // change feed); the whole-log views read the history behind the seam.
    app.events.browse.nouns = log.history.nouns();
    let log_tx = spawn_log_service(log, tx)?;

    let mut screen = terminal::Screen::enter()?;
    terminal::spawn_input(tx.clone())?;
    let size = screen.term.size()?;
    let _ = update(app, Action::Resize(size.width, size.height));
    draw(&mut screen, app)?;
    while let Ok(first) = rx.recv() {
        let mut fx = update(app, first);
        for next in rx.try_iter().take(MAX_BATCH) {
            fx.absorb(update(app, next));
        }
        // A stopped service only costs the whole-log views; the rest goes on.
        for req in fx.log {
            let _ = log_tx.send(req);
        }
        if fx.ops.into_iter().any(|op| op_tx.send(op).is_err()) {
            app.say(model::Level::Error, "the operation worker stopped");
            fx.redraw = true;
        }
        if fx.quit {
            break;
        }
        if let Some(text) = fx.clipboard {
            // Best effort: a terminal that ignores OSC 52 ignores it quietly.
            let _ = terminal::osc52(&text);
        }
        if fx.suspend {
            screen.suspend()?;
            fx.redraw = true;
        }
        if fx.redraw {
            draw(&mut screen, app)?;
        }
    }
    Ok(())
}

/// One frame, inside a synchronized update so the terminal shows it whole.
/// The events service: indexes the whole log (for the line count and the
/// timeline) and answers the events pane's pages and searches.
fn spawn_log_service(
    log: LogService,
    tx: &Sender<Action>,
) -> std::io::Result<Sender<crate::events::service::Request>> {
    let (log_tx, log_rx) = channel();
    let out = tx.clone();
    std::thread::Builder::new()
        .name("claimtop-log".into())
        .spawn(move || {
            lower_priority();
            crate::events::service::serve_history(log.history, log.open, log_rx, move |r| {
                out.send(Action::Log(Box::new(r))).is_ok()
            })
        })?;
    Ok(log_tx)
}

/// Indexing a big log takes seconds of CPU: at nice 10 it never competes
/// with drawing or with the agents whose claims are shown.
fn lower_priority() {
    // SAFETY: plain syscall wrappers with no pointers. On Linux, `gettid`
    // names this thread and PRIO_PROCESS with a thread id renices only it.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
}

fn draw(screen: &mut terminal::Screen, app: &App) -> std::io::Result<()> {
    queue!(screen.term.backend_mut(), BeginSynchronizedUpdate)?;
    screen.term.draw(|f| view::draw(f, app))?;
    queue!(screen.term.backend_mut(), EndSynchronizedUpdate)?;
    use std::io::Write;
    screen.term.backend_mut().flush()
}
