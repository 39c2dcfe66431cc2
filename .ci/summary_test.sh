#!/usr/bin/env bash
# The CI summary (.ci/summary.awk) over a log cut from a real run: the
# library's tests in both runs, a test name shared by two binaries, a
# child's unfinished stderr line before a result, ignored and failed tests,
# and a bench run in test mode. Run by .ci/run before it prints the summary.
set -euo pipefail
cd "$(dirname "$0")"
want="summary: 10 passed, 1 failed, 1 skipped; 7 distinct tests passed, 3 of them in both runs"
got="$(awk -f summary.awk <<'LOG'
   Compiling claimtop v0.1.0 (/work/claimtop)
     Running unittests src/lib.rs (target/debug/deps/claimtop-a60fd6f05359ce2c)

running 3 tests
test sanitize::tests::plain_text_is_borrowed_unchanged ... ok
test wait::tests::a_wait_ends_at_its_deadline ... ok
test shared::name ... ok

test result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running unittests src/main.rs (target/debug/deps/claimtop-91c2a7e0b33d3f10)

running 1 test
test shared::name ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s

     Running tests/reliability/main.rs (target/debug/deps/reliability-b937f6978d7648b3)

running 4 tests
test kill::five_hundred_kill_iterations_leave_no_torn_lockfile_and_no_bricked_key ... ignored, heavy: run with --ignored for the README figures (500 kill iterations)
figure: acquire after kill -9 of a recoverer took test stress::judge::tests::windows_one_nanosecond_apart_are_clean ... ok
test stress::judge::tests::two_holders_whose_windows_on_one_key_overlap_are_a_violation ... FAILED
test hostile::the_oracle_finds_raw_characters_and_bytes_that_are_not_utf8_on_their_line ... ok

failures:

---- stress::judge::tests::two_holders_whose_windows_on_one_key_overlap_are_a_violation stdout ----
test result: a line a test printed, not libtest's
failures:
    stress::judge::tests::two_holders_whose_windows_on_one_key_overlap_are_a_violation

test result: FAILED. 2 passed; 1 failed; 1 ignored; 0 measured; 0 filtered out; finished in 1.02s

     Running benches/list.rs (target/debug/deps/list-0f3c2a1b2c3d4e5f)
Testing list/10000 rows
Success

==> etcd: cargo test --features etcd --lib --test etcd_store
     Running unittests src/lib.rs (target/debug/deps/claimtop-2e29a943609fa643)

running 4 tests
test sanitize::tests::plain_text_is_borrowed_unchanged ... ok
test wait::tests::a_wait_ends_at_its_deadline ... ok
test shared::name ... ok
test store::etcd::tests::a_lease_is_kept_alive ... ok

test result: ok. 4 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.02s
LOG
)"
if [ "$got" != "$want" ]; then
    printf 'summary.awk is off:\n  want: %s\n  got:  %s\n' "$want" "$got" >&2
    exit 1
fi
echo "summary.awk: ok"
