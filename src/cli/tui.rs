//! No subcommand: the dashboard, on the resolved root or the demo sandbox.

use super::args::DashboardArgs;
use super::output::{diag, EXIT_ERROR, EXIT_OK};
use crate::claims::Root;
use crate::dashboard::{self, Options};
use crate::demo::Demo;

pub fn dashboard(root: Option<Root>, d: &DashboardArgs) -> u8 {
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
            read_only: d.read_only,
            no_color: d.no_color,
            demo: true,
            local_time: d.local_time,
        });
        // The sandbox (and its workers) go away only after the dashboard
        // has restored the terminal.
        drop(demo);
        run
    } else {
        let Some(root) = root else {
            return super::no_root();
        };
        dashboard::run(Options {
            root,
            read_only: d.read_only,
            no_color: d.no_color,
            demo: false,
            local_time: d.local_time,
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
