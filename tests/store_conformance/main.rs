//! The store conformance suite: one set of cases, each a behaviour every
//! store must show, run over every kind of store — a file root, several
//! roots, the in-memory store (`memory.rs`, written in this one file as a
//! new backend would be), and with the `etcd` feature an etcd site and a
//! root mixed with one. A store that passes it works in every face.
//!
//! Each case takes a [`under_test::StoreUnderTest`]; a case that needs
//! what a store lacks says so on stderr, by name, and returns.

#[cfg(feature = "etcd")]
#[path = "../etcd_common/mod.rs"]
mod etcd_common;

mod cases;
mod memory;
mod under_test;

/// Every case over every store, one `#[test]` each.
macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod file {
            $( #[test] fn $case() { crate::cases::$case(&crate::under_test::File::one()) } )*
        }
        mod roots {
            $( #[test] fn $case() { crate::cases::$case(&crate::under_test::Roots::new(2)) } )*
        }
        mod in_memory {
            $( #[test] fn $case() { crate::cases::$case(&crate::memory::Memory::new()) } )*
        }
        #[cfg(feature = "etcd")]
        mod etcd {
            $( #[test] fn $case() {
                if let Some(u) = crate::under_test::Etcd::new() { crate::cases::$case(&u) }
            } )*
        }
        #[cfg(feature = "etcd")]
        mod mixed {
            $( #[test] fn $case() {
                if let Some(u) = crate::under_test::Mixed::new() { crate::cases::$case(&u) }
            } )*
        }
    };
}

conformance!(
    // verbs
    acquire_takes_a_free_key_and_exits_0,
    acquire_of_a_held_key_exits_3_naming_the_holder,
    reacquire_by_the_holder_is_idempotent,
    release_by_another_holder_is_not_held_and_writes_nothing,
    release_of_an_absent_key_exits_0,
    renew_extends_only_the_holders_claim,
    force_release_refuses_a_live_claim_without_allow_live,
    force_release_refuses_when_the_expected_holder_changed,
    a_fenced_release_never_ends_a_newer_tenure,
    a_record_the_reader_would_refuse_is_never_written,
    // several origins
    a_one_key_verb_over_several_origins_exits_2_naming_each,
    every_item_and_hazard_names_its_origin_where_several_are_named,
    every_event_names_its_origin_where_several_are_named,
    // listing
    list_is_sorted_by_key_and_counts_every_state,
    a_head_is_the_first_keys_in_order,
    a_corrupted_value_is_corrupted_and_a_hazard_with_its_location,
    an_unreadable_value_is_held_not_free,
    list_json_streamed_is_the_document_the_whole_listing_writes,
    // feed
    a_peer_acquire_is_named_by_the_feed,
    nothing_written_between_a_listing_and_its_feed_is_lost,
    a_lost_cursor_resyncs_with_a_reason,
    watch_key_wakes_when_its_key_changes,
    // log
    tail_then_follow_brings_no_line_twice_and_misses_none,
    a_follow_from_where_a_range_read_ended_brings_what_came_after_and_nothing_read,
    events_follow_prints_each_new_event_once_naming_its_origin_where_several,
    // history
    history_pages_from_its_start_its_end_and_a_mark,
    history_search_finds_older_and_newer,
    count_matches_counts_every_match_and_goes_on_where_it_stopped,
    a_range_read_visits_the_window_whole_in_order_and_an_entry_by_its_mark,
    // hazards
    a_record_naming_another_key_is_a_key_mismatch_at_its_place,
    list_and_doctor_count_a_corrupted_claim_once_alike,
    // the faces
    the_dashboard_model_counts_what_list_counts,
);
