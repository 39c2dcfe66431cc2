//! Criterion micro-benchmarks of the hot paths behind the figures, each
//! beside its floor in the same group: a sweep against reading the same
//! files, one status, an acquire + release cycle against the bare protocol
//! syscalls, and one whole-screen dashboard frame.
//!
//! `cargo bench --bench micro` for statistics; under `cargo test` criterion
//! runs each once, on toy fixtures.

mod common;

use claimtop::claims::{acquire, release, status, sweep, AcquireOpts, Root};
use claimtop::dashboard::testing::{draw, update, Action, App, Options};
use common::*;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::hint::black_box;

fn files() -> usize {
    if quick_mode() {
        200
    } else {
        10_000
    }
}

/// Distinct (live, dead) holder pids: the figures' mix, or a handful.
fn pids() -> (usize, usize) {
    if quick_mode() {
        (4, 4)
    } else {
        (LIVE_HOLDERS, DEAD_HOLDERS)
    }
}

fn bench_sweep(c: &mut Criterion) {
    let Ok(sleepers) = Sleepers::spawn(pids().0) else {
        eprintln!("cannot spawn sleep children; sweep bench skipped");
        return;
    };
    let Ok(fx) = claims_fixture(files(), &sleepers, &dead_pids(pids().1)) else {
        eprintln!("cannot build the claims fixture; sweep bench skipped");
        return;
    };
    let dir = fx.root.claims_dir();
    let mut g = c.benchmark_group("sweep");
    g.sample_size(20);
    g.bench_with_input(
        BenchmarkId::new("claimtop", files()),
        &fx.root,
        // Freeing the result is the caller's business (a CLI exits, the
        // dashboard keeps it), as in the figures driver.
        |b, root| b.iter_with_large_drop(|| sweep(root)),
    );
    let mut buf = Vec::with_capacity(4096);
    g.bench_with_input(BenchmarkId::new("floor", files()), &dir, |b, dir| {
        b.iter(|| black_box(read_all_floor(dir, &mut buf)))
    });
    g.finish();

    c.bench_function("status", |b| {
        let keys: Vec<String> = (0..100).map(key_of).collect();
        let mut i = 0;
        b.iter(|| {
            i = (i + 1) % keys.len();
            black_box(status(&fx.root, &keys[i]))
        })
    });

    let mut g = c.benchmark_group("render");
    for (w, h) in [(160u16, 48u16), (80, 24)] {
        let opts = Options {
            root: fx.root.clone(),
            more_roots: Vec::new(),
            read_only: true,
            no_color: false,
            demo: false,
            local_time: false,
            opening: Default::default(),
        };
        let now = claimtop::claims::now_ms();
        let identity = claimtop::claims::LocalIdentity::current();
        let mut app = App::new(opts, now, identity, "operator:bench@here".into());
        update(&mut app, Action::Resize(w, h));
        for a in claimtop::dashboard::testing::root_driver(&fx.root, 0, now)
            .start(now)
            .unwrap_or_default()
            .into_iter()
            .map(claimtop::dashboard::testing::heard)
        {
            update(&mut app, a);
        }
        let Ok(mut term) = Terminal::new(TestBackend::new(w, h));
        let mut i = 0;
        g.bench_function(
            BenchmarkId::new(format!("{w}x{h}"), app.claims.live.len()),
            |b| {
                b.iter(|| {
                    i += 1;
                    app.table.selected = i % 40;
                    let _ = term.draw(|f| draw(f, &app));
                })
            },
        );
    }
    g.finish();
}

fn bench_cycle(c: &mut Criterion) {
    let Ok(td) = tempfile::Builder::new().prefix("claimtop-bench-").tempdir() else {
        return;
    };
    let root = Root::with_events_here(td.path());
    let opts = AcquireOpts::default();
    let mut g = c.benchmark_group("acquire_release");
    g.bench_function("claimtop", |b| {
        b.iter(|| {
            let a = acquire(&root, "micro-key", "pty:micro", &opts);
            let r = release(&root, "micro-key", "pty:micro");
            black_box((a.is_ok(), r.is_ok()))
        })
    });
    if let Ok(mut fl) = FloorCycle::new(&root, "micro-floor") {
        g.bench_function("floor", |b| b.iter(|| black_box(fl.cycle().is_ok())));
    }
    g.finish();
}

criterion_group!(benches, bench_sweep, bench_cycle);
criterion_main!(benches);
