//! The CLI as scripts see it: the real binary, a temp root, the JSON shapes
//! and exit statuses of the contract.

use crate::common::{cannot_run, claimtop, dead_holder_yaml, BIN};
use claimtop::claims::liveness::hostname;
use claimtop::claims::mutex;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use tempfile::TempDir;

mod doctor;
mod events;
mod exits;
mod force_release;
mod list;
mod orphaned;
mod root_choice;
mod verbs;

/// A claims root plus a separate fake `$HOME`, so nothing ever touches the
/// real one.
struct Sandbox {
    root: TempDir,
    home: TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            root: TempDir::new().expect("root"),
            home: TempDir::new().expect("home"),
        }
    }

    fn root(&self) -> &Path {
        self.root.path()
    }

    fn claims_dir(&self) -> PathBuf {
        self.root().join(".fno/claims")
    }

    fn lockfile(&self, encoded: &str) -> PathBuf {
        self.claims_dir().join(format!("{encoded}.lock"))
    }

    fn events_file(&self) -> PathBuf {
        self.root().join(".fno/events.jsonl")
    }

    /// The binary with a clean environment: no claims root but the sandbox's.
    fn bare(&self) -> Command {
        claimtop(self.home.path())
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut c = self.bare();
        c.arg("--root").arg(self.root()).args(args);
        c.output().expect("run claimtop")
    }

    /// Run with `--json`; the exit status and the one document on stdout.
    fn json(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        (code(&out), one_document(&out))
    }

    fn write_lock(&self, encoded: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(self.claims_dir()).expect("claims dir");
        let p = self.lockfile(encoded);
        std::fs::write(&p, text).expect("write lockfile");
        p
    }

    fn events(&self) -> Vec<Value> {
        std::fs::read_to_string(self.events_file())
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).expect("event line"))
            .collect()
    }

    fn claim_files(&self) -> Vec<String> {
        std::fs::read_dir(self.claims_dir())
            .map(|rd| {
                rd.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().expect("exited, not signalled")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// stdout must be exactly one JSON document.
fn one_document(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON document ({e}): {:?}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            stderr(out)
        )
    })
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect()
}

/// Make `path` look older than every abandonment rule.
fn backdate(path: &Path) {
    mutex::backdate(path, mutex::STALE_MUTEX_STEAL.as_secs() + 60).expect("backdate");
}
