//! The whole-log views over several logs: the events search and the
//! timeline read every log of the store as one, whatever row is selected,
//! and the pane's note names the logs read.

use crate::backend::Backend;
use crate::common::Sleeper;
use crate::screen::Dash;

/// Filter the table to `key` (the only row, so the selected one).
pub fn select(dash: &Dash, key: &str) {
    dash.keys(&["/"]);
    dash.type_text(&format!("key:{key}"));
    dash.keys(&["Enter"]);
    dash.wait_for(&format!("the row of {key} alone"), |s| {
        s.contains("· filter:") && s.contains(key) && s.contains("claims 1/")
    });
}

/// Over two roots, a row of the second selected, `/` in the events pane
/// finds a word only the first root's log holds: the search goes back
/// through the second root's log into the first's.
pub fn a_search_finds_a_word_only_the_other_roots_log_holds(first: Backend, second: Backend) {
    let holder = Sleeper::spawn();
    first.acquire("only-in-first", "pty:f", holder.pid());
    first.must(&["release", "only-in-first", "--holder", "pty:f"], &[0]);
    second.acquire("at-second", "pty:s", holder.pid());
    let mut args = first.store_args();
    args.extend(second.store_args());
    let Some(dash) = Dash::over(second.home(), &args) else {
        return;
    };
    dash.wait_for("the second root's row", |s| s.contains("at-second"));
    select(&dash, "at-second");
    dash.keys(&["Tab", "Tab", "/"]);
    dash.type_text("only-in-first");
    dash.keys(&["Enter"]);
    // An acquire and a release, both in the first root's log.
    let screen = dash.wait_for("the newest match, of two counted", |s| {
        s.contains("match 2 of 2") && !s.contains("searching…")
    });
    assert!(
        screen.contains("2 logs: "),
        "the note names both logs: {screen}"
    );
    dash.keys(&["G"]);
    dash.quit();
}
