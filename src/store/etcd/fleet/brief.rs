//! A published copy cut down to what counting and ageing it needs, read
//! without building the rest: `claimtop metrics` reads every copy of the
//! fleet at every scrape, and parsing each whole (and freeing it again)
//! took as long as etcd took to send it.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// A copy as `{"state": ..., "record": {"acquired_at": ...}}`, each member
/// only where the copy has it (the last one, where a name repeats, as a
/// whole parse keeps). Whatever JSON a whole parse takes, this takes too;
/// what is not an object keeps nothing (`null`), as a whole parse of it
/// has no state to count.
pub struct Brief(pub Value);

impl<'de> Deserialize<'de> for Brief {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Brief, D::Error> {
        d.deserialize_any(Keep(&[("state", Inner::Whole), ("record", Inner::Record)]))
            .map(Brief)
    }
}

/// What is kept of a member's value.
#[derive(Clone, Copy)]
enum Inner {
    Whole,
    Record,
}

/// An object's members named here, each kept as its `Inner` says; any
/// other JSON, read past.
#[derive(Clone, Copy)]
struct Keep(&'static [(&'static str, Inner)]);

const RECORD: Keep = Keep(&[("acquired_at", Inner::Whole)]);

impl<'de> Visitor<'de> for Keep {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(Named(at)) = map.next_key_seed(NameIn(self.0))? {
            let Some((name, inner)) = at.map(|i| self.0[i]) else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            let value = match inner {
                Inner::Whole => map.next_value::<Value>()?,
                Inner::Record => map.next_value_seed(RECORD)?,
            };
            out.insert(name.to_string(), value);
        }
        Ok(Value::Object(out))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Null)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_str<E>(self, _: &str) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for Keep {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// A member's name: which of the kept ones it is, if any.
struct Named(Option<usize>);

/// Reads a member's name among the kept ones, without copying it.
#[derive(Clone, Copy)]
struct NameIn(&'static [(&'static str, Inner)]);

impl<'de> serde::de::DeserializeSeed<'de> for NameIn {
    type Value = Named;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Named, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for NameIn {
    type Value = Named;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a member's name")
    }

    fn visit_str<E>(self, name: &str) -> Result<Named, E> {
        Ok(Named(self.0.iter().position(|(kept, _)| *kept == name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// What counting and ageing read of a copy: the same of a brief one as
    /// of the whole.
    fn read(v: &Value) -> (Option<&str>, Option<&Value>) {
        (
            v.get("state").and_then(Value::as_str),
            v.get("record").and_then(|r| r.get("acquired_at")),
        )
    }

    fn brief(text: &str) -> Option<Value> {
        serde_json::from_str::<Brief>(text).ok().map(|b| b.0)
    }

    #[test]
    fn a_copy_keeps_its_state_and_when_it_was_acquired_and_nothing_else() {
        let copy = json!({
            "key": "task/1", "file": "/r/.fno/claims/task%2F1.lock", "state": "live",
            "record": {"schema_version": 1, "key": "task/1", "holder": "h", "acquired_at": 17,
                       "pid": 4, "host": "vm", "metadata": {"a": [1, {"b": "c"}]}},
            "why": "holder pid 4 is alive", "error": null, "hazards": [{"kind": "k"}],
        });
        let got = brief(&copy.to_string()).unwrap();
        assert_eq!(got, json!({"state": "live", "record": {"acquired_at": 17}}));
        assert_eq!(read(&got), read(&copy));
    }

    #[test]
    fn escaped_names_repeated_names_and_values_that_are_no_object_read_as_a_whole_parse_reads_them()
    {
        for text in [
            r#"{"st\u0061te": "suspect", "record": {"acquired\u005fat": 5}}"#,
            r#"{"state": "live", "state": "stale", "record": {"acquired_at": 1}, "record": null}"#,
            r#"{"state": 3, "record": "x"}"#,
            r#"{"record": {"acquired_at": "soon"}}"#,
            r#"[{"state": "live"}]"#,
            r#""live""#,
            "null",
            "12.5",
            "{}",
        ] {
            let whole: Value = serde_json::from_str(text).unwrap();
            let got = brief(text).unwrap();
            assert_eq!(read(&got), read(&whole), "{text}");
        }
        assert!(
            brief(r#"{"state": "live""#).is_none(),
            "not JSON: left out, as a whole parse leaves it"
        );
        assert!(brief(r#"{"state": "live"} x"#).is_none());
    }

    fn json_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            prop_oneof![Just("live"), Just("stale"), Just("x\\"), Just("é")].prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::vec(
                    (
                        prop_oneof![
                            Just("state"),
                            Just("record"),
                            Just("acquired_at"),
                            Just("key")
                        ],
                        inner
                    ),
                    0..5,
                )
                .prop_map(|kv| Value::Object(
                    kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
                )),
            ]
        })
    }

    proptest! {
        #[test]
        fn any_copy_is_counted_and_aged_as_its_whole_parse_would_be(v in json_value()) {
            let text = v.to_string();
            let got = brief(&text).unwrap();
            prop_assert_eq!(read(&got), read(&v));
        }
    }
}
