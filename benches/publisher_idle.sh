#!/usr/bin/env bash
# An idle publisher's own CPU (docs/fleet.md, "A publisher's own idle
# cost"): one real etcd on free loopback ports in a temp dir, one
# `claimtop publish` of a root holding CLAIMS live claims of one long
# `sleep` pid, idle from WARM s after its start, its utime + stime from
# /proc/PID/stat over SECS s (a tick is 10 ms: ±1 tick is ±0.004 % of a
# core over 240 s), and the same span as perf's task-clock where perf runs.
#
#   benches/publisher_idle.sh [BIN]        # BIN: target/release/claimtop
#   SECS=240 CLAIMS=2000 WARM=20 benches/publisher_idle.sh
#   STRACE=65 benches/publisher_idle.sh    # then `strace -c -f` for 65 s
#   STRACE=5 STRACE_OPTS=-tt ...           # every call, timed
#   PERF=65 benches/publisher_idle.sh      # then `perf record -g` for 65 s
#
# Build first: cargo build --release --features etcd. Everything it starts
# (etcd, the publisher, the sleep) is stopped on exit; ports 2379/2380 are
# never used.
set -euo pipefail

BIN=$(realpath "${1:-target/release/claimtop}")
SECS=${SECS:-240}
CLAIMS=${CLAIMS:-2000}
WARM=${WARM:-20}
ETCD=${ETCD:-/usr/bin/etcd}
TMP=$(mktemp -d /tmp/publisher_idle.XXXXXX)
PIDS=()

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

cpu_ticks() { # utime + stime of pid $1 (comm has no spaces: claimtop)
    awk '{ print $14 + $15 }' "/proc/$1/stat"
}

CP=$(free_port)
PP=$(free_port)
"$ETCD" --name pi --data-dir "$TMP/etcd" \
    --listen-client-urls "http://127.0.0.1:$CP" --advertise-client-urls "http://127.0.0.1:$CP" \
    --listen-peer-urls "http://127.0.0.1:$PP" --initial-advertise-peer-urls "http://127.0.0.1:$PP" \
    --initial-cluster "pi=http://127.0.0.1:$PP" --logger zap --log-level error \
    >/dev/null 2>"$TMP/etcd.log" &
PIDS+=($!)

ROOT="$TMP/root"
mkdir -p "$ROOT"
sleep 100000 &
HOLDER=$!
PIDS+=("$HOLDER")
for i in $(seq 1 "$CLAIMS"); do
    "$BIN" --root "$ROOT" acquire "idle:$i" --holder "bench:w$((i % 50))" --pid "$HOLDER" >/dev/null
done

# Past the stamps' 2 s window (claims/stamp.rs), as an idle root's claims
# are: the publisher's first listing stamps them all.
sleep 3
for _ in $(seq 50); do
    "$BIN" --store "etcd://127.0.0.1:$CP/pi" list >/dev/null 2>&1 && break
    sleep 0.2
done

"$BIN" --root "$ROOT" publish --store "etcd://127.0.0.1:$CP/pi" 2>"$TMP/publish.log" &
PUB=$!
PIDS+=("$PUB")
sleep "$WARM"
kill -0 "$PUB" || { cat "$TMP/publish.log"; exit 1; }

PERF_OUT="$TMP/task-clock"
if command -v perf >/dev/null; then
    perf stat -x, -e task-clock -p "$PUB" -o "$PERF_OUT" -- sleep "$SECS" 2>/dev/null &
    PERF_STAT=$!
fi
t0=$(cpu_ticks "$PUB")
sleep "$SECS"
t1=$(cpu_ticks "$PUB")
[ -n "${PERF_STAT:-}" ] && wait "$PERF_STAT" 2>/dev/null || true
hz=$(getconf CLK_TCK)
ticks=$((t1 - t0))
pct=$(awk -v t="$ticks" -v hz="$hz" -v s="$SECS" 'BEGIN { printf "%.3f", 100 * t / hz / s }')
ms=$(awk -F, '/task-clock/ { printf "%.1f", $1 }' "$PERF_OUT" 2>/dev/null || true)
clock=""
[ -n "$ms" ] && clock=$(awk -v ms="$ms" -v s="$SECS" 'BEGIN { printf " task-clock=%.1fms (%.4f %%)", ms, ms / 10 / s }')
echo "publisher idle: claims=$CLAIMS secs=$SECS ticks=$ticks cpu=$pct%$clock"

if [ -n "${STRACE:-}" ]; then
    timeout -s INT "$STRACE" strace ${STRACE_OPTS:--c} -f -p "$PUB" -o "$TMP/strace" 2>/dev/null || true
    cat "$TMP/strace"
fi
if [ -n "${PERF:-}" ]; then
    perf record -q -g -F "${PERF_FREQ:-4000}" -p "$PUB" -o "$TMP/perf.data" -- sleep "$PERF" 2>/dev/null
    perf report -q -i "$TMP/perf.data" ${PERF_REPORT:---no-children --percent-limit 2} --stdio 2>/dev/null |
        grep -v '^$' | head -"${PERF_LINES:-80}"
fi
grep -q 'level=error' "$TMP/publish.log" && cat "$TMP/publish.log"
exit 0
