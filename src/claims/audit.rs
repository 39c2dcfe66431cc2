//! The data of claim events, built on the claims side: the events log only
//! carries what it is handed, and never needs to know what a claim is.

use super::ClaimRecord;
use serde_json::{json, Map, Value};

impl ClaimRecord {
    /// The fields every claim event carries. `expires_at` is an explicit `null`
    /// for PID-liveness claims: the EVENT carries null where the LOCKFILE omits
    /// the key (Python's asymmetry, kept for parity).
    pub fn event_fields(&self) -> Map<String, Value> {
        let fields = json!({
            "key": self.key,
            "holder": self.holder,
            "pid": self.pid,
            "host": self.host,
            "acquired_at": self.acquired_at,
            "expires_at": self.expires_at,
        });
        match fields {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }
}

/// The common fields for a key whose file could not be parsed: all null but
/// the key.
pub fn event_fields_unknown(key: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("key".into(), Value::String(key.to_string()));
    for f in ["holder", "pid", "host", "acquired_at", "expires_at"] {
        m.insert(f.into(), Value::Null);
    }
    m
}

/// `claim_force_released`'s data, on every store: the claim's common
/// fields (all null but the key when it could not be read), who did it,
/// the state it was taken in, and where the record went.
pub fn force_released_fields(
    key: &str,
    previous: Option<&ClaimRecord>,
    operator: Option<&str>,
    previous_state: &str,
    archived_to: &str,
) -> Map<String, Value> {
    let mut data = match previous {
        Some(rec) => rec.event_fields(),
        None => event_fields_unknown(key),
    };
    data.insert("operator".into(), operator.map_or(Value::Null, Value::from));
    data.insert("previous_state".into(), Value::from(previous_state));
    data.insert("archived_to".into(), Value::from(archived_to));
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pid_bound_claim_carries_an_explicit_null_expiry_in_its_events() {
        let rec = ClaimRecord {
            schema_version: 1,
            key: "node:x".into(),
            holder: "h".into(),
            acquired_at: 5,
            pid: 42,
            host: "box".into(),
            expires_at: None,
            reason: Some("not an event field".into()),
            harness: None,
            machine_id: None,
            metadata: Default::default(),
        };
        let line = Value::Object(rec.event_fields()).to_string();
        assert_eq!(
            line,
            r#"{"key":"node:x","holder":"h","pid":42,"host":"box","acquired_at":5,"expires_at":null}"#
        );
    }

    #[test]
    fn a_key_whose_file_cannot_be_parsed_has_every_other_field_null() {
        let line = Value::Object(event_fields_unknown("k")).to_string();
        assert_eq!(
            line,
            r#"{"key":"k","holder":null,"pid":null,"host":null,"acquired_at":null,"expires_at":null}"#
        );
    }
}
