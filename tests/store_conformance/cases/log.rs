//! The audit log: a face opens with the log's tail and follows from the
//! tail's cursor, and sees every line once — none twice, none lost between
//! the two. Every wait ends on the line it waits for, or fails after a
//! bound that only says "it never came".

use super::{take, Target};
use claimtop::events::tail::Line;
use claimtop::store::{LogFeed, LogNews};
use std::time::{Duration, Instant};

use crate::under_test::StoreUnderTest;

/// The bound on "it never came" (not a timing assertion).
const NEVER: Duration = Duration::from_secs(20);

/// The key an audit line names.
fn key_of(line: &Line) -> Option<String> {
    line.parse().ok().and_then(|e| e.key().map(str::to_string))
}

/// Read `feed` until lines naming every key of `keys` came; every line
/// that came, as written.
fn until_keys(feed: &mut dyn LogFeed, keys: &[&str]) -> Vec<Line> {
    let until = Instant::now() + NEVER;
    let mut got: Vec<Line> = Vec::new();
    while Instant::now() < until {
        let named = |k: &&str| got.iter().any(|l| key_of(l).as_deref() == Some(*k));
        if keys.iter().all(named) {
            return got;
        }
        match feed.next(Duration::from_millis(200)) {
            Ok(Some(LogNews::Lines { lines, .. })) => got.extend(lines),
            Ok(Some(other)) => panic!("unexpected news {other:?}"),
            Ok(None) => {}
            Err(e) => panic!("the log feed failed: {e}"),
        }
    }
    let seen: Vec<_> = got.iter().map(key_of).collect();
    panic!("no line named each of {keys:?}; saw {seen:?}");
}

pub fn tail_then_follow_brings_no_line_twice_and_misses_none(u: &dyn StoreUnderTest) {
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "before", "alice");
    let audit = b.audit().expect("every store under test keeps a log");
    let (tail, at) = audit.tail(1000).expect("tail");
    assert!(
        tail.iter()
            .any(|(_, l)| key_of(l).as_deref() == Some("before")),
        "the tail holds the line written before it"
    );
    // Written between the tail and the feed: brought by the feed, once.
    let peer = u.peer();
    take(peer.backend(u.target()).expect("target"), "between", "bob");
    let mut feed = audit.follow(Some(&at)).expect("follow");
    take(b, "after", "alice");
    let got = until_keys(feed.as_mut(), &["between", "after"]);
    for line in &got {
        assert_ne!(
            key_of(line).as_deref(),
            Some("before"),
            "{line:?} came twice"
        );
    }
    let between = got
        .iter()
        .filter(|l| key_of(l).as_deref() == Some("between"));
    assert_eq!(between.count(), 1, "the line between came once: {got:?}");
}

/// `events --json --follow`'s lines, read on a thread of their own.
struct Following {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    seen: Vec<serde_json::Value>,
}

impl Following {
    fn start(mut cmd: std::process::Command) -> Following {
        use std::io::BufRead;
        let mut child = cmd
            .args(["--json", "events", "--follow"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start events --follow");
        let out = child.stdout.take().expect("its stdout");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Following {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Read on until a line names each of `keys`.
    fn until(&mut self, keys: &[String]) {
        let until = Instant::now() + NEVER;
        let named = |seen: &[serde_json::Value], k: &String| {
            seen.iter().any(|v| v["data"]["key"].as_str() == Some(k))
        };
        while !keys.iter().all(|k| named(&self.seen, k)) {
            let left = until.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no line named each of {keys:?}: {:?}",
                self.seen
            );
            if let Ok(line) = self
                .lines
                .recv_timeout(left.min(Duration::from_millis(200)))
            {
                let v = serde_json::from_str(&line).expect("a JSON line");
                self.seen.push(v);
            }
        }
    }

    fn times(&self, key: &str) -> usize {
        let named = |v: &&serde_json::Value| v["data"]["key"].as_str() == Some(key);
        self.seen.iter().filter(named).count()
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn events_follow_prints_each_new_event_once_naming_its_origin_where_several(
    u: &dyn StoreUnderTest,
) {
    let case = "events_follow_prints_each_new_event_once_naming_its_origin_where_several";
    let Some(cmd) = u.cli_all_cmd() else {
        eprintln!("{case}: not run on {} (no CLI reaches it)", u.name());
        return;
    };
    let store = u.store();
    let takers: Vec<_> = store
        .named()
        .filter(|m| m.backend().takes_claims())
        .collect();
    let keys =
        |word: &str| -> Vec<String> { (0..takers.len()).map(|i| format!("{word}-{i}")).collect() };
    let write = |word: &str| {
        for (m, k) in takers.iter().zip(keys(word)) {
            take(m.backend(), &k, "follower");
        }
    };
    write("before");
    let mut f = Following::start(cmd);
    f.until(&keys("before"));
    write("after");
    f.until(&keys("after"));
    // A line after them on every log: anything they would bring twice
    // comes before it.
    write("mark");
    f.until(&keys("mark"));
    for k in keys("before").iter().chain(&keys("after")) {
        assert_eq!(f.times(k), 1, "{k} in {:?}", f.seen);
    }
    let several = !u.origins().is_empty();
    for (m, k) in takers.iter().zip(keys("after")) {
        let line = f.seen.iter().find(|v| v["data"]["key"] == k.as_str());
        let origin = line.map(|v| v["origin"].clone()).unwrap_or_default();
        match several {
            true => assert_eq!(origin, m.name().as_str(), "{k}"),
            false => assert!(origin.is_null(), "one origin is not named: {origin}"),
        }
    }
}

pub fn a_follow_from_where_a_range_read_ended_brings_what_came_after_and_nothing_read(
    u: &dyn StoreUnderTest,
) {
    let case = "a_follow_from_where_a_range_read_ended_brings_what_came_after_and_nothing_read";
    let t = Target::of(u);
    let b = t.backend(u);
    take(b, "read", "alice");
    let audit = b.audit().expect("every store under test keeps a log");
    let logs = audit.logs().expect("its logs");
    let (_, log) = logs.first().expect("a log");
    let mut h = audit.history(log).expect("its history");
    let mut read = 0;
    let end = h
        .read_range(&Default::default(), &mut |_| {
            read += 1;
            Ok(())
        })
        .expect("a range read");
    assert!(read >= 1, "the line written before the read");
    let Some(at) = audit.resume_after(log, &end) else {
        // A file's lines are marked by their offsets: its feed can always
        // resume at the read's end, and `events --follow` relies on it.
        assert!(!h.verbatim(), "a file's log resumes where its read ended");
        eprintln!("{case}: not run on {} (it follows from now)", u.name());
        return;
    };
    // Written between the read and the feed: brought by the feed, once,
    // and nothing the read visited comes again.
    let peer = u.peer();
    take(peer.backend(u.target()).expect("target"), "between", "bob");
    let mut feed = audit.follow(Some(&at)).expect("follow");
    take(b, "after", "alice");
    let got = until_keys(feed.as_mut(), &["between", "after"]);
    let keys: Vec<Option<String>> = got.iter().map(key_of).collect();
    assert!(!keys.contains(&Some("read".into())), "{keys:?}");
    let between = keys.iter().filter(|k| k.as_deref() == Some("between"));
    assert_eq!(between.count(), 1, "{keys:?}");
}
