#!/usr/bin/env bash
# Regenerate the README screenshot from a real `claimtop --demo` run:
# the dashboard runs in a private, detached tmux server at 160x48, the pane is
# captured with its colours, and ansi2svg.py draws it as SVG.
#
#   assets/capture.sh [seconds-to-let-the-demo-run]   (default 6)
#   assets/capture.sh SECONDS timeline                  the timeline (`t`) instead,
#                                                       into assets/timeline.{ansi,svg}
#   assets/capture.sh SECONDS fleet                     the fleet view over a real etcd
#                                                       (a throwaway member on loopback)
#                                                       with three publishing hosts, one
#                                                       of them killed, into assets/fleet.*
#
# The fleet needs etcd (or $ETCD_BIN) and unshare: each publisher runs in its
# own UTS namespace so that it has a hostname of its own.
#
# Needs tmux and python3; rsvg-convert (librsvg2-bin), when present, also
# writes a PNG next to the SVG for a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
settle="${1:-6}"
view="${2:-dashboard}"

echo "==> building claimtop"
if [ "$view" = fleet ]; then
    cargo build --quiet --features etcd
else
    cargo build --quiet
fi
bin="$PWD/target/debug/claimtop"

work="$(mktemp -d)"
sock="$work/sock"
cleanup() {
    tmux -S "$sock" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

if [ "$view" = fleet ]; then
    pids=()
    cleanup() {
        tmux -S "$sock" kill-server 2>/dev/null || true
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
        wait 2>/dev/null || true
        rm -rf "$work"
    }
    port=$((23000 + RANDOM % 2000))
    "${ETCD_BIN:-etcd}" --name shot --data-dir "$work/etcd" \
        --listen-client-urls "http://127.0.0.1:$port" \
        --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$((port + 1))" \
        --initial-advertise-peer-urls "http://127.0.0.1:$((port + 1))" \
        --initial-cluster "shot=http://127.0.0.1:$((port + 1))" \
        >"$work/etcd.log" 2>&1 &
    pids+=($!)
    url="etcd://127.0.0.1:$port/fleet"
    export HOME="$work" FNO_CLAIMS_STORE="$url"
    for _ in $(seq 50); do "$bin" list --store "$url" >/dev/null 2>&1 && break; sleep 0.2; done
    # Claims on each host's own root, taken the file protocol's way.
    take() { # ROOT KEY HOLDER TTL REASON
        "$bin" --root "$1" acquire "$2" --holder "$3" --ttl "$4" --reason "$5" >/dev/null
    }
    publish() { # HOSTNAME MACHINE-ID ROOT
        unshare --uts sh -c 'hostname "$0"; exec "$@"' "$1" \
            env CLAIMTOP_TEST_MACHINE_ID="$2" "$bin" publish --root "$3" \
            --store "$url" --lease-ttl 3s >"$work/$1.log" 2>&1 &
        pids+=($!)
    }
    for h in build-01 build-02 gpu-07; do mkdir -p "$work/$h"; done
    take "$work/build-01" "repo/api:migrate" "agent:codex-3" 1h "schema v42"
    take "$work/build-01" "repo/api:lint" "agent:claude-1" 20m "lint pass"
    take "$work/build-01" "deploy/staging" "ci:runner-7" 45m "release 2.4"
    take "$work/build-02" "repo/web:e2e" "ci:runner-2" 30m "nightly e2e"
    take "$work/build-02" "deploy/staging" "agent:codex-9" 10m "hotfix"
    take "$work/gpu-07" "train/llm-small" "agent:trainer" 2h "epoch 3"
    publish build-01 m-build-01 "$work/build-01"
    publish build-02 m-build-02 "$work/build-02"
    publish gpu-07 m-gpu-07 "$work/gpu-07"
    # Two claims kept in etcd itself, beside the published ones.
    "$bin" acquire "cluster/leader" --holder "svc:scheduler" --ttl 5m --reason "leader lease" >/dev/null
    "$bin" acquire "deploy/prod" --holder "pty:alice" --ttl 15m --reason "release 2.4" >/dev/null
    sleep 3
    # gpu-07 dies without a word: its lease takes its claims, the host stays listed.
    kill -9 "${pids[3]}"
    sleep 5
fi

if [ "$view" = fleet ]; then
    echo "==> running claimtop --store $url in tmux (160x48) for ${settle}s"
    tmux -S "$sock" -f /dev/null new-session -d -s shot -x 160 -y 48 \
        -e TERM=tmux-256color -e COLORTERM=truecolor -e HOME="$work" "$bin --store $url"
else
    echo "==> running claimtop --demo in tmux (160x48) for ${settle}s"
    tmux -S "$sock" -f /dev/null new-session -d -s shot -x 160 -y 48 \
        -e TERM=tmux-256color -e COLORTERM=truecolor "$bin --demo"
fi
sleep "$settle"
keys() { for k in "$@"; do tmux -S "$sock" send-keys -t shot "$k"; done; }
if [ "$view" = timeline ]; then
    # The timeline zoomed to the last two minutes, the cursor half a minute
    # back on the key whose holder keeps dying (its tenures end reclaimed
    # as stale), so the facts below show such an ending.
    keys t + + + j j j j j j j j j j H H H
elif [ "$view" = fleet ]; then
    # A published copy selected, so the detail pane says whose it is.
    keys j j
else
    # Select a live row further down so the detail pane shows a claim's
    # record and its history, not the corrupted file sorted first.
    keys j j j j j j j j
fi
sleep 1

echo "==> capturing the pane"
tmux -S "$sock" capture-pane -e -p -t shot > "assets/$view.ansi"
tmux -S "$sock" send-keys -t shot q

echo "==> rendering assets/$view.svg"
python3 assets/ansi2svg.py "assets/$view.ansi" "assets/$view.svg" --cols 160 --rows 48

if command -v rsvg-convert >/dev/null 2>&1; then
    rsvg-convert "assets/$view.svg" -o "$work/$view.png"
    cp "$work/$view.png" "${TMPDIR:-/tmp}/claimtop-$view.png"
    echo "==> PNG preview at ${TMPDIR:-/tmp}/claimtop-$view.png"
fi
