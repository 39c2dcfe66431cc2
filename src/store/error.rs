//! What can go wrong below the seam, in one type every backend answers
//! with: the protocol's refusals ([`ClaimError`]) as they are, a request
//! the composition cannot route ([`StoreError::SeveralOrigins`]), and what
//! a backend says of itself in its own words ([`StoreError::Backend`]).

use crate::claims::ClaimError;
use std::path::PathBuf;
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
        "this claimtop was built without {scheme}: support (rebuild with `--features {feature}`)"
    )]
    NotBuilt {
        scheme: String,
        feature: &'static str,
    },
    /// A backend's own failure, in its words, naming the store.
    #[error("{store}: {detail}")]
    Backend { store: String, detail: String },
    #[error("this claimtop was built without etcd support (rebuild with `--features etcd`)")]
    NoEtcdSupport,
    /// No answer within `--timeout`: the endpoints are named so an operator
    /// knows which cluster did not answer.
    #[error("etcd at {endpoints} did not answer within {}: {detail}", crate::claims::human_ms(.after.as_millis() as i64))]
    Unreachable {
        endpoints: String,
        after: Duration,
        detail: String,
    },
    /// etcd answered with an error (auth, permission, NOSPACE...).
    #[error("etcd at {endpoints}: {detail}")]
    Etcd { endpoints: String, detail: String },
    /// Claims on etcd live only as long as their lease: there is no pid
    /// liveness across machines, so a claim without a TTL would be forever.
    #[error("a claim on etcd needs a TTL (--ttl): its lease is the only thing that ends it if the holder dies")]
    TtlRequired,
    /// A bad connection setting (TLS files, a user without a password...).
    #[error("{0}")]
    Config(String),
    /// Several roots were named where one is needed (a verb on one key).
    #[error(transparent)]
    Roots(#[from] crate::claims::RootsError),
    /// The events log could not be read (not a regular file, permission,
    /// an I/O error), naming it.
    #[error(transparent)]
    Log(#[from] crate::events::tail::TailError),
    /// A file the store needs could not be read (the events log, a TLS
    /// file): which one, and what the system said.
    #[error("cannot read {}: {source}", .path.to_string_lossy())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A watch on the store could not be set up or went on failing
    /// (inotify limits, a directory that cannot be read).
    #[error("cannot watch {what}: {detail}")]
    Watch { what: String, detail: String },
    /// A verb on one key was given several roots: which root the key lives
    /// in is the operator's choice, never a guess.
    #[error("{verb} works on one claims root, and {roots} were given: name one with --root")]
    SeveralRoots { verb: &'static str, roots: String },
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
