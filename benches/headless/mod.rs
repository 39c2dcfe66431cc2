//! The dashboard over a store with no terminal: the live app's wiring
//! (`spawn_store_readers`, `update`, `view::draw`) drawing 160×48 frames
//! into a `TestBackend`, for the benches that time change → screen. Not
//! every bench uses every part.
#![allow(dead_code)]

use claimtop::claims::{now_ms, LocalIdentity, Root};
use claimtop::dashboard::testing::StoreView;
use claimtop::dashboard::testing::{draw, update, Action, App, Options};
use claimtop::dashboard::testing::{Input, Source};
use claimtop::store::{OpenCtx, StoreName};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::sync::mpsc::{channel, Receiver};
use std::time::Duration;

pub struct Headless {
    pub app: App,
    /// The collector's inbox, kept open while the collector runs.
    _inbox: std::sync::mpsc::Sender<Input>,
    rx: Receiver<Action>,
    term: Terminal<TestBackend>,
    pub source: Source,
}

impl Headless {
    /// Open the store `url` names and start the collector over it.
    pub fn start(url: &str) -> Headless {
        let source = Source {
            name: StoreName::parse(url).expect("a store URL"),
            ctx: OpenCtx::default(),
        };
        let store = source.open().expect("open the store");
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
        app.over_store(StoreView::new(store.url(), app.now));
        update(&mut app, Action::Resize(160, 48));
        let term = Terminal::new(TestBackend::new(160, 48)).expect("test terminal");
        let inbox = claimtop::dashboard::testing::spawn_store_readers(store, &source, &tx)
            .expect("start the collector");
        Headless {
            app,
            _inbox: inbox,
            rx,
            term,
            source,
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
}
