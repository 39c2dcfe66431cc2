//! What bounds the cost of reading one lockfile's YAML.
//!
//! The seed reads a lockfile with a bare `serde_yaml_ng::from_str`, so the
//! rule here is: a defensive limit may make a claim *unreadable* (held, as
//! far as anyone acting on it is concerned), never *corrupted* (free for
//! force-release to archive). What each stage costs, and what bounds it:
//!
//! - **Bytes.** [`super::record::MAX_LOCKFILE_BYTES`] caps what is read at
//!   all; libyaml's scan is linear in it, apart from the next point.
//! - **Flow nesting.** libyaml re-checks every open flow level's pending
//!   simple key on each token, so a document nested D deep costs O(bytes x
//!   D): a megabyte of `[` takes it over ten seconds, and neither libyaml
//!   (unsafe-libyaml 0.2.11 has no nesting limit) nor serde_yaml_ng (its
//!   depth limit of 128 applies only after libyaml has produced every
//!   event) stops it first. A lexical pre-scan refuses flow nesting past
//!   [`MAX_FLOW_DEPTH`], which is as deep as the seed itself can read
//!   metadata (its recursion limit of 128 counts the record and the metadata
//!   mapping), so nothing the seed reads in metadata is refused by it.
//! - **Aliases.** serde_yaml_ng replays an anchored node for each alias and
//!   bounds the number of *replays* by 100 x the document's events, not what
//!   they expand to: one node of 100k items aliased 100k times (a 1 MiB file)
//!   would build ten billion values. Aliases are only ever followed inside
//!   `metadata` (unknown fields are skipped without following them, known
//!   string fields refuse a collection), so `metadata` is built under
//!   [`EXPANSION_BUDGET`]: each value built costs [`NODE_UNITS`] plus the
//!   bytes of its text, and running out stops the parse. A file without
//!   aliases cannot reach the budget (at most two nodes per three bytes), so
//!   only an expansion can, and its cost - time and memory alike - is bounded
//!   by the budget plus one scalar.
//!
//! Python's `safe_dump` writes `&id001` / `*id001` whenever one object is
//! referenced twice; such records expand by a small factor and read as the
//! seed reads them.

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::cell::Cell;
use std::fmt;

pub use super::yaml_scan::MAX_FLOW_DEPTH;
/// Units one value of `metadata` costs besides its text: roughly the bytes a
/// `serde_json::Value` and its slot in a Vec or map take.
pub const NODE_UNITS: u64 = 32;
/// Units `metadata` may expand to (about its size in memory, in bytes).
/// A 1 MiB file without aliases spends at most ~23 MiB of it.
pub const EXPANSION_BUDGET: u64 = 64 << 20;

thread_local! {
    /// Units left for the parse running on this thread; None = unbounded
    /// (a record deserialized from anywhere but [`with_budget`], e.g. JSON).
    static LEFT: Cell<Option<u64>> = const { Cell::new(None) };
    static RAN_OUT: Cell<bool> = const { Cell::new(false) };
}

/// Run `parse` with `units` of expansion budget; also says whether the
/// budget ran out (which makes the parse's error a cost refusal, not a
/// verdict on the text).
pub fn with_budget<T>(units: u64, parse: impl FnOnce() -> T) -> (T, bool) {
    let outer = LEFT.with(|l| l.replace(Some(units)));
    let outer_ran_out = RAN_OUT.with(|r| r.replace(false));
    let out = parse();
    let ran_out = RAN_OUT.with(|r| r.replace(outer_ran_out));
    LEFT.with(|l| l.set(outer));
    (out, ran_out)
}

fn spend<E: de::Error>(units: u64) -> Result<(), E> {
    LEFT.with(|l| match l.get() {
        None => Ok(()),
        Some(left) if left >= units => {
            l.set(Some(left - units));
            Ok(())
        }
        Some(_) => {
            RAN_OUT.with(|r| r.set(true));
            Err(E::custom(format!(
                "metadata expands past {EXPANSION_BUDGET} units (aliases); refusing to build it"
            )))
        }
    })
}

