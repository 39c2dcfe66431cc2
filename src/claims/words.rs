//! Each verb outcome worded once. The CLI's text output and the dashboard's
//! status line both say what happened through these, so one fact reads one
//! way on every face.
//!
//! The words carry untrusted text as it stands (keys, holders, hosts,
//! reasons, paths written by any process that can touch the root): every
//! face must pass the whole line through [`crate::sanitize`] before a
//! terminal sees it, as it does with any other text from the root.

use super::{AcquireKind, AcquireOutcome, ForceOutcome, NoRenew, ReleaseOutcome, RenewOutcome};
use crate::time::{human_ms, instant_words};
use std::fmt;

/// `1 claim`, `2 claims`, `0 entries`: a count with its noun agreeing, so
/// no face says "1 claims".
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {}", noun_for(n, noun))
}

/// The noun alone, singular for one and plural otherwise.
pub fn noun_for(n: usize, noun: &str) -> String {
    if n == 1 {
        return noun.to_string();
    }
    match noun.strip_suffix('y') {
        Some(stem) if !stem.ends_with(['a', 'e', 'o', 'u']) => format!("{stem}ies"),
        _ => format!("{noun}s"),
    }
}

impl AcquireKind {
    /// `acquired K`, with how when it was not fresh.
    pub fn describe(&self, key: &str) -> String {
        match self {
            AcquireKind::Fresh => format!("acquired {key}"),
            AcquireKind::Reacquired => format!("acquired {key} (re-acquired by the same holder)"),
            AcquireKind::Reclaimed {
                previous_holder,
                previous_pid,
            } => format!(
                "acquired {key} (reclaimed from stale holder {previous_holder} pid {previous_pid})"
            ),
        }
    }
}

impl AcquireOutcome {
    /// How the claim was taken, or who holds it.
    pub fn describe(&self, key: &str) -> String {
        match self {
            AcquireOutcome::Acquired { kind, .. } => kind.describe(key),
            AcquireOutcome::HeldByOther { holder, pid, host } => {
                format!("{key} is held by {holder} (pid {pid} on {host})")
            }
        }
    }
}

impl ReleaseOutcome {
    pub fn describe(&self, key: &str) -> String {
        match self {
            ReleaseOutcome::Released { held_ms, .. } => {
                format!("released {key} (held {})", human_ms(*held_ms))
            }
            ReleaseOutcome::NotHeld { holder } => {
                format!("{key} is held by {holder}, not by this holder; nothing released")
            }
            ReleaseOutcome::Absent => format!("{key} has no claim; nothing to release"),
            ReleaseOutcome::CorruptedLeft { reason } => format!(
                "{key}: the claim file is corrupted ({reason}); left in place for force-release"
            ),
        }
    }
}

impl RenewOutcome {
    pub fn describe(&self, key: &str) -> String {
        match self {
            RenewOutcome::Renewed { record, .. } => match record.expires_at {
                Some(until) => format!("renewed {key} until {}", instant_words(until, false)),
                None => format!("renewed {key}"),
            },
            RenewOutcome::NotRenewed(why) => format!("{key} not renewed: {why}"),
        }
    }
}

impl fmt::Display for NoRenew {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

impl ForceOutcome {
    pub fn describe(&self, key: &str) -> String {
        match self {
            ForceOutcome::Archived {
                archived_to,
                previous,
                previous_state,
            } => {
                let who = previous
                    .as_ref()
                    .map(|r| format!(", holder {}", r.holder))
                    .unwrap_or_default();
                format!(
                    "force-released {key} (was {previous_state}{who}); archived to {}",
                    archived_to.display()
                )
            }
            ForceOutcome::Refused(why) => format!("force-release of {key} refused: {why}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claims::{ClaimRecord, ClaimState};
    use std::path::PathBuf;

    fn record(expires_at: Option<i64>) -> ClaimRecord {
        ClaimRecord {
            schema_version: 1,
            key: "k".into(),
            holder: "me".into(),
            acquired_at: 0,
            pid: 7,
            host: "box".into(),
            expires_at,
            reason: None,
            harness: None,
            machine_id: None,
            metadata: Default::default(),
        }
    }

    #[test]
    fn releasing_a_free_key_reads_the_same_on_every_face() {
        assert_eq!(
            ReleaseOutcome::Absent.describe("k"),
            "k has no claim; nothing to release"
        );
        assert_eq!(
            ReleaseOutcome::NotHeld {
                holder: "you".into()
            }
            .describe("k"),
            "k is held by you, not by this holder; nothing released"
        );
    }

    #[test]
    fn each_outcome_names_what_happened_and_to_which_key() {
        let acquired = AcquireOutcome::Acquired {
            record: record(None),
            kind: AcquireKind::Reclaimed {
                previous_holder: "old".into(),
                previous_pid: 9,
            },
        };
        assert_eq!(
            acquired.describe("k"),
            "acquired k (reclaimed from stale holder old pid 9)"
        );
        let renewed = RenewOutcome::Renewed {
            record: record(Some(1_800_000_000_000)),
            previous_expires_at: 0,
        };
        assert_eq!(
            renewed.describe("k"),
            "renewed k until 2027-01-15T08:00:00Z"
        );
        assert_eq!(
            RenewOutcome::NotRenewed(NoRenew::PidBound).describe("k"),
            "k not renewed: PID-bound claim has no TTL to extend"
        );
        let forced = ForceOutcome::Archived {
            archived_to: PathBuf::from("/r/.expired/k.1.lock"),
            previous: Some(record(None)),
            previous_state: ClaimState::Stale,
        };
        assert_eq!(
            forced.describe("k"),
            "force-released k (was stale, holder me); archived to /r/.expired/k.1.lock"
        );
    }

    #[test]
    fn a_count_agrees_with_its_noun() {
        assert_eq!(count(1, "claim"), "1 claim");
        assert_eq!(count(0, "claim"), "0 claims");
        assert_eq!(count(2, "host"), "2 hosts");
        assert_eq!(count(1, "entry"), "1 entry");
        assert_eq!(count(3, "entry"), "3 entries");
        assert_eq!(count(2, "key"), "2 keys");
    }
}
