//! The dashboard over both stores — a file root and a real etcd — driven
//! through the same verbs and read back from a real terminal (tmux): each
//! case is one body, run once per store by `both_stores!`, so the two
//! cannot drift apart. The file cases run in the default build; the etcd
//! ones need `--features etcd` (`.ci/run` runs them), which leaves the file
//! cases to the default build rather than running them twice.
//!
//! - `cases`: rows appear and vanish, the header counts every state and
//!   hazard, hazards after `F` and after `x`, and the operator's verbs
//!   from the keys;
//! - `differential`: random steps, after each of which the dashboard,
//!   `list --json` and `doctor --json` agree.

#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "etcd")]
#[path = "../etcd_common/mod.rs"]
mod etcd_common;

mod backend;
mod cases;
mod differential;
mod logs;
#[cfg(feature = "etcd")]
mod mixed;
mod screen;

/// For each named case body `fn(Backend)`, a module of that name with a
/// `file` test and (with the `etcd` feature) an `etcd` test running it.
macro_rules! both_stores {
    ($($module:ident => $body:path),* $(,)?) => {$(
        mod $module {
            #[test]
            #[cfg_attr(
                feature = "etcd",
                ignore = "the default build runs the file cases; this build runs the etcd ones"
            )]
            fn file() {
                $body(crate::backend::Backend::file());
            }

            #[cfg(feature = "etcd")]
            #[test]
            fn etcd() {
                if let Some(b) = crate::backend::Backend::etcd() {
                    $body(b);
                }
            }
        }
    )*};
}

both_stores! {
    rows_appear_and_vanish => crate::cases::rows_appear_and_vanish,
    header_counts_every_state_and_hazard => crate::cases::header_counts_every_state_and_hazard,
    hazards_after_force_release => crate::cases::hazards_after_force_release,
    clean_removes_what_it_offers => crate::cases::clean_removes_what_it_offers,
    operator_verbs_from_the_keys => crate::cases::operator_verbs_from_the_keys,
    the_events_search_counts_through_the_history => crate::cases::the_events_search_counts_through_the_history,
    asof_shows_the_table_that_stood_then => crate::cases::asof_shows_the_table_that_stood_then,
    agree_after_random_steps => crate::differential::dashboard_list_and_doctor_agree_after_every_step,
}

/// Two roots in one dashboard: the events search reads both logs.
#[test]
#[cfg_attr(
    feature = "etcd",
    ignore = "the default build runs the file cases; this build runs the etcd ones"
)]
fn over_two_roots_a_search_finds_a_word_only_the_other_roots_log_holds() {
    crate::logs::a_search_finds_a_word_only_the_other_roots_log_holds(
        crate::backend::Backend::file(),
        crate::backend::Backend::file(),
    );
}

/// A file root and a real etcd in one dashboard: `t` draws the tenures of
/// both logs, and names them (the etcd build only).
#[cfg(feature = "etcd")]
#[test]
fn over_a_root_and_etcd_the_timeline_shows_the_tenures_of_both_logs() {
    if let Some(site) = crate::backend::Backend::etcd() {
        crate::mixed::the_timeline_shows_the_tenures_of_both_logs_and_names_them(
            site,
            crate::backend::Backend::file(),
        );
    }
}

/// A file root and a real etcd in one dashboard (the etcd build only).
#[cfg(feature = "etcd")]
#[test]
fn a_mixed_view_shows_both_routes_each_verb_and_counts_as_list() {
    if let Some(site) = crate::backend::Backend::etcd() {
        crate::mixed::a_mixed_view_shows_both_routes_each_verb_and_counts_as_list(
            site,
            crate::backend::Backend::file(),
        );
    }
}
