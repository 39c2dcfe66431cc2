//! The judge of the stress runs: rebuild every tenure from the markers the
//! workers and the operator appended, and say whether two of them ever held
//! one key at the same instant.
//!
//! Markers, one per line, times from `CLOCK_MONOTONIC` in ns:
//! - `S key holder round t kind`: acquire returned (the tenure had begun);
//! - `E key holder round t`: at `t` the claim was still the holder's (read
//!   back afterwards and found unchanged), just before its release;
//! - `L key holder round t`: read back after `t` and found gone (lost);
//! - `D key holder round t`: the holder is about to kill itself holding it;
//! - `F key holder round t0`: the operator noted `t0`, then archived that
//!   tenure's record (so it was certainly held up to `t0`, not after);
//! - `R` a renewal, `H` a held-by-other answer, `X …` an error.
//!
//! Every recorded window lies inside the real tenure, so a window is held
//! at each of its instants, both ends included: two windows of one key that
//! share even one nanosecond are two holders at once.

use std::collections::HashMap;

#[derive(Debug, Default)]
pub struct Report {
    pub tenures: usize,
    pub reclaimed: usize,
    pub deaths: usize,
    pub lost_to_operator: usize,
    pub force_released: usize,
    pub renewals: usize,
    pub held_by_other: usize,
    pub errors: usize,
    pub violations: Vec<String>,
}

/// A tenure: key, holder, round.
type Id = (String, String, u64);

/// `F key holder round t`-shaped fields: the tenure and the time.
fn id_and_time(f: &[&str]) -> Option<(Id, u64)> {
    match f {
        [_, key, holder, round, t, ..] => Some((
            (key.to_string(), holder.to_string(), round.parse().ok()?),
            t.parse().ok()?,
        )),
        _ => None,
    }
}

