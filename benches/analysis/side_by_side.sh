#!/usr/bin/env bash
# Whole analyses of two checkouts side by side: for each trace, 3 rounds of (before, after),
# the order alternating round by round, each analysis in a fresh process (the session's
# start included) with benches/analysis/profile_analysis.py --no-log; prints the load
# average before each run and each run's stage times.
#   bash benches/analysis/side_by_side.sh /work/main/python python /tmp/np_hello250 /tmp/np_hello25000
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="${PYTHON:-$here/../../.venv/bin/python}"
before="$(cd "$1" && pwd)" after="$(cd "$2" && pwd)" || exit 2
shift 2
[ -x "$python" ] || { echo "no Python at $python (set PYTHON)" >&2; exit 2; }
for trace in "$@"; do
  for round in 1 2 3; do
    if [ $((round % 2)) -eq 1 ]; then order="before after"; else order="after before"; fi
    for side in $order; do
      if [ "$side" = before ]; then path="$before"; else path="$after"; fi
      echo "== $trace round $round $side load $(cut -d' ' -f1 /proc/loadavg)"
      (cd /tmp && PYTHONPATH="$path" timeout 900 "$python" "$here/profile_analysis.py" "$trace" --no-log 2>&1 \
        | grep "in all\|session start\|Error")
    done
  done
done
