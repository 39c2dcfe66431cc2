//! The interactive dashboard: a live view of one store, whatever it
//! composes — claims roots, etcd sites, what hosts publish into a site —
//! and its events logs, with acquire / release / renew / force-release
//! going through the same verbs as the CLI, each to its row's origin.
//!
//! Elm-shaped: [`model::App`] is the model, [`action::Action`] the messages,
//! [`update::update`] the transitions, [`view::draw`] the view. Threads
//! (input, each member's lane of the store's driver, the logs, the op
//! worker, signals) only
//! send actions; every read of the disk or the process table happens on
//! those threads, so `update` is pure. The main loop blocks on the channel
//! and redraws only when an update says something visible changed.

pub(crate) mod action;
pub(crate) mod input;
pub(crate) mod keys;
pub(crate) mod keys_doc;
pub(crate) mod model;
pub(crate) mod ops;
mod options;
pub(crate) mod readers;

mod save_file;
pub(crate) mod terminal;
pub mod testing;
pub(crate) mod timeline;
pub(crate) mod update;
pub(crate) mod view;

pub use action::{Action, Op, OpResult, Verb};
pub use model::App;
pub use options::{Opening, Options};
pub use update::{update, Effects};

use crate::claims::{now_ms, LocalIdentity, Root};
use crate::events::file_history::FileHistory;
use crate::events::history::{History, HistoryError, Log};
use crate::events::log_set::LogSet;
use crate::events::service::{Opener, Which};
use crate::store::Store;
use ratatui::crossterm::queue;
use ratatui::crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;

/// Most actions folded into one frame: a burst is applied as a whole, then
/// drawn once.
const MAX_BATCH: usize = 512;

/// Run the dashboard over `store`, whatever it composes (roots, sites,
/// what hosts publish into a site; none: the screen says there is no
/// root), until the operator quits. `opts.root` and `opts.more_roots` are
/// the roots' own places (an events log kept apart), by directory.
pub fn run(mut opts: Options, store: Arc<Store>) -> std::io::Result<()> {
    // Everything the model needs from the environment is read here, at the
    // edge, once.
    opts.no_color |= std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    // What the verbs word (a refusal's times) reads in the screen's zone.
    crate::time::set_local_words(opts.local_time);
    let identity = LocalIdentity::current();
    let operator = operator_id(&identity);
    let (tx, rx) = channel::<Action>();
    let roots: Vec<Root> = std::iter::once(opts.root.clone())
        .chain(opts.more_roots.iter().cloned())
        .collect();
    let now = now_ms();
    let mut app = App::new(opts, now, identity, operator);
    app.over(&store, &roots, now);

    let lanes = readers::spawn(&store, &tx, app.refresh_ms)?;
    terminal::spawn_signals(tx.clone())?;
    sink_warnings(&tx);
    let (worked, shown) = (Arc::clone(&store), app.origins.clone());
    let ops_worker: OpsWorker =
        Box::new(move |op_rx, out| ops::worker(worked, shown, op_rx, out, lanes.inboxes));
    let log = log_service(&store, &app)?;
    let result = ui_loop(&mut app, &tx, rx, ops_worker, log);
    crate::diag::set_warning_sink(None);
    result
}

/// The whole-log views' source over `store`: the first log the model
/// reads (its first root's file, else a member's own log), and how to
/// open another when the views move.
fn log_service(store: &Arc<Store>, app: &App) -> std::io::Result<LogService> {
    if app.events.browse.reads_a_set() || store.members().is_empty() {
        // Nothing named reads no log at all (not one in the working
        // directory).
        return Ok(log_set_service(store, &app.events.browse.set));
    }
    let first_root = app.origins.get(app.log_root).map(Root::events_file);
    let history: Box<dyn History> = match first_root {
        Some(file) => Box::new(FileHistory::new(file, crate::events::service::limits())),
        None => store
            .members()
            .iter()
            .filter(|m| m.named)
            .find_map(|m| m.backend().audit()?.history(&Log::Own).ok())
            .unwrap_or_else(|| {
                Box::new(FileHistory::new(
                    app.root.events_file(),
                    crate::events::service::limits(),
                ))
            }),
    };
    Ok(LogService {
        history,
        open: opener(store),
    })
}

/// How a log the views name is opened ("as of" reads each log it names
/// on a history of its own).
fn opener(store: &Arc<Store>) -> Opener {
    let logs = Arc::clone(store);
    Box::new(move |which| match which {
        Which::Path(_) => crate::events::service::open_file(which),
        Which::Log(log) => logs
            .members()
            .iter()
            .filter(|m| m.root_dir().is_none())
            .filter_map(|m| m.backend().audit())
            .find_map(|a| a.history(log).ok())
            .ok_or_else(|| HistoryError::Store(format!("no member keeps the log {log:?}"))),
    })
}

/// Every log of the store read as one, in the order the model names them
/// (a log that cannot be opened is read as an empty one, and said).
fn log_set_service(store: &Arc<Store>, set: &[model::SetLog]) -> LogService {
    let histories = set
        .iter()
        .map(|s| {
            let at = crate::store::OriginIx(s.origin as u16);
            let opened = store
                .member(at)
                .and_then(|m| m.backend().audit())
                .map(|a| a.history(&s.log));
            match opened {
                Some(Ok(h)) => h,
                Some(Err(e)) => {
                    crate::diag::warn(&format!("events log {}: {e}", s.name));
                    empty_history()
                }
                None => empty_history(),
            }
        })
        .collect();
    LogService {
        history: Box::new(LogSet::new(histories, crate::events::service::limits())),
        open: opener(store),
    }
}

/// A log with nothing in it.
fn empty_history() -> Box<dyn History> {
    Box::new(crate::events::lines_history::LinesHistory::new(Box::new(
        || Ok(Vec::new()),
    )))
}

/// The op worker a dashboard runs: it takes ops and answers with actions.
type OpsWorker = Box<dyn FnOnce(Receiver<Op>, Sender<Action>) + Send>;

/// The core's best-effort warnings go to the status line while the
/// dashboard owns the terminal.
fn sink_warnings(tx: &Sender<Action>) {
    let sink_tx = tx.clone();
    crate::diag::set_warning_sink(Some(Box::new(move |m: &str| {
        let _ = sink_tx.send(Action::Warning(m.to_string()));
    })));
}

/// `operator:<user>@<host>`: the holder id the dashboard acquires as. The
/// user is found exactly as the audit's operator name is (one person, one
/// name, on every face).
pub fn operator_id(me: &crate::claims::LocalIdentity) -> String {
    let user = crate::claims::operator::user_name().unwrap_or_else(|| "unknown".into());
    let host = if me.hostname.is_empty() {
        crate::claims::hostname()
    } else {
        me.hostname.clone()
    };
    format!("operator:{user}@{host}")
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
        if let Some(save) = &fx.save {
            let (level, words) = save_file::carry_out(save);
            app.say(level, words);
            fx.redraw = true;
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
