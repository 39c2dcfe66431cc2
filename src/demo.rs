//! `--demo`: a sandbox root in a temporary directory with simulated workers
//! driving the real library, so every state, hazard and key can be tried.
//!
//! Nothing here touches a lockfile except through the protocol's verbs, with
//! two deliberate exceptions in `fixtures`: the foreign-machine claim and the
//! corrupted file, which no honest local writer could produce.

mod fixtures;
mod workers;

use crate::claims::Root;
use crate::sanitize::sanitize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running demo sandbox. Dropping it stops the workers and removes the
/// sandbox unless it was kept.
pub struct Demo {
    root: Root,
    dir: Option<tempfile::TempDir>,
    keep: bool,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Demo {
    /// Create the sandbox and start the workers.
    ///
    /// The fixtures and each worker's first claim are written before this
    /// returns, so the first frame the dashboard draws already shows every
    /// state; the background threads then keep the view moving.
    pub fn start(keep: bool) -> std::io::Result<Demo> {
        let dir = tempfile::Builder::new()
            .prefix("claimtop-demo-")
            .tempdir()?;
        let root = Root::with_events_here(dir.path());
        std::fs::create_dir_all(root.claims_dir())?;
        // Built before anything can fail, so an early return still stops the
        // threads and removes the sandbox through Drop.
        let mut demo = Demo {
            root,
            dir: Some(dir),
            keep,
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
        };
        fixtures::plant(&demo.root);
        for mut worker in workers::cast(&demo.root) {
            worker.begin();
            let stop = Arc::clone(&demo.stop);
            demo.threads
                .push(spawn(worker.name(), move || worker.run(&stop))?);
        }
        let mut crasher = workers::Crasher::new(&demo.root);
        let stop = Arc::clone(&demo.stop);
        demo.threads
            .push(spawn("crasher", move || crasher.run(&stop))?);
        Ok(demo)
    }

    pub fn root(&self) -> &Root {
        &self.root
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("demo-{name}"))
        .spawn(f)
}

impl Drop for Demo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Join before removing the dir: a worker mid-write into a directory
        // being deleted would only produce noise warnings.
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        if let Some(dir) = self.dir.take() {
            if self.keep {
                let path = dir.keep();
                crate::diag::stderr_line(&format!(
                    "claimtop: demo sandbox kept at {}",
                    sanitize(&path.to_string_lossy())
                ));
            }
            // Otherwise TempDir's own drop removes the sandbox here.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{hazard, sweep, ClaimState};
    use std::time::{Duration, Instant};

    fn events_lines(root: &Root) -> usize {
        std::fs::read_to_string(root.events_file())
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    #[test]
    fn a_started_demo_shows_every_state_and_hazard_and_keeps_emitting_events() {
        let demo = Demo::start(false).unwrap();
        std::thread::sleep(Duration::from_secs(2));
        let s = sweep(demo.root());
        let states: Vec<ClaimState> = s.claims.iter().map(|c| c.state).collect();
        for want in [
            ClaimState::Live,
            ClaimState::Stale,
            ClaimState::Suspect,
            ClaimState::Corrupted,
        ] {
            assert!(states.contains(&want), "no {want} claim in {states:?}");
        }
        let kinds: Vec<&str> = s.hazards.iter().map(|h| h.kind.name()).collect();
        for want in [
            hazard::STALE_MUTEX,
            hazard::FOREIGN_MACHINE,
            hazard::CORRUPTED_CLAIM,
        ] {
            assert!(
                kinds.contains(&want.name),
                "no {want:?} hazard in {kinds:?}"
            );
        }
        // The stream keeps flowing: poll rather than assume a rate.
        let before = events_lines(demo.root());
        assert!(before > 0, "no events were written");
        let deadline = Instant::now() + Duration::from_secs(20);
        while events_lines(demo.root()) <= before && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            events_lines(demo.root()) > before,
            "the event stream stopped"
        );
    }

    #[test]
    fn dropping_the_demo_removes_its_sandbox() {
        let demo = Demo::start(false).unwrap();
        let dir = demo.root().root.clone();
        assert!(dir.join(".fno/claims").is_dir());
        drop(demo);
        assert!(!dir.exists(), "{} survived the drop", dir.display());
    }

    #[test]
    fn a_kept_demo_survives_its_drop() {
        let demo = Demo::start(true).unwrap();
        let dir = demo.root().root.clone();
        drop(demo);
        let survived = dir.join(".fno/claims").is_dir();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(survived, "{} was removed despite keep", dir.display());
    }
}
