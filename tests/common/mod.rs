//! The helpers every integration test family shares (`tests/<family>/main.rs`
//! pulls this in with `#[path = "../common/mod.rs"] mod common;`): throwaway
//! roots, dead pids, planted records, the CLI binary in a sandboxed `$HOME`,
//! re-executed child roles for the reliability suites, and a fixed world for
//! the dashboard. One copy, so the helpers cannot drift apart between
//! families; not every family uses every helper.
//!
//! Reliability workers must be separate processes, not threads: liveness is
//! decided by pid, so threads of one process would all look alive to each
//! other and stale recovery would never run.
#![allow(dead_code)]

pub mod terminal;
pub mod tmux;

use claimtop::claims::root::RootProblem;
use claimtop::claims::{
    acquire, hazard, hostname, machine_id, AcquireKind, AcquireOpts, AcquireOutcome, ClaimRecord,
    ClaimState, Classifier, Counts, Hazard, LocalIdentity, Root, Status, Sweep, EXPIRED_SUBDIR,
};
use claimtop::dashboard::testing::{update, Action, App, Options};
use claimtop::dashboard::testing::{Input, Update};
use claimtop::events::tail::Line;
use claimtop::store::drive::{DriveOpts, Driver, Want};
use claimtop::store::file::FileStore;
use claimtop::store::mirror::judge::Judge;
use claimtop::store::mirror::Mirror;
use claimtop::store::OriginIx;
use claimtop::store::{Backend, Change, Changes, Claims, Feed, Fenced, ListEnd, ListSink};
use claimtop::store::{MemberListing, StoreError, Words};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use serde_json::{json, Map, Value};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};
use tempfile::TempDir;

mod cli;
mod driving;
mod fixed_world;
mod group;
mod heard;
mod model;
mod roles;
mod roots;

// One namespace, as when this was one file. A family reads only the
// helpers it needs, so a re-export may go unread in one binary, as a helper
// may (dead_code above).
#[allow(unused_imports)]
pub use {cli::*, driving::*, fixed_world::*, group::*, heard::*, model::*, roles::*, roots::*};
