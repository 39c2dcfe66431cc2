//! `--demo`: a sandbox root in a temporary directory with simulated workers
//! driving the real library, so every state, hazard and key can be tried.

use crate::claims::Root;

/// A running demo sandbox. Dropping it stops the workers and removes the
/// sandbox unless it was kept.
pub struct Demo {
    root: Root,
}

impl Demo {
    /// Create the sandbox and start the workers.
    pub fn start(keep: bool) -> std::io::Result<Demo> {
        let _ = keep;
        Err(std::io::Error::other("the demo is not built yet"))
    }

    pub fn root(&self) -> &Root {
        &self.root
    }
}
