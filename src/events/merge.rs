//! Several roots' events logs read as one: merged by time, each line tagged
//! with the root it came from.
//!
//! Every log is already in its own append order, and that order is the truth
//! for its root (two writers' clocks may disagree by a little, but a log never
//! lies about which line came first). So the logs are merged, not sorted: at
//! each step the earliest head is taken, and a log's own lines never change
//! places.

type Log<T> = std::iter::Peekable<std::vec::IntoIter<(Option<String>, T)>>;

/// Merge logs, each in its own order, by their `ts` strings.
///
/// `ts` is compared as text: the seed writes one fixed-width UTC form, so
/// text order is time order. A line with no `ts` (or one not a string) sorts
/// as if it had its predecessor's in the same log, so it stays beside the
/// lines it was written with; before any `ts`, it sorts first. Ties go to
/// the root named first. Returns `(log index, item)` in merged order.
pub fn merge_by_ts<T>(logs: Vec<Vec<(Option<String>, T)>>) -> Vec<(usize, T)> {
    let total = logs.iter().map(Vec::len).sum();
    // Each log's remaining lines, and the last `ts` seen in it.
    let mut heads: Vec<(String, Log<T>)> = logs
        .into_iter()
        .map(|l| (String::new(), l.into_iter().peekable()))
        .collect();
    let mut out = Vec::with_capacity(total);
    loop {
        let mut best: Option<(usize, &str)> = None;
        for (i, (last, it)) in heads.iter_mut().enumerate() {
            let Some((ts, _)) = it.peek() else { continue };
            let ts = ts.as_deref().unwrap_or(last.as_str());
            if best.is_none_or(|(_, b)| ts < b) {
                best = Some((i, ts));
            }
        }
        let Some((i, _)) = best else { break };
        let (last, it) = &mut heads[i];
        if let Some((ts, item)) = it.next() {
            if let Some(ts) = ts {
                *last = ts;
            }
            out.push((i, item));
        }
    }
    out
}

/// The last `n` of a merge: the tail of each log is enough, since the last
/// `n` of the whole are among the last `n` of every part.
pub fn keep_last<T>(v: &mut std::collections::VecDeque<T>, n: usize, item: T) {
    if n == 0 {
        return;
    }
    if v.len() == n {
        v.pop_front();
    }
    v.push_back(item);
}

/// A log line (one JSON object, trimmed) with `"root": ROOT` added as its
/// last member. Spliced as text, so every other byte stays as the writer
/// wrote it (re-serializing would round big numbers and reorder nothing
/// useful). `None` when the line is not `{...}`.
pub fn with_root_member(line: &[u8], root: &str) -> Option<Vec<u8>> {
    with_member(line, "root", root)
}

/// [`with_root_member`] for any member `name` (a plain word: it is written
/// as it is, unescaped).
pub fn with_member(line: &[u8], name: &str, value: &str) -> Option<Vec<u8>> {
    let line = line.trim_ascii();
    let inner = line.strip_prefix(b"{")?.strip_suffix(b"}")?;
    let value = serde_json::to_string(value).ok()?;
    let mut out = Vec::with_capacity(line.len() + name.len() + value.len() + 8);
    out.push(b'{');
    out.extend_from_slice(inner);
    if !inner.trim_ascii().is_empty() {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
    out.extend_from_slice(value.as_bytes());
    out.push(b'}');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(items: &[(Option<&str>, &'static str)]) -> Vec<(Option<String>, &'static str)> {
        items
            .iter()
            .map(|(ts, s)| (ts.map(String::from), *s))
            .collect()
    }

    #[test]
    fn logs_interleave_by_time_and_ties_go_to_the_first_root() {
        let a = log(&[(Some("t1"), "a1"), (Some("t3"), "a3")]);
        let b = log(&[(Some("t1"), "b1"), (Some("t2"), "b2"), (Some("t4"), "b4")]);
        let got: Vec<_> = merge_by_ts(vec![a, b]).into_iter().map(|x| x.1).collect();
        assert_eq!(got, ["a1", "b1", "b2", "a3", "b4"]);
    }

    #[test]
    fn a_log_out_of_time_order_keeps_its_own_order() {
        let a = log(&[(Some("t5"), "a5"), (Some("t1"), "a1")]);
        let b = log(&[(Some("t3"), "b3")]);
        let got: Vec<_> = merge_by_ts(vec![a, b]).into_iter().map(|x| x.1).collect();
        assert_eq!(got, ["b3", "a5", "a1"]);
    }

    #[test]
    fn a_line_without_ts_stays_after_its_predecessor() {
        let a = log(&[(Some("t2"), "a2"), (None, "a-"), (Some("t4"), "a4")]);
        let b = log(&[(Some("t3"), "b3"), (None, "b-")]);
        let got: Vec<_> = merge_by_ts(vec![a, b]).into_iter().map(|x| x.1).collect();
        assert_eq!(got, ["a2", "a-", "b3", "b-", "a4"]);
    }

    #[test]
    fn the_root_member_is_added_last_and_nothing_else_changes() {
        let line = br#" {"ts":"t","n":12345678901234567890123,"data":{}} "#;
        let out = with_root_member(line, "/r\"x").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"ts":"t","n":12345678901234567890123,"data":{},"root":"/r\"x"}"#
        );
        assert_eq!(
            with_root_member(b"{ }", "/r").unwrap(),
            br#"{ "root":"/r"}"#
        );
        assert_eq!(with_root_member(b"[1]", "/r"), None);
    }

    #[test]
    fn keep_last_holds_at_most_n() {
        let mut v = std::collections::VecDeque::new();
        for i in 0..5 {
            keep_last(&mut v, 2, i);
        }
        assert_eq!(v, [3, 4]);
        keep_last(&mut v, 0, 9);
        assert_eq!(v, [3, 4]);
    }
}
