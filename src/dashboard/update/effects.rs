//! What an update asks of the world outside the model. `update` returns
//! it and the main loop carries it out, so no request waits in the model
//! for the loop to find.

use crate::dashboard::action::Op;
use crate::events::service::Request;

/// The effects of one or more updates, in the order they were asked.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Effects {
    /// Something visible changed: draw a frame.
    pub redraw: bool,
    /// Mutations for the op worker (acquire, release, renew, force-release,
    /// clean, a request to a publishing host).
    pub ops: Vec<Op>,
    /// Pages, searches and windows for the events service.
    pub log: Vec<Request>,
    /// Text for the terminal's clipboard (OSC 52).
    pub clipboard: Option<String>,
    /// Ctrl-Z: hand the terminal back and stop the process.
    pub suspend: bool,
    /// Leave the dashboard.
    pub quit: bool,
    /// A view to write to a file (`:write`).
    pub save: Option<Save>,
}

/// What `:write` asks the loop to write.
#[derive(Debug, Clone, PartialEq)]
pub struct Save {
    pub path: std::path::PathBuf,
    /// `:write!`: over a file that is there.
    pub replace: bool,
    pub bytes: Vec<u8>,
    /// What it holds, in words (`12 rows`).
    pub what: String,
}

impl Effects {
    /// Fold a later update's effects into these.
    pub fn absorb(&mut self, later: Effects) {
        self.redraw |= later.redraw;
        self.ops.extend(later.ops);
        self.log.extend(later.log);
        if later.clipboard.is_some() {
            self.clipboard = later.clipboard;
        }
        self.suspend |= later.suspend;
        if later.save.is_some() {
            self.save = later.save;
        }
        self.quit |= later.quit;
    }
}
