//! "As of": the claims table as it stood at one instant, rebuilt from the
//! tenures of the log — every key held then, by whom, since when, and how
//! (and when) that tenure ended afterwards.
//!
//! Pure: it reads a [`TenureIndex`] built over a window around the instant
//! (the caller decides how much log to read; the index is bounded by its
//! own limits), so it works the same over a file log, several roots' logs
//! and etcd's events.

use super::tenure::{Ending, TenureIndex};

/// How much log either side of the instant is read. Before it: so a tenure
/// running at TIME is seen from its acquire. After it: so each one's end
/// is known (a release carries its acquired_at, so even a tenure whose
/// acquire lies further back is whole once its release is read). Where
/// twelve hours are more than a history reads at once, it reads the part
/// around the instant ([`super::history::History::around`]).
pub const AROUND_MS: i64 = 6 * 3600 * 1000;

/// One key held at the instant asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldAt {
    pub key: String,
    pub holder: String,
    /// When the tenure began (epoch ms); `start_seen` false when that is
    /// only the first time the window's log mentions it.
    pub since: i64,
    pub start_seen: bool,
    /// How the tenure ended after the instant: `None` while the log says it
    /// is still held.
    pub ended: Option<Ended>,
    /// The root whose log said so, where several roots' logs were read
    /// (the same key may be held in two of them); None for one log.
    pub root: Option<String>,
}

/// How and when a tenure that covered the instant ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub at: i64,
    pub how: Ending,
    /// Who ended it: the reclaiming holder or the force-releasing operator.
    pub by: Option<String>,
}

/// The half-widths tried around an instant, widest first. A busy log's
/// wide window is more than the history reads at once (its byte cap keeps
/// the window's end), which would lose the instant itself: a narrower one
/// is asked until what was read reaches back to the instant. A tenure that
/// began before a narrow window shows from its first mention in it.
pub const SPANS_MS: [i64; 5] = [
    AROUND_MS,
    2 * 3600 * 1000,
    30 * 60 * 1000,
    10 * 60 * 1000,
    2 * 60 * 1000,
];

/// The `step`-th window tried around `at` (0: the widest), if any is left.
pub fn window_of(at: i64, step: usize) -> Option<(i64, i64)> {
    let half = *SPANS_MS.get(step)?;
    Some((at.saturating_sub(half), at.saturating_add(half)))
}

/// The window of log that answers for `at` first.
pub fn window_around(at: i64) -> (i64, i64) {
    (at.saturating_sub(AROUND_MS), at.saturating_add(AROUND_MS))
}

/// Did reading `ix` reach back to `at`? (An empty window did: nothing
/// happened around it.)
pub fn reaches(ix: &TenureIndex, at: i64) -> bool {
    ix.span().is_none_or(|(earliest, _)| earliest <= at)
}

/// The tenures around `at`, read through `window` (a history's), narrowed
/// until they reach back to `at`.
pub fn read_around<E>(
    at: i64,
    mut window: impl FnMut(i64, i64) -> Result<TenureIndex, E>,
) -> Result<TenureIndex, E> {
    let mut step = 0;
    loop {
        let (from, to) = window_of(at, step).unwrap_or_else(|| window_around(at));
        let ix = window(from, to)?;
        step += 1;
        if reaches(&ix, at) || window_of(at, step).is_none() {
            return Ok(ix);
        }
    }
}

/// How a tenure that covered the instant stands now, in words: "still
/// held", or how it ended, by whom, and when.
pub fn ending_words(r: &HeldAt, clock: impl Fn(i64) -> String) -> String {
    match &r.ended {
        None => "still held".into(),
        Some(e) => {
            let by =
                e.by.as_deref()
                    .map(|b| format!(" by {b}"))
                    .unwrap_or_default();
            format!("{}{by} at {}", e.how.word(), clock(e.at))
        }
    }
}

