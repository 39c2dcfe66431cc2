#!/usr/bin/env bash
# Regenerate the README screenshot from a real `claimtop --demo` run:
# the dashboard runs in a private, detached tmux server at 160x48, the pane is
# captured with its colours, and ansi2svg.py draws it as SVG.
#
#   assets/capture.sh [seconds-to-let-the-demo-run]   (default 6)
#
# Needs tmux and python3; rsvg-convert (librsvg2-bin), when present, also
# writes a PNG next to the SVG for a quick look.
set -euo pipefail
cd "$(dirname "$0")/.."
settle="${1:-6}"

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
# Select a live row further down so the detail pane shows a claim's record
# and its history, not the corrupted file sorted first.
for _ in 1 2 3 4 5 6 7 8; do tmux -S "$sock" send-keys -t shot j; done
sleep 1

echo "==> capturing the pane"
tmux -S "$sock" capture-pane -e -p -t shot > assets/dashboard.ansi
tmux -S "$sock" send-keys -t shot q

echo "==> rendering assets/dashboard.svg"
python3 assets/ansi2svg.py assets/dashboard.ansi assets/dashboard.svg --cols 160 --rows 48

if command -v rsvg-convert >/dev/null 2>&1; then
    rsvg-convert assets/dashboard.svg -o "$work/dashboard.png"
    cp "$work/dashboard.png" "${TMPDIR:-/tmp}/claimtop-dashboard.png"
    echo "==> PNG preview at ${TMPDIR:-/tmp}/claimtop-dashboard.png"
fi