/// Rebuild every tenure from the markers and check them.
pub fn analyse(text: &str) -> Report {
    #[derive(Default, Clone)]
    struct T {
        start: u64,
        end: Option<u64>,
        lost: bool,
        forced_at: Option<u64>,
    }
    let mut r = Report::default();
    let mut ts: HashMap<Id, T> = HashMap::new();
    let mut forced: Vec<(Id, u64)> = Vec::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let parsed = id_and_time(&f);
        match (f[0], parsed) {
            ("S", Some((id, t))) => {
                r.tenures += 1;
                if f.get(5) == Some(&"reclaimed") {
                    r.reclaimed += 1;
                }
                let prev = ts.insert(
                    id,
                    T {
                        start: t,
                        ..T::default()
                    },
                );
                if prev.is_some() {
                    r.violations.push(format!("tenure recorded twice: {line}"));
                }
            }
            ("E" | "L" | "D", Some((id, t))) => match ts.get_mut(&id) {
                Some(x) if x.end.is_none() => {
                    x.end = Some(t);
                    x.lost = f[0] == "L";
                    if f[0] == "D" {
                        r.deaths += 1;
                    }
                }
                Some(_) => r.violations.push(format!("tenure ended twice: {line}")),
                None => r.violations.push(format!("end without start: {line}")),
            },
            ("F", Some((id, t))) => forced.push((id, t)),
            ("R", _) => r.renewals += 1,
            ("H", _) => r.held_by_other += 1,
            ("X", _) => {
                r.errors += 1;
                r.violations.push(format!("error: {line}"));
            }
            _ => r.violations.push(format!("unreadable marker: {line:?}")),
        }
    }
    r.force_released = forced.len();
    for (id, t0) in forced {
        match ts.get_mut(&id) {
            Some(x) => x.forced_at = Some(t0),
            None => r
                .violations
                .push(format!("force-released an unknown tenure {id:?}")),
        }
    }
    let mut by_key: HashMap<String, Vec<(u64, u64, String)>> = HashMap::new();
    for ((key, holder, round), x) in &ts {
        if x.lost {
            if x.forced_at.is_none() {
                r.violations.push(format!(
                    "{holder} lost {key} (round {round}) without any force-release"
                ));
                continue;
            }
            r.lost_to_operator += 1;
        }
        // The operator's archive happened after it noted t0, so a tenure it
        // ended is certainly held only up to t0. If t0 came before the start
        // marker (the archive may have hit while acquire was still emitting
        // its event), no instant of the recorded window is certainly held.
        if x.forced_at.is_some_and(|f| f < x.start) {
            continue;
        }
        let end = match (x.end, x.forced_at) {
            (Some(e), Some(f)) => e.min(f),
            (Some(e), None) => e,
            (None, Some(f)) => f,
            (None, None) => {
                r.violations
                    .push(format!("{holder} round {round} on {key} never ended"));
                continue;
            }
        };
        by_key
            .entry(key.clone())
            .or_default()
            .push((x.start, end, format!("{holder}#{round}")));
    }
    // Sweep each key's windows in start order, against the latest end seen
    // so far (not the previous window's: one long tenure can cover several
    // later ones).
    for (key, mut v) in by_key {
        v.sort();
        let mut max_end: Option<(u64, String)> = None;
        for (start, end, who) in v {
            if let Some((me, prev)) = &max_end {
                if start <= *me {
                    r.violations.push(format!(
                        "{key}: {who} started {} ns before {prev} ended",
                        me - start
                    ));
                }
            }
            if max_end.as_ref().is_none_or(|(me, _)| end > *me) {
                max_end = Some((end, who));
            }
        }
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The markers of a list of lines, in the order given.
    fn judge(lines: &[&str]) -> Report {
        analyse(&lines.join("\n"))
    }

    fn overlaps(r: &Report) -> Vec<&String> {
        r.violations
            .iter()
            .filter(|v| v.contains("ns before"))
            .collect()
    }

    #[test]
    fn two_holders_whose_windows_on_one_key_overlap_are_a_violation() {
        let r = judge(&[
            "S k a 0 100 fresh",
            "S k b 0 150 fresh",
            "E k a 0 200",
            "E k b 0 300",
        ]);
        assert_eq!(overlaps(&r).len(), 1, "{:?}", r.violations);
        assert!(r.violations[0].contains("b#0 started 50 ns before a#0"));
    }

    #[test]
    fn windows_that_share_a_single_nanosecond_are_an_overlap() {
        let r = judge(&[
            "S k a 0 100 fresh",
            "E k a 0 200",
            "S k b 0 200 fresh",
            "E k b 0 300",
        ]);
        assert_eq!(overlaps(&r).len(), 1, "{:?}", r.violations);
    }

    #[test]
    fn windows_one_nanosecond_apart_are_clean() {
        let r = judge(&[
            "S k a 0 100 fresh",
            "E k a 0 199",
            "S k b 0 200 fresh",
            "E k b 0 300",
            "S k a 1 301 fresh",
            "E k a 1 400",
        ]);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.tenures, 3);
    }

    #[test]
    fn the_same_instants_on_different_keys_are_clean() {
        let r = judge(&[
            "S k1 a 0 100 fresh",
            "S k2 b 0 100 fresh",
            "E k1 a 0 200",
            "E k2 b 0 200",
        ]);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
    }

    #[test]
    fn a_short_tenure_nested_after_an_earlier_one_inside_a_long_one_is_caught() {
        // a covers everything; b ends before c starts. Compared with the
        // previous window's end only, c would look clean.
        let r = judge(&[
            "S k a 0 100 fresh",
            "E k a 0 1000",
            "S k b 0 200 fresh",
            "E k b 0 300",
            "S k c 0 400 fresh",
            "E k c 0 450",
        ]);
        let o = overlaps(&r);
        assert_eq!(o.len(), 2, "{:?}", r.violations);
        assert!(o
            .iter()
            .any(|v| v.contains("c#0 started 600 ns before a#0")));
    }

    #[test]
    fn markers_in_any_order_are_judged_by_their_times() {
        // Many processes append at once: the file is not in time order,
        // only each tenure's own markers are (one process wrote them).
        let mut clean: Vec<String> = Vec::new();
        for i in (0..12u64).rev() {
            clean.push(format!("S k w{i} {i} {} fresh", i * 100));
        }
        for i in [5u64, 0, 11, 3, 8, 1, 10, 6, 2, 9, 4, 7] {
            clean.push(format!("E k w{i} {i} {}", i * 100 + 50));
        }
        let lines: Vec<&str> = clean.iter().map(String::as_str).collect();
        let r = judge(&lines);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.tenures, 12);
        // The same, with one window stretched over its successor's start.
        let mut bad = clean.clone();
        bad[13] = "E k w0 0 150".into();
        let lines: Vec<&str> = bad.iter().map(String::as_str).collect();
        let r = judge(&lines);
        assert_eq!(overlaps(&r).len(), 1, "{:?}", r.violations);
        assert!(r.violations[0].contains("w1#1 started 50 ns before w0#0"));
    }

    #[test]
    fn a_reclaim_after_the_holders_death_is_clean_and_one_before_it_is_not() {
        let clean = judge(&[
            "S k a 0 100 fresh",
            "D k a 0 200",
            "S k b 0 300 reclaimed",
            "E k b 0 400",
        ]);
        assert!(clean.violations.is_empty(), "{:?}", clean.violations);
        assert_eq!((clean.deaths, clean.reclaimed), (1, 1));
        // The reclaimer started while the dying holder still held it.
        let bad = judge(&[
            "S k a 0 100 fresh",
            "S k b 0 150 reclaimed",
            "D k a 0 200",
            "E k b 0 400",
        ]);
        assert_eq!(overlaps(&bad).len(), 1, "{:?}", bad.violations);
    }

    #[test]
    fn a_holder_that_lost_its_claim_to_the_operator_is_held_only_until_the_operator_acted() {
        // a noticed the loss at 500, but the operator noted 300 before it
        // archived a's record, so b taking the key at 350 is no overlap.
        let clean = judge(&[
            "S k a 0 100 fresh",
            "F k a 0 300",
            "S k b 0 350 fresh",
            "L k a 0 500",
            "E k b 0 600",
        ]);
        assert!(clean.violations.is_empty(), "{:?}", clean.violations);
        assert_eq!((clean.force_released, clean.lost_to_operator), (1, 1));
        // b taking it before the operator even began is two holders.
        let bad = judge(&[
            "S k a 0 100 fresh",
            "S k b 0 250 fresh",
            "F k a 0 300",
            "L k a 0 500",
            "E k b 0 600",
        ]);
        assert_eq!(overlaps(&bad).len(), 1, "{:?}", bad.violations);
        // A force-release that lands after the holder's own end changes
        // nothing: the end still counts.
        let late = judge(&[
            "S k a 0 100 fresh",
            "E k a 0 200",
            "F k a 0 260",
            "S k b 0 250 fresh",
            "E k b 0 400",
        ]);
        assert_eq!(overlaps(&late).len(), 0, "{:?}", late.violations);
        let late_bad = judge(&[
            "S k a 0 100 fresh",
            "E k a 0 300",
            "F k a 0 360",
            "S k b 0 250 fresh",
            "E k b 0 400",
        ]);
        assert_eq!(overlaps(&late_bad).len(), 1, "{:?}", late_bad.violations);
    }

    #[test]
    fn a_force_release_noted_before_the_start_marker_leaves_no_window_to_judge() {
        // The operator archived a's claim between its acquire and its
        // (late) S marker, and b took the key in that gap: a clean run, in
        // which nothing of a's recorded window is certainly held.
        let r = judge(&[
            "F k a 0 40",
            "S k b 0 50 fresh",
            "S k a 0 100 fresh",
            "L k a 0 110",
            "E k b 0 120",
        ]);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(r.lost_to_operator, 1);
        // Noted at the very instant of the start marker, it was held then.
        let r = judge(&[
            "F k a 0 100",
            "S k a 0 100 fresh",
            "S k b 0 100 fresh",
            "L k a 0 500",
            "E k b 0 600",
        ]);
        assert_eq!(overlaps(&r).len(), 1, "{:?}", r.violations);
    }

    #[test]
    fn a_loss_no_operator_caused_is_a_violation() {
        let r = judge(&["S k a 0 100 fresh", "L k a 0 200"]);
        assert_eq!(r.violations.len(), 1, "{:?}", r.violations);
        assert!(r.violations[0].contains("without any force-release"));
    }

    #[test]
    fn broken_bookkeeping_is_a_violation() {
        for (lines, says) in [
            (&["S k a 0 100 fresh"][..], "never ended"),
            (&["E k a 0 100"][..], "end without start"),
            (
                &["S k a 0 100 fresh", "S k a 0 150 fresh", "E k a 0 200"][..],
                "recorded twice",
            ),
            (
                &["S k a 0 100 fresh", "E k a 0 200", "E k a 0 300"][..],
                "ended twice",
            ),
            (&["F k a 0 100"][..], "unknown tenure"),
            (&["S k a 0"][..], "unreadable marker"),
            (&["S k a zero 100 fresh"][..], "unreadable marker"),
            (&["Q what"][..], "unreadable marker"),
            (&["X acquire k boom"][..], "error: X acquire"),
        ] {
            let r = judge(lines);
            assert!(
                r.violations.iter().any(|v| v.contains(says)),
                "{lines:?} should say {says:?}: {:?}",
                r.violations
            );
        }
        let r = judge(&["X acquire k boom"]);
        assert_eq!(r.errors, 1);
    }

    #[test]
    fn counters_count_what_the_markers_say() {
        let r = judge(&["H", "H", "R", "S k a 0 1 reclaimed", "E k a 0 2"]);
        assert!(r.violations.is_empty(), "{:?}", r.violations);
        assert_eq!(
            (r.held_by_other, r.renewals, r.tenures, r.reclaimed),
            (2, 1, 1, 1)
        );
    }
}
