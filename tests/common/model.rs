//! The dashboard's model at a fixed clock: the operator, a probe, the app's
//! options, and the collector that drives a root's store into it.

use super::*;

/// 2027-01-15T08:00:00Z, on a minute boundary.
pub const NOW: i64 = 1_800_000_000_000;

pub const MIN: i64 = 60_000;

/// A pid that is alive and started long before every claim.
pub const ALIVE: i32 = 100;

/// A pid that does not exist.
pub const DEAD: i32 = 999;

pub const OPERATOR: &str = "operator:op@here";

pub fn me() -> LocalIdentity {
    LocalIdentity {
        machine_id: "m-here:1".into(),
        hostname: "here".into(),
    }
}

pub fn probe(pid: i32) -> Option<i64> {
    match pid {
        ALIVE => Some(NOW - 24 * 60 * MIN),
        _ => None,
    }
}

pub fn opts(root: Root) -> Options {
    Options {
        root,
        more_roots: Vec::new(),
        read_only: false,
        no_color: true,
        demo: false,
        local_time: false,
        opening: Default::default(),
    }
}

/// A model over `root` at [`NOW`], 80×24, colourless, with a fixed operator.
pub fn app_at(root: Root) -> App {
    let mut app = App::new(opts(root), NOW, me(), OPERATOR.into());
    update(&mut app, Action::Resize(80, 24));
    app
}

/// This world's judge: [`me`], and [`probe`]'s processes.
pub fn judge() -> Judge {
    Judge::with(me(), probe)
}

/// What reads a root for the model in these tests: a driver of its
/// mirror, driven by hand (no thread, no clock of its own).
pub type Collector = Driver<'static>;

/// The collector of this world: reads `root` at [`NOW`] with [`probe`].
pub fn collector(root: &Root) -> Collector {
    collector_with(root, probe)
}

/// [`collector`] with another process table.
pub fn collector_with(root: &Root, probe: fn(i32) -> Option<i64>) -> Collector {
    driver_of(root, 0, Judge::with(me(), probe))
}

/// [`collector`] of root `i` of several.
pub fn collector_in(root: &Root, i: usize) -> Collector {
    driver_of(root, i, judge())
}

fn driver_of(root: &Root, i: usize, judge: Judge) -> Collector {
    collector_judged(root, i, judge, NOW)
}

/// A collector of root `i` judging with `judge`, its clock at `now`.
pub fn collector_judged(root: &Root, i: usize, judge: Judge, now: i64) -> Collector {
    let store = FileStore::new(root.clone());
    let opts = DriveOpts {
        words: false,
        ..DriveOpts::default()
    };
    Driver::shared(
        std::sync::Arc::new(store),
        OriginIx(i as u16),
        Some(judge),
        Want::Whole { head: 0 },
        opts,
        now,
    )
}