/// `deserialize_with` for `metadata`: exactly `Map<String, Value>`'s own
/// Deserialize (null reads as empty), with every value paid for.
pub fn metadata<'de, D: Deserializer<'de>>(d: D) -> Result<Map<String, Value>, D::Error> {
    struct MapVisitor;
    impl<'de> Visitor<'de> for MapVisitor {
        type Value = Map<String, Value>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map")
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Map::new())
        }
        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
            entries(map)
        }
    }
    d.deserialize_map(MapVisitor)
}

fn entries<'de, A: MapAccess<'de>>(mut map: A) -> Result<Map<String, Value>, A::Error> {
    let mut out = Map::new();
    while let Some(key) = map.next_key::<String>()? {
        spend(NODE_UNITS + key.len() as u64)?;
        let value = map.next_value_seed(Paid)?;
        out.insert(key, value);
    }
    Ok(out)
}

/// One `serde_json::Value`, built as its own Deserialize builds it, each
/// node paid for before the next is read.
struct Paid;

impl<'de> DeserializeSeed<'de> for Paid {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(PaidVisitor)
    }
}

struct PaidVisitor;

impl<'de> Visitor<'de> for PaidVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        Ok(Value::Number(v.into()))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        use serde::Deserialize;
        Number::deserialize(de::value::I128Deserializer::new(v)).map(Value::Number)
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        use serde::Deserialize;
        Number::deserialize(de::value::U128Deserializer::new(v)).map(Value::Number)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        spend(NODE_UNITS + v.len() as u64)?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        spend(NODE_UNITS + v.len() as u64)?;
        Ok(Value::String(v))
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Paid.deserialize(d)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        spend(NODE_UNITS)?;
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        spend(NODE_UNITS)?;
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(Paid)? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Value, A::Error> {
        spend(NODE_UNITS)?;
        entries(map).map(Value::Object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Plain {
        #[serde(default)]
        metadata: Map<String, Value>,
    }

    #[derive(serde::Deserialize, Debug, PartialEq)]
    struct Budgeted {
        #[serde(default, deserialize_with = "metadata")]
        metadata: Map<String, Value>,
    }

    type Metadata = Option<Map<String, Value>>;

    fn both(text: &str) -> (Metadata, Metadata) {
        let plain = serde_yaml_ng::from_str::<Plain>(text)
            .ok()
            .map(|p| p.metadata);
        let (paid, _) = with_budget(EXPANSION_BUDGET, || {
            serde_yaml_ng::from_str::<Budgeted>(text)
        });
        (plain, paid.ok().map(|p| p.metadata))
    }

    #[test]
    fn the_paid_builder_reads_every_value_as_serde_json_reads_it() {
        for text in [
            "metadata:\n  a: 1\n  b: -2\n  c: 1.5\n  d: .nan\n  e: ~\n  f: [x, {g: true}]\n",
            "metadata:\n  big: 340282366920938463463374607431768211455\n  neg: -170141183460469231731687303715884105728\n",
            "metadata:\n  a: &id001\n  - x\n  - y\n  b: *id001\n  1: int key\n  a: dup\n",
            "metadata: null\n",
            "metadata: {}\n",
            "metadata: [1]\n",
            "metadata:\n  t: !custom x\n",
            "metadata:\n  k: ''\n  'q': \"ü\\u00e9\"\n",
        ] {
            let (plain, paid) = both(text);
            assert_eq!(plain, paid, "{text:?}");
        }
    }

    #[test]
    fn an_alias_fan_runs_out_of_budget_and_says_so() {
        // 64 values aliased 100k times: 6.4M values, past the budget.
        let mut fan = format!("metadata:\n  a: &x [{}]\n  b: [", "1, ".repeat(64));
        fan.push_str(&"*x, ".repeat(100_000));
        fan.push_str("]\n");
        let (res, ran_out) = with_budget(EXPANSION_BUDGET, || {
            serde_yaml_ng::from_str::<Budgeted>(&fan)
        });
        assert!(res.is_err());
        assert!(ran_out);
        // Outside a budget (and after one) nothing is counted.
        let (res, ran_out) = with_budget(1 << 40, || {
            serde_yaml_ng::from_str::<Budgeted>("metadata: {a: 1}")
        });
        assert!(res.is_ok() && !ran_out);
    }
}
