#!/usr/bin/env bash
# Sets everything up on a fresh machine and runs the main demo on local defaults:
#   1. the build (scripts/build.sh --analysis-later): .venv with timely_py from a release
#      build; the analysis extra downloads meanwhile and goes on downloading while the next
#      two sections run (they need only timely_py and pyarrow);
#   2. BFS on a random graph with two worker threads, from Python;
#   3. a word count over skewed words on a cluster of two processes of one worker (one per
#      core), started by the launcher and traced; the trace is checked, summarised and exported for Perfetto;
#   4. the trace's critical path, analysed on a local Spark: which operator on which worker
#      limited the run, in one sentence, with plots and a trace viewer;
#   5. the remedy the analysis points at (the per-record work done where records are drawn,
#      before routing them), timed side by side with the skewed run;
#   6. a cluster that grows while it runs: worker 0 asks the launcher for a third process in
#      epoch 4, which receives the word count's routing state; part of the per-word state moves
#      to it and worker 0 checks that the counts stay exact;
#   7. a cluster that shrinks while it runs: worker 0 asks the launcher to remove process 1 of
#      three in epoch 4; the per-epoch counts stay exact without it;
#   8. a cluster that sizes itself: process 0's autoscaler reads its own workers' trace events
#      and asks the launcher for a third process when the enrichment step cannot keep up; the
#      totals stay exact (the decision lines are printed, their details filtered out);
#   9. the engine's per-round latency (the Rust hello example).
# It ends by saying where the outputs are and how to do the same with your own program.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each section's heading starts with the seconds since the demo started.
section() { printf '\n=== [%d s] %s\n' "$SECONDS" "$*"; }
out="${TMPDIR:-/tmp}/timely_py-demo"
trace="$out/trace"
analysis="$out/analysis"
rm -rf "$out"
mkdir -p "$out"

section "building (scripts/build.sh --analysis-later)"
bash scripts/build.sh --analysis-later

section "BFS on a random graph, two worker threads (examples/bfs.py)"
.venv/bin/python examples/bfs.py -w 2

section "a skewed word count on 2 processes x 1 worker, traced (examples/skewed_word_count.py)"
.venv/bin/python -m timely_py.launch -n 2 -w 1 --trace "$trace" examples/skewed_word_count.py --keyed
.venv/bin/timely-py trace validate "$trace"
.venv/bin/timely-py trace summary "$trace"
.venv/bin/timely-py trace export "$trace" --format perfetto -o "$out/trace.json"

section "what limited the run: its critical path, on a local Spark (timely-py analyze)"
bash scripts/build.sh --wait-analysis
.venv/bin/timely-py analyze "$trace" --out "$analysis" --slice 100ms

section "the remedy: normalize words where they are drawn, before routing them (--spread)"
for layout in --keyed --spread; do
    .venv/bin/python -m timely_py.launch -n 2 -w 1 examples/skewed_word_count.py "$layout" 2>/dev/null | grep "normalized"
done

section "a running cluster grows: worker 0 asks the launcher for a third process in epoch 4 (examples/word_count_scale_out.py)"
.venv/bin/python -m timely_py.launch -n 2 -w 2 examples/word_count_scale_out.py 24 0.05 4 batched

section "a running cluster shrinks: worker 0 asks the launcher to remove process 1 of 3 in epoch 4 (examples/scale_in.py)"
.venv/bin/python -m timely_py.launch -n 3 -w 1 examples/scale_in.py 12 4

section "the cluster sizes itself: process 0's autoscaler reads its trace and adds a process (examples/autoscaled_pipeline.py)"
.venv/bin/python -m timely_py.launch -n 2 --autoscale --max 3 examples/autoscaled_pipeline.py 2>&1 | grep -v '^\[0\]   '

section "the engine's per-round latency (the Rust example hello; compiled on first use)"
# With timely-python in the selection, cargo resolves the shared crates' features as for the
# extension module (arrow's ffi, log's std), so the example reuses them: built alone, it
# compiled arrow, parquet and the engine a second time (about 90 s here).
cargo build --release -p timely-engine -p timely-python --example hello
target/release/examples/hello 100000 -w 1 --quiet

section "where everything is (the demo took $SECONDS s)"
cat <<EOF
trace of the skewed run:     $trace (checked, summarised above)
Perfetto timeline:           $out/trace.json (open it at ui.perfetto.dev)
critical-path analysis:      $analysis (Parquet tables)
  plots:                     $analysis/*.png
  trace viewer:              $analysis/viewer.html (open it in a browser)

The same with your own program (anything that calls timely_py.execute_from_args):
  .venv/bin/python -m timely_py.launch -n 2 -w 2 --trace my-trace my_program.py
  .venv/bin/timely-py analyze my-trace --out my-analysis
Mark your own work in the trace with  with worker.activity("load"): ...  (docs/tracing.md,
docs/critical-path.md).
EOF
