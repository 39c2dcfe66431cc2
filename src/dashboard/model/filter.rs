//! The `/` filter: its terms, how they group, and how they match a claim.

use super::table::Column;
use crate::claims::{ClaimState, Status};

/// One term of the `/` filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    State(ClaimState),
    Holder(String),
    Harness(String),
    Key(String),
    Reason(String),
    /// `root:TEXT`: part of the path of the root the claim lives in (a
    /// root's label is the end of its path, so labels match too).
    Root(String),
    /// `host:TEXT`: part of the name of the host the claim was taken on
    /// (the record's `host`; for a published copy, its writer's host).
    Host(String),
    /// A bare word: substring of key, holder or reason.
    Any(String),
}

/// The fields a `field:value` term can name.
pub const FILTER_FIELDS: [&str; 7] = [
    "state", "holder", "harness", "key", "reason", "root", "host",
];

impl Term {
    /// Terms of one field are alternatives; bare words each stand alone.
    fn group(&self, i: usize) -> usize {
        match self {
            Term::State(_) => usize::MAX,
            Term::Holder(_) => usize::MAX - 1,
            Term::Harness(_) => usize::MAX - 2,
            Term::Key(_) => usize::MAX - 3,
            Term::Reason(_) => usize::MAX - 4,
            Term::Root(_) => usize::MAX - 5,
            Term::Host(_) => usize::MAX - 6,
            Term::Any(_) => i,
        }
    }

    /// The text this term looks for in `col`, if it looks in that column.
    pub fn needle(&self, col: Column) -> Option<&str> {
        match (self, col) {
            (Term::Any(v), Column::Key | Column::Holder | Column::Reason)
            | (Term::Key(v), Column::Key)
            | (Term::Holder(v), Column::Holder)
            | (Term::Harness(v), Column::Harness)
            | (Term::Reason(v), Column::Reason)
            | (Term::Root(v), Column::Root)
            | (Term::Host(v), Column::Host) => Some(v),
            _ => None,
        }
    }
}

/// The `/` filter: terms of one field are alternatives (`state:stale
/// state:corrupted`), different fields and bare words must all match.
/// Case-insensitive for ASCII.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    pub text: String,
    pub terms: Vec<Term>,
    /// A term that can never match, in words (an unknown state).
    pub problem: Option<String>,
    /// `x:` prefixes that are no field, matched as plain text: named when
    /// nothing matches, since a mistyped field is the likely reason.
    pub not_fields: Vec<String>,
}

impl Filter {
    pub fn parse(text: &str) -> Filter {
        let mut f = Filter {
            text: text.to_string(),
            ..Filter::default()
        };
        for w in text.split_whitespace() {
            let lower = w.to_ascii_lowercase();
            let Some((field, v)) = lower.split_once(':') else {
                f.terms.push(Term::Any(lower));
                continue;
            };
            let v = v.to_string();
            match field {
                "state" => {
                    let name = if v == "corrupt" { "corrupted" } else { &v };
                    match ClaimState::parse(name).filter(|s| *s != ClaimState::Free) {
                        Some(st) => f.terms.push(Term::State(st)),
                        None => {
                            f.problem = Some(format!(
                                "unknown state {v:?}: live, suspect, stale, corrupted or unreadable"
                            ))
                        }
                    }
                }
                "holder" => f.terms.push(Term::Holder(v)),
                "harness" => f.terms.push(Term::Harness(v)),
                "key" => f.terms.push(Term::Key(v)),
                "reason" => f.terms.push(Term::Reason(v)),
                "root" => f.terms.push(Term::Root(v)),
                "host" => f.terms.push(Term::Host(v)),
                other => {
                    // Keys themselves hold colons (node:gpu): plain text.
                    if !other.is_empty() && other.bytes().all(|b| b.is_ascii_alphabetic()) {
                        f.not_fields.push(format!("{other}:"));
                    }
                    f.terms.push(Term::Any(lower.clone()));
                }
            }
        }
        f
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty() && self.problem.is_none()
    }

    pub fn matches(&self, s: &Status) -> bool {
        self.matches_by(|t| term_matches(t, s))
    }

    /// The filter's grouping (one field's terms OR, fields AND) over any
    /// subject: `term_matches` says whether one term holds for it.
    pub fn matches_by(&self, term_matches: impl Fn(&Term) -> bool) -> bool {
        if self.problem.is_some() {
            return false;
        }
        // Each group once (at its first term), with no allocation: this runs
        // for every claim on every rebuild.
        let t = &self.terms;
        t.iter().enumerate().all(|(i, first)| {
            let g = first.group(i);
            t[..i].iter().enumerate().any(|(j, e)| e.group(j) == g)
                || t.iter()
                    .enumerate()
                    .filter(|(j, e)| e.group(*j) == g)
                    .any(|(_, e)| term_matches(e))
        })
    }

    /// Why nothing matches, when the filter itself may be the reason.
    pub fn why_nothing(&self) -> Option<String> {
        if let Some(p) = &self.problem {
            return Some(p.clone());
        }
        (!self.not_fields.is_empty()).then(|| {
            format!(
                "{} is not a field ({}), so it was matched as text",
                self.not_fields.join(" "),
                FILTER_FIELDS.join(", ")
            )
        })
    }
}

pub(super) fn term_matches(t: &Term, s: &Status) -> bool {
    let rec = s.record.as_ref();
    match t {
        Term::State(want) => *want == s.state,
        Term::Holder(v) => rec.is_some_and(|r| contains_ci(&r.holder, v)),
        Term::Harness(v) => rec
            .and_then(|r| r.harness.as_deref())
            .is_some_and(|h| contains_ci(h, v)),
        Term::Key(v) => contains_ci(&s.key, v),
        Term::Reason(v) => rec
            .and_then(|r| r.reason.as_deref())
            .is_some_and(|x| contains_ci(x, v)),
        Term::Root(v) => crate::dashboard::roots::root_dir_of(&s.file)
            .is_some_and(|r| contains_ci(&r.to_string_lossy(), v)),
        Term::Host(v) => rec.is_some_and(|r| contains_ci(&r.host, v)),
        Term::Any(v) => {
            contains_ci(&s.key, v)
                || rec.is_some_and(|r| {
                    contains_ci(&r.holder, v)
                        || r.reason.as_deref().is_some_and(|x| contains_ci(x, v))
                })
        }
    }
}

/// Where `needle` (already lower-case) occurs in `hay`, ignoring ASCII
/// case: the byte range of the first match.
pub fn find_ci(hay: &str, needle: &str) -> Option<std::ops::Range<usize>> {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    if n.is_empty() || n.len() > h.len() {
        return None;
    }
    (0..=h.len() - n.len())
        .filter(|i| hay.is_char_boundary(*i) && hay.is_char_boundary(i + n.len()))
        .find(|i| {
            h[*i..i + n.len()]
                .iter()
                .zip(n)
                .all(|(a, b)| a.to_ascii_lowercase() == *b)
        })
        .map(|i| i..i + n.len())
}

/// `needle` (already lower-case) occurs in `hay`, ignoring ASCII case,
/// without allocating a lowered copy of every row.
pub fn contains_ci(hay: &str, needle: &str) -> bool {
    let (h, n) = (hay.as_bytes(), needle.as_bytes());
    n.is_empty()
        || h.windows(n.len())
            .any(|w| w.iter().zip(n).all(|(a, b)| a.to_ascii_lowercase() == *b))
}
