//! The `/` filter: its terms, how they group, and how they match a row.
//! A `name:TEXT` term searches the column whose spec names that field,
//! in what that column shows; a bare word, the columns a bare word looks in.

use crate::claims::ClaimState;
use crate::columns::{filter_fields, filtered_by, find_text, CellCtx, ColumnId, RowView, COLUMNS};

/// One term of the `/` filter.
#[derive(Debug, Clone, PartialEq)]
pub enum Term {
    State(ClaimState),
    /// `name:TEXT`: part of what the named column shows.
    Field(ColumnId, String),
    /// A bare word: part of any column a bare word looks in (key, holder,
    /// reason).
    Any(String),
}

impl Term {
    /// Terms of one field are alternatives; bare words each stand alone.
    fn group(&self, i: usize) -> usize {
        match self {
            Term::State(_) => usize::MAX,
            Term::Field(c, _) => usize::MAX - 1 - *c as usize,
            Term::Any(_) => i,
        }
    }

    /// The text this term looks for in `col`, if it looks in that column.
    pub fn needle(&self, col: ColumnId) -> Option<&str> {
        match self {
            Term::Field(c, v) if *c == col => Some(v),
            Term::Any(v) if col.spec().filter.is_some_and(|f| f.any) => Some(v),
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
            match (field, filtered_by(field)) {
                ("state", _) => {
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
                (_, Some(column)) => f.terms.push(Term::Field(column, v)),
                (other, None) => {
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

    pub fn matches(&self, ctx: &CellCtx<'_>, row: &RowView<'_>) -> bool {
        self.matches_by(|t| term_matches(t, ctx, row))
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
                filter_fields().collect::<Vec<_>>().join(", ")
            )
        })
    }
}

pub(super) fn term_matches(t: &Term, ctx: &CellCtx<'_>, row: &RowView<'_>) -> bool {
    match t {
        Term::State(want) => *want == row.status.state,
        Term::Field(c, v) => contains_ci(&find_text(*c, ctx, row), v),
        Term::Any(v) => COLUMNS
            .iter()
            .filter(|s| s.filter.is_some_and(|f| f.any))
            .any(|s| contains_ci(&find_text(s.id, ctx, row), v)),
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
