//! The claims protocol: one YAML lockfile per key under `<root>/.fno/claims/`.
//!
//! Parity with every other implementation sharing a root is the contract. The
//! wire details (paths, encoding, YAML field order, mutex names, the steal
//! rule, event envelope) live in the submodules next to the reasons they must
//! be exactly so. Nothing in here knows about terminals.

pub mod acquire;
pub mod adopt;
pub mod atomic;
pub mod audit;
pub mod census;
pub mod clean_one;
pub mod dir_listing;
pub mod entry;
pub mod error;
pub mod hazard;
pub mod key;
pub mod liveness;
pub mod loc;
pub mod lockfile_read;
pub mod metadata;
pub mod mutex;
pub mod operator;
pub mod record;
pub mod root;
pub mod roots;
pub mod stamp;
pub mod status;
pub mod sweep;
mod sweep_read;
pub mod verbs;
#[cfg(test)]
mod window_tests;
pub mod words;
pub mod yaml_cost;
mod yaml_quote;
mod yaml_scan;

pub use acquire::{
    acquire, acquire_watched, resolve_harness, AcquireKind, AcquireOpts, AcquireOutcome,
};
pub use adopt::Adopt;
pub use census::{census, entry_hazards, own_hazards, Census, ItemRules, OwnHazards, Tally};
pub use clean_one::{clean_one, CleanOneRefused};
pub use error::ClaimError;
pub use hazard::{CopyAt, HazardAt, HazardSpec};
pub use key::{
    claim_path, claims_dir, claims_root_for, decode_key, encode_key, global_claims_root,
    global_claims_root_from, resolve_root, validate_inputs,
};
pub use liveness::{
    classify, hostname, human_ms, machine_id, process_create_time_ms, Classifier, LocalIdentity,
    Locality, Verdict,
};
pub use loc::Loc;
pub use lockfile_read::{read_claim_file, ReadError};
pub use mutex::recovery_mutex_path;
pub use mutex::{WaitHook, Waiting};
pub use operator::operator_name;
pub use record::{parse_ttl_ms, ClaimRecord, ClaimState, Metadata, ParseError};
pub use root::Root;
pub use roots::{sweep_roots, MultiSweep, Roots, RootsError};
pub use stamp::{Held, Stamp, SETTLED_MS};
pub use status::{Blocker, Status};
pub use sweep::{
    doctor, doctor_fix, entry_behind, entry_hazard, entry_kind, item_hazards, key_of_lockfile,
    patch_item_hazards, root_missing, sweep, sweep_head, sweep_head_with, sweep_held, sweep_with,
    Counts, EntryKind, Fix, Hazard, HazardKind, HeldSweep, Sweep, SweepItem,
};
pub use verbs::{
    force_release, release, release_watched, renew, renew_as, status, ForceOpts, ForceOutcome,
    NoRenew, ReleaseOutcome, RenewOutcome,
};

/// On-disk schema version written and read. Readers refuse anything newer
/// rather than guess at a future writer's semantics.
pub const SCHEMA_VERSION: u32 = 1;
/// Raw key cap, in bytes.
pub const MAX_KEY_LENGTH: usize = 256;
/// Encoded-filename cap: 240 + ".lock" = 245 bytes, under every mainstream
/// filesystem's 255-byte name limit.
pub const MAX_ENCODED_FILENAME_BYTES: usize = 240;
/// TTL bounds in milliseconds.
pub const MIN_TTL_MS: i64 = 60_000;
pub const MAX_TTL_MS: i64 = 86_400_000;

/// `<root>/` + this = the claims directory.
pub const CLAIMS_DIRNAME: &str = ".fno/claims";
/// Archive subdirectory of the claims dir: stale and force-released claims are
/// renamed here, never unlinked, so the forensic trail survives.
pub const EXPIRED_SUBDIR: &str = ".expired";
// What every store writes the same way: the record an acquire makes, the
// `claim_acquired` data, and the operator's force-release guard.
#[cfg(feature = "etcd")]
pub(crate) use acquire::{acquired_data, new_record};
#[cfg(feature = "etcd")]
pub(crate) use verbs::force_refusal;

pub use crate::mutex::RECOVERY_SUFFIX;
pub use crate::time::now_ms;

/// Serialize a path as a string, lossily: a file name that is not UTF-8
/// must not make a whole `list --json` fail.
pub(crate) fn lossy_path<S: serde::Serializer>(
    p: &std::path::Path,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}
