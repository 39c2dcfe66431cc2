//! What a face shows over the store: the dashboard's model, fed by its
//! driver over the target member, counts what `list` counts.

use super::{take, Target};
use crate::under_test::StoreUnderTest;
use claimtop::claims::{now_ms, LocalIdentity, Root};
use claimtop::dashboard::testing::{heard, update, Action, App, Input, Options};
use claimtop::store::backend::list_now;
use claimtop::store::drive::{DriveOpts, Driver, Want};
use claimtop::store::mirror::judge::Judge;

pub fn the_dashboard_model_counts_what_list_counts(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    for k in ["a", "b", "c"] {
        take(b, k, "alice");
    }
    u.plant("d", b"{{{ not a claim");
    let now = now_ms();
    let options = Options {
        root: Root::with_events_here(std::env::temp_dir().join("claimtop-conformance-none")),
        more_roots: Vec::new(),
        read_only: true,
        no_color: true,
        demo: false,
        local_time: false,
        opening: Default::default(),
    };
    let mut app = App::new(options, now, LocalIdentity::current(), "ops:test".into());
    update(&mut app, Action::Resize(160, 48));
    let member = t.store.member(u.target()).expect("target");
    let opts = DriveOpts {
        words: false,
        ..DriveOpts::default()
    };
    let whole = Want::Whole { head: 0 };
    let mut driver = Driver::new(member, Some(Judge::local()), whole, opts, now);
    for up in driver.handle(Input::Relist, now).expect("a listing") {
        update(&mut app, heard(up));
    }
    let listed = list_now(b).expect("list");
    let shown = app
        .origins
        .origin(usize::from(u.target().0))
        .map(|o| o.tally.counts)
        .unwrap_or_default();
    assert_eq!(shown, listed.sweep.counts);
    assert_eq!(app.table.rows.len(), listed.sweep.claims.len());
}
