//! "As of": the claims table as it stood at one instant, rebuilt from the
//! tenures of the log — every key held then, by whom, since when, and how
//! (and when) that tenure ended afterwards.
//!
//! Pure: it reads a [`TenureIndex`] built over a window around the instant
//! (the caller decides how much log to read; the index is bounded by its
//! own limits), so it works the same over a file log, several roots' logs
//! and etcd's events.
//!
//! A window cannot see a tenure that began before it and ended after it.
//! Two things close that gap: what the store holds now (a claim whose
//! record says it was acquired by the instant is held then, whatever the
//! window shows: [`add_held_now`]), and, for what is left, the answer saying
//! it cannot tell ([`complete`]) rather than showing the key free.

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
    /// Where the row comes from: the log around the instant, or the store's
    /// record of a claim still held now.
    pub known_from: KnownFrom,
}

/// What says a key was held at the instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KnownFrom {
    /// A tenure in the log read around the instant.
    #[default]
    Log,
    /// The record of a claim the store still holds, acquired by then.
    Store,
}

impl KnownFrom {
    pub fn word(self) -> &'static str {
        match self {
            KnownFrom::Log => "log",
            KnownFrom::Store => "store",
        }
    }
}

/// A claim the store holds now, as "as of" needs it: its tenure began at
/// `acquired_at` and has not ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldNow {
    pub key: String,
    pub holder: String,
    pub acquired_at: i64,
    /// The root it lives in, named as that root's log is.
    pub root: Option<String>,
}

/// How much of its log a read around an instant saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LogEnds {
    /// It began at the log's first entry: every tenure's start is in it.
    pub from_first: bool,
    /// It went on to the log's last entry: every end after the instant is
    /// in it.
    pub to_last: bool,
}

/// The tenures a history read around an instant, and how much of its log
/// that was.
#[derive(Debug, Clone, Default)]
pub struct Around {
    pub tenures: TenureIndex,
    pub ends: LogEnds,
}

impl Around {
    /// A read that cannot say how much of its log it saw.
    pub fn unknown(tenures: TenureIndex) -> Around {
        Around {
            tenures,
            ends: LogEnds::default(),
        }
    }
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
    mut window: impl FnMut(i64, i64) -> Result<Around, E>,
) -> Result<Around, E> {
    let mut step = 0;
    loop {
        let (from, to) = window_of(at, step).unwrap_or_else(|| window_around(at));
        let read = window(from, to)?;
        step += 1;
        if reaches(&read.tenures, at) || window_of(at, step).is_none() {
            return Ok(read);
        }
    }
}

/// Can what `read` saw say, for every key, whether it was held at `at`?
/// Yes when the read began at the log's first entry (every tenure's start
/// is in it), or when it reached back to the instant and on to the log's
/// last entry with every tenure running after the instant seen from its
/// start: each one that covered the instant has its end in the read, and
/// every end but a stale reclaim's carries its start. What the store still
/// holds is known besides ([`add_held_now`]); a tenure that ended without
/// an end event is the log's loss, not the window's.
pub fn complete(read: &Around, at: i64) -> bool {
    let ix = &read.tenures;
    // Tenures dropped to stay within limits, or events whose names did
    // not fit: the index itself is short.
    if ix.skipped() > 0 || ix.horizon().is_some_and(|h| h >= at) {
        return false;
    }
    if read.ends.from_first {
        return true;
    }
    read.ends.to_last
        && reaches(ix, at)
        // A tenure first mentioned after the instant, its start unknown
        // (ended by a stale reclaim, or a release without its start): it
        // may have covered the instant.
        && !ix
            .keys()
            .any(|(_, list)| list.iter().any(|t| !t.start_seen && t.start > at))
}

/// Add to `rows` every claim of `now` whose record says it was acquired by
/// `at`: its tenure has run since, so it was held then, however long
/// before the window it began. A key the log already shows held by the
/// same holder keeps its row (learning when it began, where the window
/// could not see); one the log shows held by another holder then keeps the
/// log's row (the log speaks of the instant itself).
pub fn add_held_now(rows: &mut Vec<HeldAt>, now: &[HeldNow], at: i64) {
    for n in now.iter().filter(|n| n.acquired_at <= at) {
        match rows.iter_mut().find(|r| r.key == n.key && r.root == n.root) {
            Some(r) => {
                if r.holder == n.holder && !r.start_seen && n.acquired_at <= r.since {
                    r.since = n.acquired_at;
                    r.start_seen = true;
                }
            }
            None => rows.push(HeldAt {
                key: n.key.clone(),
                holder: n.holder.clone(),
                since: n.acquired_at,
                start_seen: true,
                ended: None,
                root: n.root.clone(),
                known_from: KnownFrom::Store,
            }),
        }
    }
    // Stable: the logs' order holds within a key.
    rows.sort_by(|a, b| a.key.cmp(&b.key));
}

/// The table at an instant over every log a store keeps.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Answer {
    pub rows: Vec<HeldAt>,
    /// Every key's state at the instant is known (see [`complete`]).
    pub complete: bool,
    /// The span of the time line every log was read over (epoch ms, from
    /// the earliest to the latest claim event read); None when no log had
    /// an event in what was read.
    pub span: Option<(i64, i64)>,
}

