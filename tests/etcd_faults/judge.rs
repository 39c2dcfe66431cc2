//! The judge: tenures read back from what the commands wrote, every
//! intersection and every command that never ended found, the figures of a
//! run; and the judge's own test on planted lines.

use super::*;

/// A command's interval of believing it holds the key.
#[derive(Debug, Clone)]
pub(crate) struct Tenure {
    pub(crate) tag: String,
    pub(crate) start: i128,
    /// None: the command never wrote its end (killed without a TERM).
    pub(crate) end: Option<i128>,
}

pub(crate) fn tenures(lines: &[Line]) -> Vec<Tenure> {
    let mut by_tag: BTreeMap<&str, Tenure> = BTreeMap::new();
    for l in lines {
        let t = by_tag.entry(&l.tag).or_insert_with(|| Tenure {
            tag: l.tag.clone(),
            start: l.ns,
            end: None,
        });
        match l.kind {
            's' => t.start = l.ns,
            'e' => t.end = Some(l.ns),
            _ => {}
        }
    }
    let mut v: Vec<Tenure> = by_tag.into_values().collect();
    v.sort_by_key(|t| t.start);
    v
}

/// What the table reports of one scenario.
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    pub(crate) name: &'static str,
    pub(crate) tenures: usize,
    pub(crate) overlaps: Vec<String>,
    /// The shortest time between one tenure's end and the next one's start.
    pub(crate) min_gap_ms: f64,
    /// The longest such time.
    pub(crate) max_gap_ms: f64,
    /// The tenure kept running through the fault, if there was one.
    pub(crate) cut: Option<Cut>,
    pub(crate) lost: usize,
    pub(crate) errors: usize,
}

/// The command kept running through the fault.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cut {
    /// Its end to the next tenure's start: the margin left.
    pub(crate) margin_ms: f64,
    /// Its end, and the next tenure's start, counted from the fault.
    pub(crate) ended_s: f64,
    pub(crate) next_s: f64,
    /// Who held next (the same holder again, or another).
    pub(crate) next_tag: String,
    /// `run`'s exit status.
    pub(crate) code: i32,
}

impl Cut {
    pub(crate) fn said(&self) -> String {
        format!(
            "held-through command stopped at +{:.2} s (run exit {}), next tenure ({}) began at \
             +{:.2} s: {:.0} ms apart",
            self.ended_s, self.code, self.next_tag, self.next_s, self.margin_ms
        )
    }
}

impl Figures {
    pub(crate) fn line(&self) -> String {
        let cut = match &self.cut {
            Some(c) => format!(", {}", c.said()),
            None => String::new(),
        };
        format!(
            "etcd fault [{}]: {HOLDERS} holders, {} tenures, {} overlaps, min gap {:.1} ms, \
             longest hand-off {:.0} ms{cut}, {} runs lost (exit 4), {} runs failed (exit 1)",
            self.name,
            self.tenures,
            self.overlaps.len(),
            self.min_gap_ms,
            self.max_gap_ms,
            self.lost,
            self.errors
        )
    }
}

pub(crate) fn judge(
    name: &'static str,
    lines: &[Line],
    codes: &BTreeMap<String, i32>,
    long: Option<&str>,
    fault_at: i128,
) -> Figures {
    let all = tenures(lines);
    let last_ns = lines.iter().map(|l| l.ns).max().unwrap_or(0);
    let mut overlaps = Vec::new();
    let (mut min_gap, mut max_gap) = (i128::MAX, i128::MIN);
    // The tenure whose end reaches furthest so far: every later start must
    // come after it. A command that never wrote its end is taken to have
    // run to the end of the scenario.
    let mut reach: Option<(i128, &str)> = None;
    for t in &all {
        if let Some((end, tag)) = reach {
            let gap = t.start - end;
            min_gap = min_gap.min(gap);
            max_gap = max_gap.max(gap);
            if gap < 0 {
                overlaps.push(format!(
                    "{} began {:.1} ms before {tag} ended",
                    t.tag,
                    -gap as f64 / 1e6
                ));
            }
        }
        let end = t.end.unwrap_or(last_ns);
        if reach.is_none_or(|(e, _)| end > e) {
            reach = Some((end, &t.tag));
        }
    }
    for t in all.iter().filter(|t| t.end.is_none()) {
        overlaps.push(format!("{} never wrote its end", t.tag));
    }
    let cut = long.map(|tag| {
        let me = all.iter().find(|t| t.tag == tag).expect("the long tenure");
        let end = me.end.map_or(f64::NAN, |e| e as f64);
        let next = all.iter().find(|t| t.start > me.start);
        let next_tag = next.map_or("none".into(), |t| t.tag.clone());
        let next = next.map_or(f64::NAN, |t| t.start as f64);
        let from_fault = |ns: f64| (ns - fault_at as f64) / 1e9;
        Cut {
            margin_ms: (next - end) / 1e6,
            ended_s: from_fault(end),
            next_s: from_fault(next),
            next_tag,
            code: codes.get(tag).copied().unwrap_or(-1),
        }
    });
    Figures {
        name,
        tenures: all.len(),
        overlaps,
        min_gap_ms: min_gap as f64 / 1e6,
        max_gap_ms: max_gap as f64 / 1e6,
        cut,
        lost: codes.values().filter(|&&c| c == 4).count(),
        errors: codes.values().filter(|&&c| c == 1).count(),
    }
}

/// The judge itself, on timestamps written by hand: an exclusion check
/// that could not fail would make every figure above worthless.
#[test]
pub(crate) fn the_judge_finds_every_intersection_and_every_command_that_never_ended() {
    const MS: i128 = 1_000_000;
    let line = |kind: char, ms: i128, tag: &str| format!("{kind} {} {tag}\n", ms * MS);
    let clean: String = [
        line('s', 0, "w0.1"),
        line('e', 100, "w0.1"),
        line('s', 103, "w1.1"),
        line('l', 104, "w1.1"),
        line('e', 900, "w1.1"),
        line('s', 950, "w2.1"),
        line('e', 990, "w2.1"),
    ]
    .concat();
    let codes = BTreeMap::from([("w1.1".to_string(), 4)]);
    let fig = judge("clean", &parse(&clean), &codes, Some("w1.1"), 0);
    assert!(fig.overlaps.is_empty(), "{:?}", fig.overlaps);
    assert_eq!(fig.tenures, 3);
    assert_eq!((fig.min_gap_ms, fig.max_gap_ms), (3.0, 50.0));
    assert_eq!(
        fig.cut,
        Some(Cut {
            margin_ms: 50.0,
            ended_s: 0.9,
            next_s: 0.95,
            next_tag: "w2.1".into(),
            code: 4
        })
    );
    assert_eq!(fig.lost, 1);

    // w2.1 lies inside w0.1, w3.1 begins after w2.1 ended but before w0.1
    // did: both intersect w0.1, the furthest-reaching tenure so far.
    let nested: String = [
        line('s', 0, "w0.1"),
        line('s', 100, "w2.1"),
        line('e', 200, "w2.1"),
        line('s', 300, "w3.1"),
        line('e', 400, "w3.1"),
        line('e', 1000, "w0.1"),
        line('s', 1200, "w4.1"),
    ]
    .concat();
    let fig = judge("nested", &parse(&nested), &BTreeMap::new(), None, 0);
    assert_eq!(
        fig.overlaps,
        [
            "w2.1 began 900.0 ms before w0.1 ended",
            "w3.1 began 700.0 ms before w0.1 ended",
            "w4.1 never wrote its end",
        ]
    );
    assert_eq!(fig.min_gap_ms, -900.0);
}
