//! Reliability under load, kills, faults, hostile roots and random input.

#[path = "../common/mod.rs"]
mod common;

mod archive_race;
mod faults;
mod follow_loss;
#[path = "../follow_stress/mod.rs"]
mod follow_stress;
mod hostile;
mod kill;
mod log_faults;
mod planted;
mod proptest;
mod run_handover;
mod stress;
mod tmpfs;
