#!/usr/bin/env bash
# Renders the critical-path viewer of an analysis (OUT/viewer.html, written by
# timely_py.analysis.viewer.write_viewer) to a PNG with headless Chromium, the distribution's
# package (`apt-get install -y chromium`).
# Usage: scripts/viewer_screenshot.sh OUT [PNG] [WIDTH,HEIGHT]   (PNG: OUT/viewer.png, size 1600,900)
set -euo pipefail
if [ $# -lt 1 ]; then
    echo "usage: $0 OUT [PNG] [WIDTH,HEIGHT]" >&2
    exit 2
fi
page="$(cd "$1" && pwd)/viewer.html"
png="$(realpath -m "${2:-$1/viewer.png}")"
size="${3:-1600,900}"
if [ ! -f "$page" ]; then
    echo "$0: no $page (write it with timely_py.analysis.viewer.write_viewer)" >&2
    exit 2
fi
browser="$(command -v chromium || command -v chromium-browser || true)"
if [ -z "$browser" ]; then
    echo "$0: headless Chromium is needed: apt-get install -y chromium" >&2
    exit 2
fi
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: Chromium refuses to run as root with its sandbox (containers, CI).
"$browser" --headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$profile" \
    --hide-scrollbars --window-size="$size" --virtual-time-budget=5000 \
    --screenshot="$png" "file://$page" 2>/dev/null
test -s "$png"
echo "$png"