/// Every key held at `at` (epoch ms), sorted by key: the tenures with
/// `start <= at < end`. A tenure whose start the log never showed counts
/// only from its first mention, so a key is never said to be held before
/// the log can prove it.
pub fn held_at(ix: &TenureIndex, at: i64) -> Vec<HeldAt> {
    let mut out: Vec<HeldAt> = ix
        .keys()
        .filter_map(|(key, tenures)| {
            // Sorted by start: the last one begun by `at` is the only one
            // that can cover it (a key has one tenure at a time).
            let i = tenures.partition_point(|t| t.start <= at);
            let t = tenures[..i].last()?;
            if t.end <= at {
                return None;
            }
            Some(HeldAt {
                key: key.to_string(),
                holder: ix.holder_name(t.holder).to_string(),
                since: t.start,
                start_seen: t.start_seen,
                ended: (!t.is_held()).then(|| Ended {
                    at: t.end,
                    how: t.ending,
                    by: t.by.map(|b| ix.holder_name(b).to_string()),
                }),
                root: None,
            })
        })
        .collect();
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The keys held in several logs as one table: each row names the root
/// whose log it comes from, by key, then in the order the logs were given
/// (one key held in two roots shows twice, side by side).
pub fn by_root(per_log: Vec<(Option<String>, Vec<HeldAt>)>) -> Vec<HeldAt> {
    let mut rows: Vec<HeldAt> = per_log
        .into_iter()
        .flat_map(|(root, rows)| {
            rows.into_iter().map(move |r| HeldAt {
                root: root.clone(),
                ..r
            })
        })
        .collect();
    // Stable, so the logs' order holds within a key.
    rows.sort_by(|a, b| a.key.cmp(&b.key));
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::tenure::Limits;

    fn line(kind: &str, secs: i64, key: &str, data: &str) -> String {
        let ts = chrono::DateTime::from_timestamp(secs, 0)
            .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        format!(r#"{{"ts":"{ts}","type":"{kind}","source":"t","data":{{"key":"{key}",{data}}}}}"#)
    }

    fn acquired(key: &str, holder: &str, secs: i64) -> String {
        line(
            "claim_acquired",
            secs,
            key,
            &format!(r#""holder":"{holder}","acquired_at":{}"#, secs * 1000),
        )
    }

    fn released(key: &str, holder: &str, from: i64, secs: i64) -> String {
        line(
            "claim_released",
            secs,
            key,
            &format!(
                r#""holder":"{holder}","acquired_at":{},"duration_held_ms":{}"#,
                from * 1000,
                (secs - from) * 1000
            ),
        )
    }

    fn index(lines: &[String]) -> TenureIndex {
        let mut ix = TenureIndex::new(Limits::default());
        for l in lines {
            ix.apply_line(l);
        }
        ix
    }

    /// A log of known tenures: a [10, 20) by w1, a [30, ..) by w2;
    /// b [15, 40) by w3; c [50, 60) by w4.
    fn known() -> TenureIndex {
        index(&[
            acquired("a", "w1", 10),
            acquired("b", "w3", 15),
            released("a", "w1", 10, 20),
            acquired("a", "w2", 30),
            released("b", "w3", 15, 40),
            acquired("c", "w4", 50),
            released("c", "w4", 50, 60),
        ])
    }

    fn keys_at(ix: &TenureIndex, secs: i64) -> Vec<(String, String)> {
        held_at(ix, secs * 1000)
            .into_iter()
            .map(|h| (h.key, h.holder))
            .collect()
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(k, h)| (k.to_string(), h.to_string()))
            .collect()
    }

    #[test]
    fn the_table_at_an_instant_is_the_tenures_that_covered_it() {
        let ix = known();
        assert_eq!(keys_at(&ix, 5), pairs(&[]));
        assert_eq!(keys_at(&ix, 10), pairs(&[("a", "w1")]));
        assert_eq!(keys_at(&ix, 17), pairs(&[("a", "w1"), ("b", "w3")]));
        // A release at 20 ends the tenure at 20: not held at 20.
        assert_eq!(keys_at(&ix, 20), pairs(&[("b", "w3")]));
        assert_eq!(keys_at(&ix, 35), pairs(&[("a", "w2"), ("b", "w3")]));
        assert_eq!(keys_at(&ix, 55), pairs(&[("a", "w2"), ("c", "w4")]));
        assert_eq!(keys_at(&ix, 99), pairs(&[("a", "w2")]));
    }

    #[test]
    fn each_row_says_how_its_tenure_ended_later_or_that_it_is_still_held() {
        let ix = known();
        let rows = held_at(&ix, 17_000);
        assert_eq!(rows[0].since, 10_000);
        assert_eq!(
            rows[0].ended,
            Some(Ended {
                at: 20_000,
                how: Ending::Released,
                by: None
            })
        );
        let later = held_at(&ix, 35_000);
        assert_eq!(later[0].key, "a");
        assert_eq!(later[0].ended, None, "a is still held by w2");
    }

    #[test]
    fn a_window_cut_short_of_the_instant_is_asked_again_narrower() {
        // A busy log: any window wider than 30 minutes is cut to its end,
        // so what is read begins after the instant.
        let at = 1_000_000_000;
        let mut asked = Vec::new();
        let ix = read_around(at, |from, to| {
            asked.push((at - from, to - at));
            let first = if at - from > 30 * 60 * 1000 {
                at + 1_000
            } else {
                from
            };
            Ok::<_, ()>(index(&[acquired("a", "w1", first / 1000)]))
        })
        .unwrap();
        let halves: Vec<i64> = asked.iter().map(|(b, _)| *b).collect();
        assert_eq!(
            halves,
            &SPANS_MS[..3],
            "narrowed until it reached the instant"
        );
        assert!(reaches(&ix, at));
    }
}
