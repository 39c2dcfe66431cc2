//! A record's `metadata`: opaque to the protocol, and absent from most
//! records. The map (an insertion-ordered one, 72 bytes even when empty)
//! is kept behind a pointer that is null when there is none: a mirror of
//! 110 000 rows kept 64 bytes a row for maps none of them had.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};
use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::OnceLock;

/// A record's metadata map, boxed only when it holds something. Reads as
/// the map itself (`Deref`); a write makes room for it.
#[derive(Clone, Default)]
pub struct Metadata(Option<Box<Map<String, Value>>>);

impl Metadata {
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|m| m.is_empty())
    }

    /// The map, taken out (empty when there was none).
    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|m| *m).unwrap_or_default()
    }
}

impl From<Map<String, Value>> for Metadata {
    fn from(m: Map<String, Value>) -> Metadata {
        Metadata((!m.is_empty()).then(|| Box::new(m)))
    }
}

impl Deref for Metadata {
    type Target = Map<String, Value>;
    fn deref(&self) -> &Map<String, Value> {
        static EMPTY: OnceLock<Map<String, Value>> = OnceLock::new();
        self.0
            .as_deref()
            .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
    }
}

impl DerefMut for Metadata {
    fn deref_mut(&mut self) -> &mut Map<String, Value> {
        self.0.get_or_insert_with(Default::default)
    }
}

/// Equal as maps: none and an empty one are the same metadata.
impl PartialEq for Metadata {
    fn eq(&self, other: &Metadata) -> bool {
        **self == **other
    }
}

impl PartialEq<Map<String, Value>> for Metadata {
    fn eq(&self, other: &Map<String, Value>) -> bool {
        **self == *other
    }
}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn none_costs_a_pointer_and_reads_as_an_empty_map() {
        assert_eq!(std::mem::size_of::<Metadata>(), 8);
        let m = Metadata::default();
        assert!(m.is_empty());
        assert_eq!(m.len(), 0);
        assert_eq!(serde_json::to_string(&m).unwrap(), "{}");
        assert_eq!(m, Metadata::from(Map::new()));
        assert!(Metadata::from(Map::new()).0.is_none());
    }

    #[test]
    fn a_write_makes_room_and_keeps_order() {
        let mut m = Metadata::default();
        m.insert("z".into(), json!(1));
        m.insert("a".into(), json!("x"));
        assert!(!m.is_empty());
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"z":1,"a":"x"}"#);
        assert_ne!(m, Metadata::default());
        assert_eq!(m.clone().into_map().len(), 2);
    }
}
