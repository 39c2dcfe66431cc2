#!/usr/bin/env bash
# Regenerate the README screenshot from a real `claimtop --demo` run:
# the dashboard runs in a private, detached tmux server at 160x48, the pane is
# captured with its colours, and ansi2svg.py draws it as SVG.
#
#   assets/capture.sh [seconds-to-let-the-demo-run]   (default 6)
#   assets/capture.sh SECONDS timeline                  the timeline (`t`) instead,
#                                                       into assets/timeline.{ansi,svg}
#
# Needs tmux and python3; rsvg-convert (librsvg2-bin), when present, also
# writes a PNG next to the SVG for a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
settle="${1:-6}"
view="${2:-dashboard}"

echo "==> building claimtop"
cargo build --quiet
bin="$PWD/target/debug/claimtop"

work="$(mktemp -d)"
sock="$work/sock"
cleanup() {
    tmux -S "$sock" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

echo "==> running claimtop --demo in tmux (160x48) for ${settle}s"
tmux -S "$sock" -f /dev/null new-session -d -s shot -x 160 -y 48 \
    -e TERM=tmux-256color -e COLORTERM=truecolor "$bin --demo"
sleep "$settle"
keys() { for k in "$@"; do tmux -S "$sock" send-keys -t shot "$k"; done; }
if [ "$view" = timeline ]; then
    # The timeline zoomed to the last two minutes, the cursor half a minute
    # back on the key whose holder keeps dying (its tenures end reclaimed
    # as stale), so the facts below show such an ending.
    keys t + + + j j j j j j j j j j H H H
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
