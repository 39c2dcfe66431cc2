//! Where the core's warnings go.
//!
//! The protocol is best-effort in places (an audit line that cannot be
//! appended, a mutex that could not be restored) and says so. Printing to
//! stderr from inside the library would scribble over a full-screen dashboard,
//! so warnings go through one replaceable sink: stderr by default, the
//! dashboard's status line while it runs.

use crate::sanitize::{guard, sanitize};
use std::sync::RwLock;

type Sink = Box<dyn Fn(&str) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Route the core's warnings to `sink` (None restores stderr).
pub fn set_warning_sink(sink: Option<Sink>) {
    if let Ok(mut s) = SINK.write() {
        *s = sink;
    }
}

/// Report a best-effort failure. The words may quote a store's or a
/// lockfile's values: sanitized on the way to stderr (the dashboard's
/// status line, the other sink, escapes what it draws).
pub fn warn(msg: &str) {
    match SINK.read() {
        Ok(slot) => match slot.as_ref() {
            Some(sink) => sink(msg),
            None => stderr_line(&format!("claimtop: {}", sanitize(msg))),
        },
        Err(_) => stderr_line(&format!("claimtop: {}", sanitize(msg))),
    }
}

/// One line on stderr, the one door to it: any control left in `text` is
/// escaped ([`guard`]), so an unsanitized value cannot drive the terminal.
/// Never fails: there is nowhere left to report to.
pub fn stderr_line(text: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{}", guard(text));
}
