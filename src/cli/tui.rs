//! No subcommand: the dashboard, on the resolved roots (one or several),
//! the demo sandbox, or a store (`--store etcd://...`).

use super::args::DashboardArgs;
use super::output::{diag, EXIT_ERROR, EXIT_OK};
use crate::claims::{Root, Roots};
use crate::dashboard::{self, Opening, Options};
use crate::demo::Demo;
use crate::store::{OpenOpts, StoreUrl};

pub fn dashboard(roots: Option<Roots>, d: &DashboardArgs, opening: &Opening) -> u8 {
    let outcome = if d.demo {
        let demo = match Demo::start(d.keep) {
            Ok(demo) => demo,
            Err(e) => {
                diag(&format!("cannot start the demo: {e}"));
                return EXIT_ERROR;
            }
        };
        let run = dashboard::run(Options {
            root: demo.root().clone(),
            more_roots: Vec::new(),
            read_only: d.read_only,
            no_color: d.no_color,
            demo: true,
            local_time: d.local_time,
            opening: opening.clone(),
        });
        // The sandbox (and its workers) go away only after the dashboard
        // has restored the terminal.
        drop(demo);
        run
    } else {
        let Some(roots) = roots else {
            return super::exit_status(super::no_root(&mut super::output::Out::new(false)));
        };
        let [first, more @ ..] = roots.as_slice() else {
            return super::exit_status(super::no_root(&mut super::output::Out::new(false)));
        };
        dashboard::run(Options {
            root: first.clone(),
            more_roots: more.to_vec(),
            read_only: d.read_only,
            no_color: d.no_color,
            demo: false,
            local_time: d.local_time,
            opening: opening.clone(),
        })
    };
    match outcome {
        Ok(()) => EXIT_OK,
        Err(e) => {
            diag(&format!("dashboard: {e}"));
            EXIT_ERROR
        }
    }
}

/// The dashboard over a store with a connection (etcd).
pub fn dashboard_store(url: StoreUrl, opts: OpenOpts, d: &DashboardArgs, opening: &Opening) -> u8 {
    // The model's root names where a file store keeps its claims; a store's
    // rows are keyed by their store keys instead, and nothing reads this
    // root (the header shows the store, the ops go through the store).
    let name = match &url {
        StoreUrl::Etcd(t) => t.url(),
        StoreUrl::File(dir) => dir.to_string_lossy().into_owned(),
    };
    let root = Root {
        root: name.into(),
        events_dir: None,
    };
    let options = Options {
        root,
        more_roots: Vec::new(),
        read_only: d.read_only,
        no_color: d.no_color,
        demo: false,
        local_time: d.local_time,
        opening: opening.clone(),
    };
    match dashboard::run_store(options, dashboard::collector::Source { url, opts }) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            diag(&format!("dashboard: {e}"));
            EXIT_ERROR
        }
    }
}
