//! The events pane's own filter (`:events type:claim_force_released
//! -holder:ci key:k1`), as lnav filters a log in and out: each term names
//! a field, a leading `-` keeps the lines it does not match, and every
//! term must hold. Types are the protocol's, read from the one table of
//! event types, so a misspelt one is said rather than matching nothing.

use super::filter::contains_ci;
use crate::events::kind::{typed, EventKind, Typed, EVENT_TYPES};

/// What a term looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Type,
    Holder,
    Key,
}

/// The fields a term may name, as typed.
pub const FIELDS: [&str; 3] = ["type", "holder", "key"];

/// One `field:value` (`-field:value` leaves out what it matches).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    pub field: Field,
    pub value: String,
    pub exclude: bool,
}

/// Every term, as typed and as read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventFilter {
    pub text: String,
    pub terms: Vec<Term>,
}

impl EventFilter {
    /// Read `text`; why not, in words naming what would do.
    pub fn parse(text: &str) -> Result<EventFilter, String> {
        let mut terms = Vec::new();
        for word in text.split_whitespace() {
            let (exclude, rest) = match word.strip_prefix('-') {
                Some(r) => (true, r),
                None => (false, word),
            };
            let Some((name, value)) = rest.split_once(':').filter(|(_, v)| !v.is_empty()) else {
                return Err(format!(
                    "{word:?}: a term is type:, holder: or key: and a value (- leaves it out)"
                ));
            };
            let field = match name.to_ascii_lowercase().as_str() {
                "type" => Field::Type,
                "holder" => Field::Holder,
                "key" => Field::Key,
                other => {
                    return Err(format!(
                        "no field {other:?}: the events filter knows {}",
                        FIELDS.join(", ")
                    ))
                }
            };
            let value = match field {
                Field::Type => type_named(value)?.name().to_string(),
                _ => value.to_string(),
            };
            terms.push(Term {
                field,
                value,
                exclude,
            });
        }
        Ok(EventFilter {
            text: text.split_whitespace().collect::<Vec<_>>().join(" "),
            terms,
        })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Does a line of this type, holder and key pass every term? A line
    /// that is no event has no type, holder or key: only terms that leave
    /// something out let it by.
    pub fn matches(&self, kind: &Typed, holder: Option<&str>, key: Option<&str>) -> bool {
        self.terms.iter().all(|t| {
            let hit = match t.field {
                Field::Type => *kind == typed(&t.value),
                Field::Holder => holder.is_some_and(|h| contains_ci(h, &t.value)),
                Field::Key => key.is_some_and(|k| contains_ci(k, &t.value)),
            };
            hit != t.exclude
        })
    }
}

/// The type `name` names, as the log writes it (`claim_released`) or as
/// the pane shows it (`released`).
fn type_named(name: &str) -> Result<EventKind, String> {
    EventKind::ALL
        .into_iter()
        .find(|k| k.name() == name || k.short() == name)
        .ok_or_else(|| {
            format!(
                "no event type {name:?}: the types are {}",
                EVENT_TYPES.join(", ")
            )
        })
}

/// What Tab offers for `word` in `:events`: the fields, then the types.
pub fn offers(word: &str) -> Vec<String> {
    let sign = if word.starts_with('-') { "-" } else { "" };
    if word.trim_start_matches('-').starts_with("type:") {
        return EVENT_TYPES
            .iter()
            .map(|t| format!("{sign}type:{t}"))
            .collect();
    }
    FIELDS.iter().map(|f| format!("{sign}{f}:")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the pane reads of a claim event line: its type, holder, key.
    struct Row(Typed, String, String);

    fn row(kind: &str, key: &str, holder: &str) -> Row {
        Row(typed(kind), holder.to_string(), key.to_string())
    }

    impl EventFilter {
        fn passes(&self, r: &Row) -> bool {
            self.matches(&r.0, Some(&r.1), Some(&r.2))
        }
    }

    #[test]
    fn terms_filter_in_and_out_and_all_must_hold() {
        let f = EventFilter::parse("type:claim_force_released -holder:ci key:k1").expect("reads");
        assert!(f.passes(&row("claim_force_released", "k1", "op")));
        assert!(!f.passes(&row("claim_force_released", "k1", "ci-7")));
        assert!(!f.passes(&row("claim_released", "k1", "op")));
        assert!(!f.passes(&row("claim_force_released", "k2", "op")));
        // The pane's short word names the type too.
        let short = EventFilter::parse("type:force_released").expect("reads");
        assert_eq!(short.terms[0].value, "claim_force_released");
    }

    #[test]
    fn an_unknown_type_or_field_is_said_with_what_is_known() {
        let e = EventFilter::parse("type:force_relased").expect_err("misspelt");
        assert!(
            e.contains("claim_force_released") && e.contains("claim_acquired"),
            "{e}"
        );
        let e = EventFilter::parse("host:a").expect_err("no such field");
        assert!(e.contains("type, holder, key"), "{e}");
        assert!(EventFilter::parse("ci").is_err());
        assert!(EventFilter::parse("  ").expect("clears").is_empty());
    }
}
