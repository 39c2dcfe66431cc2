//! No subcommand: the dashboard, on the resolved roots (one or several),
//! the demo sandbox, or a store (`--store etcd://...`).

use super::args::{DashboardArgs, Names};
use super::output::{diag, Out, EXIT_ERROR, EXIT_OK};
use crate::claims::Root;
use crate::dashboard::{self, Opening, Options};
use crate::demo::Demo;
use crate::store::OpenCtx;

pub fn dashboard(roots: Vec<Root>, d: &DashboardArgs, opening: &Opening) -> u8 {
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
        let [first, more @ ..] = roots.as_slice() else {
            return super::exit_status(super::no_root(&mut Out::new(false)));
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

/// The dashboard over a store reached by URL (etcd). One store alone: a
/// mix of stores and roots is for `list`, `doctor`, `events` and `metrics`
/// until the dashboard shows every origin in one view.
pub fn dashboard_store(names: Names, ctx: OpenCtx, d: &DashboardArgs, opening: &Opening) -> u8 {
    let ([name], []) = (names.stores.as_slice(), names.roots.as_slice()) else {
        return super::exit_status(Out::new(false).usage_error(
            "the dashboard shows file roots or one --store; several stores, or stores \
             and roots, are covered by list, doctor, events and metrics",
        ));
    };
    // The model's root names where a file store keeps its claims; a store's
    // rows are keyed by their store keys instead, and nothing reads this
    // root (the header shows the store, the ops go through the store).
    let root = Root {
        root: name.text().into(),
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
    let source = dashboard::collector::Source {
        name: name.clone(),
        ctx,
    };
    match dashboard::run_store(options, source) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            diag(&format!("dashboard: {e}"));
            EXIT_ERROR
        }
    }
}
