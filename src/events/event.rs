//! One audit event: the seed's envelope `{"ts", "type", "source", "data"}`
//! as one JSON object, kept whole so that a line read back is printed and
//! mirrored exactly as it was written (key order and unknown fields kept).
//!
//! Every reader of events shares this type: the tail of the log, the
//! browsing service, the etcd store's `PREFIX/events/`, the fleet's
//! mirrored lines.

use serde_json::{Map, Value};

/// One event of the log: the whole JSON object as written, plus accessors
/// for the envelope `{"ts", "type", "source", "data"}`.
#[derive(Debug, Clone)]
pub struct Event {
    /// Always an object with a string `"type"`.
    value: Value,
    /// The store revision it was written at, where a store has revisions:
    /// its mark in the store's history (see `crate::events::history`).
    revision: Option<u64>,
}

/// Two events are equal when they say the same: where a store keeps them
/// is not part of what they say.
impl PartialEq for Event {
    fn eq(&self, other: &Event) -> bool {
        self.value == other.value
    }
}

impl Event {
    /// The revision a store wrote it at, if it came from one that has them.
    pub fn revision(&self) -> Option<u64> {
        self.revision
    }

    /// The event as written at store revision `rev`.
    pub fn at_revision(mut self, rev: i64) -> Event {
        self.revision = u64::try_from(rev).ok();
        self
    }

    /// The event exactly as it stands in the log (key order preserved).
    pub fn value(&self) -> &Value {
        &self.value
    }

    pub fn into_value(self) -> Value {
        self.value
    }

    /// The event with `name` set beside `type` at its top level (`type`
    /// itself is never replaced, so the result is still an event).
    pub fn with_field(mut self, name: &str, v: Value) -> Event {
        if name != "type" {
            if let Some(o) = self.value.as_object_mut() {
                o.insert(name.to_string(), v);
            }
        }
        self
    }

    fn str_field(&self, name: &str) -> Option<&str> {
        self.value.get(name).and_then(Value::as_str)
    }

    pub fn ts(&self) -> Option<&str> {
        self.str_field("ts")
    }

    /// The `"type"` field.
    pub fn kind(&self) -> &str {
        self.str_field("type").unwrap_or_default()
    }

    pub fn source(&self) -> Option<&str> {
        self.str_field("source")
    }

    /// `data`, when it is an object.
    pub fn data(&self) -> Option<&Map<String, Value>> {
        self.value.get("data").and_then(Value::as_object)
    }

    fn data_str(&self, name: &str) -> Option<&str> {
        self.data()?.get(name)?.as_str()
    }

    /// `data.key`, when it is a string.
    pub fn key(&self) -> Option<&str> {
        self.data_str("key")
    }

    /// `data.holder`, when it is a string.
    pub fn holder(&self) -> Option<&str> {
        self.data_str("holder")
    }
}

/// Parse one log line. Err (a short reason) unless it is a JSON object with a
/// string `"type"`.
pub fn parse_event(line: &str) -> Result<Event, String> {
    let value: Value = serde_json::from_str(line).map_err(|e| format!("invalid JSON: {e}"))?;
    let Some(obj) = value.as_object() else {
        return Err("not a JSON object".to_string());
    };
    match obj.get("type") {
        Some(Value::String(_)) => Ok(Event {
            value,
            revision: None,
        }),
        Some(_) => Err("\"type\" is not a string".to_string()),
        None => Err("no \"type\" field".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_event_explains_why_a_line_is_rejected() {
        assert_eq!(parse_event("[1,2]").unwrap_err(), "not a JSON object");
        assert_eq!(parse_event("{}").unwrap_err(), "no \"type\" field");
        assert_eq!(
            parse_event(r#"{"type":3}"#).unwrap_err(),
            "\"type\" is not a string"
        );
        assert!(parse_event("garbage")
            .unwrap_err()
            .starts_with("invalid JSON"));
    }

    #[test]
    fn parse_event_survives_deep_nesting_and_huge_numbers() {
        let deep = "[".repeat(100_000);
        assert!(parse_event(&deep).is_err());
        assert!(parse_event(r#"{"type":"t","n":1e999999}"#).is_err());
        let ev = parse_event(r#"{"type":"t","m":123456789012345678901234567890}"#).unwrap();
        assert_eq!(ev.kind(), "t");
    }
}
