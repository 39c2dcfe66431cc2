//! The events a store's feed brought in one round, and each as a line of
//! the events pane: shared by the collector and the fleet's reader.

use crate::events::tail::Line;
use crate::events::Event;

/// An event of one round, in the order the feed gave it.
pub enum Heard {
    Own(Event),
    /// Mirrored by a publishing host from one of its roots.
    Published {
        host_id: String,
        root_id: String,
        event: Event,
    },
}

/// An events-log line for the events pane: the event exactly as stored.
pub fn line_of(event: &Event) -> Line {
    Line {
        text: event.value().to_string(),
        // Where a store keeps revisions, the line's mark in its history:
        // the whole-log views find a followed line by it.
        offset: event.revision().unwrap_or(0),
        truncated: false,
        claim: None,
    }
}
