//! No subcommand: the dashboard over one store, whatever the command line
//! names — roots, stores, both, several of each — or the demo sandbox.

use super::args::{DashboardArgs, Names};
use super::output::{diag, EXIT_ERROR, EXIT_OK};
use crate::claims::Root;
use crate::dashboard::{self, Opening, Options};
use crate::demo::Demo;
use crate::store::{OpenCtx, Store};
use std::sync::Arc;

/// The dashboard over what `names` names, opened with `ctx` (a store that
/// cannot be reached is said as a plain error, before the terminal is
/// taken); with `--demo`, over the sandbox's root alone.
pub fn dashboard(names: Names, ctx: OpenCtx, d: &DashboardArgs, opening: &Opening) -> u8 {
    if d.demo {
        let demo = match Demo::start(d.keep) {
            Ok(demo) => demo,
            Err(e) => {
                diag(&format!("cannot start the demo: {e}"));
                return EXIT_ERROR;
            }
        };
        let names = Names {
            stores: Vec::new(),
            roots: vec![demo.root().clone()],
        };
        let code = run(names, ctx, d, opening, true);
        // The sandbox (and its workers) go away only after the dashboard
        // has restored the terminal.
        drop(demo);
        return code;
    }
    // Nothing named: the dashboard opens on a screen that says how to
    // name a root or a store.
    run(names, ctx, d, opening, false)
}

fn run(names: Names, ctx: OpenCtx, d: &DashboardArgs, opening: &Opening, demo: bool) -> u8 {
    let store = match Store::open(&names.stores, &names.roots, &ctx) {
        Ok(store) => Arc::new(store),
        Err(e) => {
            diag(&format!("dashboard: {e}"));
            return EXIT_ERROR;
        }
    };
    // The roots' own places (an events log kept apart); over stores alone
    // the model's first root only names the first store.
    let root = names.roots.first().cloned().unwrap_or_else(|| Root {
        root: names
            .stores
            .first()
            .map(|s| s.text().into())
            .unwrap_or_default(),
        events_dir: None,
    });
    let options = Options {
        root,
        more_roots: names.roots.iter().skip(1).cloned().collect(),
        read_only: d.read_only,
        no_color: d.no_color,
        demo,
        local_time: d.local_time,
        opening: opening.clone(),
    };
    match dashboard::run(options, store) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            diag(&format!("dashboard: {e}"));
            EXIT_ERROR
        }
    }
}
