//! What can go wrong below the seam, in one type every backend answers
//! with: the protocol's refusals ([`ClaimError`]) as they are, a request
//! the composition cannot route ([`StoreError::SeveralOrigins`]), and what
//! a backend says of itself in its own words ([`StoreError::Backend`]).

use crate::claims::ClaimError;
use std::time::Duration;

use super::url::StoreUrlError;

/// What can go wrong below the seam. Protocol refusals stay [`ClaimError`];
/// the rest is about reaching the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error(transparent)]
    Claim(#[from] ClaimError),
    #[error(transparent)]
    Url(#[from] StoreUrlError),
    /// A verb on one key was given several origins (roots, stores): which
    /// one the key lives in is the operator's choice, never a guess. A
    /// usage error (exit 2); over roots alone, worded as it always was.
    #[error("{}", several_words(.verb, .names, *.all_roots))]
    SeveralOrigins {
        verb: &'static str,
        names: Vec<String>,
        all_roots: bool,
    },
    /// The store refuses the request as it was made, in its own words (a
    /// lease needs a TTL): fixed by the command line, so a usage error.
    #[error("{0}")]
    Refused(String),
    /// A store this build cannot open, and what to rebuild with.
    #[error(
        "this claimtop was built without {feature} support, which {scheme}:// stores need \
         (rebuild with `--features {feature}`)"
    )]
    NotBuilt {
        scheme: String,
        feature: &'static str,
    },
    /// A backend's own failure, in its words, naming the store.
    #[error("{store}: {detail}")]
    Backend { store: String, detail: String },
    /// No answer within `--timeout`: `what` names who did not answer (the
    /// endpoints), so an operator knows which cluster it was.
    #[error("{what} did not answer within {}: {detail}", crate::claims::human_ms(.after.as_millis() as i64))]
    Unreachable {
        what: String,
        after: Duration,
        detail: String,
    },
    /// The store cannot do what was asked at all (keep a lease on a file
    /// store, repair etcd): the words say what to do instead.
    #[error("{0}")]
    Unsupported(String),
    /// A request to a publishing host could not be carried out: the host
    /// is unknown, offline, did not answer in time, or no longer publishes
    /// the claim. The words name the host.
    #[error("{0}")]
    Host(String),
    /// The feed's store watch cannot go on (the store was dropped).
    #[error("the change feed has ended")]
    FeedClosed,
}

/// The refusal of a verb on one key over several origins: over roots alone
/// the words every version has said (`RootsError::NotOne`); else the same
/// shape, naming the flags that pick one.
fn several_words(verb: &str, names: &[String], all_roots: bool) -> String {
    if all_roots {
        return crate::claims::RootsError::NotOne {
            verb: verb.to_string(),
            count: names.len(),
            list: names.join(", "),
        }
        .to_string();
    }
    format!(
        "{verb} works on exactly one store, but {} were given ({}); pass one --store or one --root",
        names.len(),
        names.join(", ")
    )
}
