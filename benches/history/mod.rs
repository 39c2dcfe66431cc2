//! Figure: the events history over a big etcd prefix, as the dashboard's
//! events pane reads it (the events service on its own thread, asked what
//! `k`, `/`, `n` and `g` ask). Measured in a child process, so its memory
//! is its own:
//!
//! - the last page (`k`), the whole pass (the count, "event N of M", and
//!   the timeline's tenures);
//! - a search from the end for a match near the start (the worst case: it
//!   reads nearly every event), once before the pass is over (a forward
//!   scan up to the cursor) and once after (backwards by checkpoints);
//! - the first page (`g`), and the peak RSS over all of it.

use claimtop::events::backward::SearchFrom;
use claimtop::events::history::Log;
use claimtop::events::service::{serve_history, Anchor, Reply, Request, Which};
use claimtop::store::{OpenCtx, Store, StoreName};
use std::cell::Cell;
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

const URL_VAR: &str = "CLAIMTOP_BENCH_HISTORY_URL";
const PREFIX: &str = "/bench-history";
const NEEDLE: &str = "needle-zq";

/// Run as the child when the parent named a store.
pub fn child_role() -> bool {
    match std::env::var(URL_VAR) {
        Ok(url) => {
            child(&url);
            true
        }
        Err(_) => false,
    }
}

/// Plant `n` events (the needle in the 100th), run the child, print.
pub fn figure(etcd: &super::etcd_common::Etcd, n: usize) {
    let base = claimtop::claims::now_ms() - n as i64 * 1000;
    let lines: Vec<(i64, String)> = (0..n)
        .map(|i| {
            let at = base + i as i64 * 1000;
            let reason = if i == 100 { NEEDLE } else { "work" };
            let data = serde_json::json!({"key": format!("job/{}", i % 500), "holder": format!("w{}", i % 64),
                "pid": 4242, "host": "bench-host", "acquired_at": at, "expires_at": null, "reason": reason});
            (at, super::etcd_common::event_line(at, "claim_acquired", data))
        })
        .collect();
    let t = Instant::now();
    super::etcd_common::put_events(etcd, PREFIX, &lines);
    let loaded = t.elapsed();
    drop(lines);
    let exe = std::env::current_exe().expect("this bench's own path");
    let out = std::process::Command::new(exe)
        .env(URL_VAR, etcd.url(PREFIX))
        .output()
        .expect("run the history child");
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    let [last_ms, early_ms, pass_ms, late_ms, first_ms, count, hwm_kib, rss_kib] = v[..] else {
        panic!(
            "the history child said {text:?} ({}); stderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let verdict = |ok: bool| if ok { "ok" } else { "MISSED" };
    println!(
        "events history over {n} etcd events ({count} counted; planted in {:.1} s, one put each, 256 in flight):",
        loaded.as_secs_f64()
    );
    println!("   last page (k)          {last_ms:>8.0} ms");
    println!(
        "   search, before the pass {early_ms:>7.0} ms   (a match {} events from the start, asked at once; target < 2000 ms) {}",
        100,
        verdict(early_ms < 2000.0)
    );
    println!("   the pass (count, tenures) {pass_ms:>5.0} ms   (from opening; the search above ran first)");
    println!(
        "   search, after the pass  {late_ms:>7.0} ms   (the same match, backwards by checkpoints; target < 2000 ms) {}",
        verdict(late_ms < 2000.0)
    );
    println!("   first page (g)         {first_ms:>8.0} ms");
    println!(
        "   memory                 peak RSS {:.1} MiB, RSS after {:.1} MiB",
        hwm_kib / 1024.0,
        rss_kib / 1024.0
    );
}

fn wait(rx: &Receiver<Reply>, what: &str, mut f: impl FnMut(&Reply) -> bool) {
    loop {
        match rx.recv_timeout(Duration::from_secs(300)) {
            Ok(Reply::Error(e)) => panic!("{what}: {e}"),
            Ok(r) if f(&r) => return,
            Ok(_) => {}
            Err(e) => panic!("{what}: {e}"),
        }
    }
}

fn child(url: &str) {
    let name = StoreName::parse(url).expect("a store URL");
    let store = Store::open(&[name], &[], &OpenCtx::default()).expect("open the store");
    let store = store.one("the bench").expect("one store").shared();
    let history = store
        .audit()
        .expect("an events log")
        .history(&Log::Own)
        .expect("its history");
    let (req_tx, req_rx) = channel();
    let (rep_tx, rep_rx) = channel();
    let opener = Box::new(move |w: &Which| match w {
        Which::Log(l) => store
            .audit()
            .expect("an events log")
            .history(l)
            .map_err(|e| claimtop::events::history::HistoryError::Store(e.to_string())),
        Which::Path(_) => unreachable!("no file here"),
    });
    std::thread::spawn(move || {
        serve_history(history, opener, req_rx, move |r| rep_tx.send(r).is_ok())
    });
    let page = |anchor, before, after| Request::Page {
        anchor,
        before,
        after,
    };
    let search = |id| Request::Search {
        id,
        needle: NEEDLE.into(),
        from: SearchFrom::Before(u64::MAX),
        wrap: false,
    };
    let t = Instant::now();
    req_tx.send(page(Anchor::End, 401, 0)).expect("ask");
    let count = Cell::new(0u64);
    let indexed = Cell::new(None);
    let note = |r: &Reply, t0: Instant| {
        if let Reply::Indexed { lines, .. } = r {
            count.set(*lines);
            indexed.set(Some(t0.elapsed()));
        }
    };
    wait(&rep_rx, "the last page", |r| {
        note(r, t);
        matches!(r, Reply::Page(_))
    });
    let last = t.elapsed();
    // At once: the pass has barely begun.
    let s = Instant::now();
    req_tx.send(search(1)).expect("ask");
    wait(&rep_rx, "the first search", |r| {
        note(r, t);
        matches!(r, Reply::Search { found: Some(_), .. })
    });
    let early = s.elapsed();
    if indexed.get().is_none() {
        wait(&rep_rx, "the pass", |r| {
            note(r, t);
            matches!(r, Reply::Indexed { .. })
        });
    }
    let pass = indexed.get().unwrap_or_default();
    let s = Instant::now();
    req_tx.send(search(2)).expect("ask");
    wait(&rep_rx, "the second search", |r| {
        matches!(r, Reply::Search { found: Some(_), .. })
    });
    let late = s.elapsed();
    let s = Instant::now();
    req_tx.send(page(Anchor::Start, 0, 401)).expect("ask");
    wait(&rep_rx, "the first page", |r| matches!(r, Reply::Page(_)));
    let first = s.elapsed();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "{:.1} {:.1} {:.1} {:.1} {:.1} {} {} {}",
        ms(last),
        ms(early),
        ms(pass),
        ms(late),
        ms(first),
        count.get(),
        super::common::proc_status_kib("VmHWM").unwrap_or(0),
        super::common::proc_status_kib("VmRSS").unwrap_or(0),
    );
}
