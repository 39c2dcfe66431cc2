//! Where the core's warnings go.
//!
//! The protocol is best-effort in places (an audit line that cannot be
//! appended, a mutex that could not be restored) and says so. Printing to
//! stderr from inside the library would scribble over a full-screen dashboard,
//! so warnings go through one replaceable sink: stderr by default, the
//! dashboard's status line while it runs.

use std::sync::RwLock;

type Sink = Box<dyn Fn(&str) + Send + Sync>;

static SINK: RwLock<Option<Sink>> = RwLock::new(None);

/// Route the core's warnings to `sink` (None restores stderr).
pub fn set_warning_sink(sink: Option<Sink>) {
    if let Ok(mut s) = SINK.write() {
        *s = sink;
    }
}

/// Report a best-effort failure.
pub fn warn(msg: &str) {
    match SINK.read() {
        Ok(guard) => match guard.as_ref() {
            Some(sink) => sink(msg),
            None => eprintln!("claimtop: {msg}"),
        },
        Err(_) => eprintln!("claimtop: {msg}"),
    }
}
