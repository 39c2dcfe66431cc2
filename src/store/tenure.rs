//! What a store that fences its claims (etcd) adds to a verb's outcome:
//! the tenure's fencing revision and its lease, and how they reach JSON
//! (only as added fields).

use serde::Serialize;
use serde_json::Value;

/// What etcd adds to a claim: the fencing token and the lease keeping it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Tenure {
    /// The key's create_revision: strictly increasing across tenures of one
    /// key, so work guarded by the claim can refuse an older holder's writes.
    pub revision: i64,
    pub lease: LeaseInfo,
}

/// A claim's lease as `"lease"` in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(into = "LeaseJson")]
pub struct LeaseInfo {
    pub id: i64,
    /// The TTL the lease was granted with.
    pub ttl_s: i64,
    /// Seconds left before etcd deletes the key unless it is kept alive.
    pub remaining_s: i64,
}

impl LeaseInfo {
    /// The id as etcdctl prints and takes it (`etcdctl lease timetolive`):
    /// lower-case hex, no prefix. The one spelling every text output uses.
    pub fn id_hex(&self) -> String {
        lease_hex(self.id)
    }
}

/// A lease id as etcdctl spells it (`lease %016x granted`, Go's `%016x` of
/// the int64), so it can be pasted into `etcdctl lease timetolive`.
pub fn lease_hex(id: i64) -> String {
    if id < 0 {
        format!("-{:015x}", id.unsigned_abs())
    } else {
        format!("{id:016x}")
    }
}

/// `"lease"` as JSON: the numeric `id` scripts already read, and `id_hex`
/// beside it, since ids run past 2^53 and a reader that parses numbers as
/// doubles (jq 1.6, JavaScript) rounds them to another lease.
#[derive(Serialize)]
struct LeaseJson {
    id: i64,
    id_hex: String,
    ttl_s: i64,
    remaining_s: i64,
}

impl From<LeaseInfo> for LeaseJson {
    fn from(l: LeaseInfo) -> LeaseJson {
        LeaseJson {
            id: l.id,
            id_hex: l.id_hex(),
            ttl_s: l.ttl_s,
            remaining_s: l.remaining_s,
        }
    }
}

impl Tenure {
    /// The fencing token: the tenure's create revision.
    pub fn fence(&self) -> super::Fence {
        super::Fence::new(u64::try_from(self.revision).unwrap_or(0))
    }

    /// Add `"revision"` and `"lease"` to a RECORD object (the additive JSON
    /// of the contract); anything but an object is left as it is.
    pub fn extend_record(tenure: Option<&Tenure>, record: &mut Value) {
        let (Some(t), Some(obj)) = (tenure, record.as_object_mut()) else {
            return;
        };
        obj.insert("revision".into(), Value::from(t.revision));
        obj.insert(
            "lease".into(),
            serde_json::to_value(t.lease).unwrap_or(Value::Null),
        );
    }
}

/// A verb's outcome, plus its tenure when the store has one.
#[derive(Debug, Clone, PartialEq)]
pub struct Fenced<T> {
    pub outcome: T,
    /// `None` on the file store, and on etcd when no claim is held.
    pub tenure: Option<Tenure>,
}

impl<T> Fenced<T> {
    pub fn plain(outcome: T) -> Fenced<T> {
        Fenced {
            outcome,
            tenure: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_object_carries_its_id_in_hex_beside_the_number() {
        let t = Tenure {
            revision: 9,
            lease: LeaseInfo {
                id: 8_327_897_000_573_213_961,
                ttl_s: 60,
                remaining_s: 59,
            },
        };
        let mut record = serde_json::json!({"key": "k"});
        Tenure::extend_record(Some(&t), &mut record);
        assert_eq!(
            record["lease"],
            serde_json::json!({
                "id": 8_327_897_000_573_213_961_i64,
                "id_hex": "7392a232ed351d09",
                "ttl_s": 60,
                "remaining_s": 59,
            })
        );
        // etcdctl pads to 16 digits: a small id is still pasteable.
        assert_eq!(lease_hex(0x1a), "000000000000001a");
    }
}
