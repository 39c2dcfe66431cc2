//! The dashboard over a store with no terminal: the live app's wiring
//! (`spawn_readers`, `update`, `view::draw`) drawing 160×48 frames
//! into a `TestBackend`, for the benches that time change → screen. Not
//! every bench uses every part.
#![allow(dead_code)]

use claimtop::claims::{now_ms, LocalIdentity, Root};
use claimtop::dashboard::testing::Input;
use claimtop::dashboard::testing::{draw, update, Action, App, Options};
use claimtop::store::{OpenCtx, Store, StoreName};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub struct Headless {
    pub app: App,
    /// The lanes' inboxes, kept open while the lanes run.
    _inboxes: Vec<std::sync::mpsc::Sender<Input>>,
    rx: Receiver<Action>,
    term: Terminal<TestBackend>,
    /// The store the dashboard reads.
    pub store: std::sync::Arc<Store>,
    pub url: String,
}

impl Headless {
    /// The site `url` names on a connection of its own (a writer's).
    pub fn connect(&self) -> std::sync::Arc<dyn claimtop::store::Backend> {
        let name = StoreName::parse(&self.url).expect("a store URL");
        let store = Store::open(&[name], &[], &OpenCtx::default()).expect("open the store");
        store.one("acquire").expect("one site").shared()
    }
}

impl Headless {
    /// Open the store `url` names and start the readers over it.
    pub fn start(url: &str) -> Headless {
        Headless::over(&[url.to_string()], &[])
    }

    /// Open every store `urls` name and every root of `roots` as one
    /// store (a mix), and start the readers over it.
    pub fn over(urls: &[String], roots: &[Root]) -> Headless {
        let names: Vec<StoreName> = urls
            .iter()
            .map(|u| StoreName::parse(u).expect("a store URL"))
            .collect();
        let store = Store::open(&names, roots, &OpenCtx::default()).expect("open the store");
        let store = std::sync::Arc::new(store);
        let url = urls.first().cloned().unwrap_or_default();
        let url = url.as_str();
        let (tx, rx) = channel();
        let options = Options {
            // Names the store in the model; nothing reads it as a root.
            root: Root {
                root: url.into(),
                events_dir: None,
            },
            more_roots: Vec::new(),
            read_only: false,
            no_color: true,
            demo: false,
            local_time: false,
            opening: Default::default(),
        };
        let mut app = App::new(
            options,
            now_ms(),
            LocalIdentity::current(),
            "operator:bench".into(),
        );
        app.over(&store, roots, app.now);
        update(&mut app, Action::Resize(160, 48));
        let term = Terminal::new(TestBackend::new(160, 48)).expect("test terminal");
        let lanes = claimtop::dashboard::testing::spawn_readers(&store, &tx, app.refresh_ms)
            .expect("start the readers");
        Headless {
            app,
            _inboxes: lanes.inboxes,
            rx,
            term,
            store,
            url: url.to_string(),
        }
    }

    /// Apply what has arrived (waiting up to `wait` for the first), then
    /// draw if anything visible moved: the live loop, minus the terminal.
    /// False when nothing arrived.
    pub fn pump(&mut self, wait: Duration) -> bool {
        let Ok(first) = self.rx.recv_timeout(wait) else {
            return false;
        };
        let mut dirty = update(&mut self.app, first).redraw;
        for next in self.rx.try_iter().take(512) {
            dirty |= update(&mut self.app, next).redraw;
        }
        if dirty {
            self.draw();
        }
        true
    }

    pub fn draw(&mut self) {
        let app = &self.app;
        self.term.draw(|f| draw(f, app)).expect("draw");
    }

    /// Pump until the first frame with claims, then until `total` claims
    /// are in: how long each took since `t0`.
    pub fn until_listed(&mut self, t0: Instant, total: usize) -> (Duration, Duration) {
        while self.app.claims.live.is_empty() {
            self.pump(Duration::from_secs(30));
        }
        self.draw();
        let first = t0.elapsed();
        while self.app.claims.live.len() < total {
            self.pump(Duration::from_secs(30));
        }
        self.draw();
        (first, t0.elapsed())
    }

    /// Let start-up's stragglers land (the events tail, the first probes),
    /// then pump through a quiet `idle`: the CPU this process spent in it,
    /// and the wall time.
    pub fn idle(&mut self, idle: Duration) -> (Duration, Duration) {
        let settle = Instant::now() + Duration::from_secs(3);
        while Instant::now() < settle {
            self.pump(Duration::from_millis(100));
        }
        let cpu0 = crate::common::self_cpu();
        let t_idle = Instant::now();
        while t_idle.elapsed() < idle {
            self.pump(idle.saturating_sub(t_idle.elapsed()));
        }
        (crate::common::self_cpu() - cpu0, t_idle.elapsed())
    }
}

/// The numbers a measuring child printed on its stdout, in order.
pub fn numbers(out: &std::process::Output) -> Vec<f64> {
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect()
}