impl Answer {
    /// The answer from each log's read (named by its root where there are
    /// several) and what the store holds now.
    pub fn of(at: i64, reads: &[(Option<String>, Around)], now: &[HeldNow]) -> Answer {
        let per_log = reads
            .iter()
            .map(|(root, read)| (root.clone(), held_at(&read.tenures, at)))
            .collect();
        let mut rows = by_root(per_log);
        add_held_now(&mut rows, now, at);
        let spans: Vec<(i64, i64)> = reads.iter().filter_map(|(_, r)| r.tenures.span()).collect();
        let span = spans
            .iter()
            .copied()
            .reduce(|(a, b), (c, d)| (a.max(c), b.min(d)));
        Answer {
            rows,
            complete: reads.iter().all(|(_, r)| complete(r, at)),
            span,
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
                known_from: KnownFrom::Log,
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
            Ok::<_, ()>(Around::unknown(index(&[acquired("a", "w1", first / 1000)])))
        })
        .unwrap();
        let halves: Vec<i64> = asked.iter().map(|(b, _)| *b).collect();
        assert_eq!(
            halves,
            &SPANS_MS[..3],
            "narrowed until it reached the instant"
        );
        assert!(reaches(&ix.tenures, at));
    }

    fn now(key: &str, holder: &str, acquired_at: i64, root: Option<&str>) -> HeldNow {
        HeldNow {
            key: key.into(),
            holder: holder.into(),
            acquired_at,
            root: root.map(Into::into),
        }
    }

    #[test]
    fn a_claim_held_now_since_before_the_window_is_held_at_the_instant() {
        // The window shows b and c only; "old" was taken 20 h before the
        // instant and is still held.
        let ix = index(&[acquired("b", "w2", 100), acquired("c", "w3", 200)]);
        let at = 150_000;
        let mut rows = held_at(&ix, at);
        let held = [
            now("old", "w0", at - 20 * 3_600_000, None),
            now("b", "w2", 100_000, None),
            now("later", "w9", at + 1, None),
        ];
        add_held_now(&mut rows, &held, at);
        let got: Vec<(&str, &str, KnownFrom)> = rows
            .iter()
            .map(|r| (r.key.as_str(), r.holder.as_str(), r.known_from))
            .collect();
        assert_eq!(
            got,
            [("b", "w2", KnownFrom::Log), ("old", "w0", KnownFrom::Store)],
            "taken after the instant: not then"
        );
        assert_eq!(rows[1].since, at - 20 * 3_600_000);
        assert_eq!(rows[1].ended, None);
    }

    #[test]
    fn the_log_keeps_its_word_on_the_instant_and_learns_a_start_it_could_not_see() {
        // A renewal is all the window saw of w1's tenure; the store's record
        // says when it began. The log says w5 held d then: the record of
        // another holder does not overrule it.
        let mut ix = TenureIndex::new(Limits::default());
        ix.apply_line(&line("claim_renewed", 100, "a", r#""holder":"w1""#));
        ix.apply_line(&acquired("d", "w5", 90));
        let at = 120_000;
        let mut rows = held_at(&ix, at);
        assert!(!rows[0].start_seen);
        add_held_now(
            &mut rows,
            &[now("a", "w1", 10_000, None), now("d", "w6", 50_000, None)],
            at,
        );
        assert_eq!((rows[0].since, rows[0].start_seen), (10_000, true));
        assert_eq!(rows[1].holder, "w5");
        assert_eq!(rows.len(), 2);
        // In another root it is another claim.
        add_held_now(&mut rows, &[now("d", "w6", 50_000, Some("/r2"))], at);
        assert_eq!(rows.len(), 3);
    }

    fn read(lines: &[String], from_first: bool, to_last: bool) -> Around {
        Around {
            tenures: index(lines),
            ends: LogEnds {
                from_first,
                to_last,
            },
        }
    }

    #[test]
    fn an_answer_is_complete_only_where_the_read_can_see_every_tenure_of_the_instant() {
        let lines = [acquired("a", "w1", 100), released("a", "w1", 100, 300)];
        let at = 200_000;
        assert!(
            complete(&read(&lines, true, false), at),
            "from the first line"
        );
        assert!(complete(&read(&lines, false, true), at), "to the last line");
        assert!(!complete(&read(&lines, false, false), at), "neither end");
        // A read that begins after the instant cannot speak of it.
        assert!(!complete(&read(&lines, false, true), 50_000));
        // A stale reclaim after the instant ends a tenure whose start the
        // read never saw: it may have covered the instant.
        let reclaimed = [
            acquired("c", "w9", 100),
            line(
                "claim_stale_reclaimed",
                300,
                "b",
                r#""holder":"w2","acquired_at":300000,"previous_holder":"w0""#,
            ),
        ];
        assert!(!complete(&read(&reclaimed, false, true), at));
        assert!(complete(&read(&reclaimed, false, true), 400_000));
        // Tenures dropped to stay within limits, past the instant.
        let mut small = TenureIndex::new(Limits {
            max_tenures: 4,
            max_names: 100,
        });
        for i in 0..20 {
            small.apply_line(&acquired("k", &format!("w{i}"), 100 + i));
        }
        let dropped = Around {
            tenures: small,
            ends: LogEnds {
                from_first: true,
                to_last: true,
            },
        };
        assert!(!complete(&dropped, 105_000));
    }

    #[test]
    fn the_answer_over_several_logs_spans_what_every_one_was_read_over() {
        let a = read(
            &[acquired("a", "w1", 100), acquired("x", "w1", 500)],
            true,
            true,
        );
        let b = read(
            &[acquired("b", "w2", 200), acquired("y", "w2", 400)],
            false,
            false,
        );
        let answer = Answer::of(
            300_000,
            &[(Some("A".into()), a), (Some("B".into()), b)],
            &[now("z", "w3", 1_000, Some("B"))],
        );
        assert_eq!(answer.span, Some((200_000, 400_000)));
        assert!(!answer.complete, "B was read over neither of its ends");
        let keys: Vec<(&str, Option<&str>)> = answer
            .rows
            .iter()
            .map(|r| (r.key.as_str(), r.root.as_deref()))
            .collect();
        assert_eq!(keys, [("a", Some("A")), ("b", Some("B")), ("z", Some("B"))]);
    }
}
