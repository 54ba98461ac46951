"""The example programs, run as users run them: `python examples/X.py ... -w N`."""

import importlib.util
import random
import re
from collections import Counter, deque

import pytest
import timely_py as timely
from support.cluster import Cluster, write_hostfile
from support.launched import Launched
from support.paths import EXAMPLES
from support.processes import python_subprocess, run_example

# --- hello.py -------------------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2, 3])
def test_hello_sees_every_record_once_on_its_worker(workers):
    out = run_example("hello.py", "-w", str(workers))
    seen = re.findall(r"^worker (\d+): seen (\d+)$", out, flags=re.MULTILINE)
    assert len(seen) == len(out.splitlines()), f"unexpected output:\n{out}"
    records = Counter(int(x) for _, x in seen)
    assert records == Counter(range(10)), "every record 0..9 exactly once"
    for worker, x in seen:
        assert int(worker) == int(x) % workers


def test_hello_without_arguments_uses_one_worker():
    out = run_example("hello.py")
    assert sorted(out.splitlines()) == sorted(f"worker 0: seen {x}" for x in range(10))


def test_hello_takes_rounds_and_a_pause():
    out = run_example("hello.py", "3", "0.01", "-w", "2")
    assert sorted(out.splitlines()) == sorted(f"worker {x % 2}: seen {x}" for x in range(3))


def test_a_third_process_joins_a_running_hello(tmp_path):
    """The issue's command: `hello.py -n 2 -p 2 --join 0 --nn 3` joins a 2-process hello that
    runs 40 rounds of 0.05 s; worker 0 routes by x mod 2, then by x mod 3 once it counts the
    new worker, and every record is seen exactly once."""
    with Cluster(tmp_path, 3) as cluster:
        cluster.processes = 2  # the hostfile lists three addresses; two processes start
        for index in range(2):
            cluster.start(index, [EXAMPLES / "hello.py", 40, 0.05])
        cluster.wait_for_output(1, r"^worker 1: seen 3$")
        cluster.start(2, [EXAMPLES / "hello.py", "--join", 0, "--nn", 3])
        cluster.assert_succeeded()
        records = sorted((int(x), int(w)) for i in range(3)
                         for w, x in re.findall(r"^worker (\d+): seen (\d+)$", cluster.stdout(i), re.M))
    assert [x for x, _ in records] == list(range(len(records))), "every record exactly once"
    assert len(records) >= 40
    switches = [s for s in range(len(records) + 1) if all(w == (x % 2 if x < s else x % 3) for x, w in records)]
    assert switches and switches[0] >= 4, records
    assert any(w == 2 for _, w in records), "the joined worker saw nothing"


# --- rescale_safe_word_count.py ------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", [1, 2])
def test_rescale_safe_word_count_stays_exact_while_a_process_joins(tmp_path, workers):
    """The docstring's command (on free ports): worker 0 asks for a process in epoch 3; the
    per-epoch counts (count_by_key) and the running totals (state_machine, bins moved to the
    new workers) equal a plain count of the words fed, and the joined workers count too."""
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "-w", workers, "--hostfile", hostfile,
                  EXAMPLES / "rescale_safe_word_count.py", 8, 3) as run:
        assert run.status() == 0, run.out() + run.err()
    out = run.out()
    assert "[0] worker 0: epoch 3, asking for a process: 2" in out
    grew = re.search(rf"^\[0\] worker 0: epoch \d+, {3 * workers} workers now: moving (\d+) of 32 bins", out, re.M)
    assert grew and int(grew.group(1)) > 0, out
    assert re.search(r"^\[0\] worker 0: exact: \d+ per-epoch counts and the running totals of 21 words", out, re.M), out
    made = {int(w): (int(c), int(u)) for w, c, u in
            re.findall(r"worker (\d+): (\d+) per-epoch counts, (\d+) running-total updates$", out, re.M)}
    assert sorted(made) == list(range(3 * workers)), out
    joined = [made[w] for w in range(2 * workers, 3 * workers)]
    assert all(c > 0 for c, _ in joined) and any(u > 0 for _, u in joined), f"the joined workers counted nothing: {made}"


# --- scale_in.py ----------------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", [1, 2])
def test_scale_in_stays_exact_while_a_process_leaves(tmp_path, workers):
    """The docstring's command: worker 0 asks process 1 to leave in epoch 4; its workers leave
    after counting, the others run on without them, and the counts equal the words fed."""
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 3, "-w", workers, "--hostfile", hostfile, EXAMPLES / "scale_in.py", 12, 4) as run:
        assert run.status() == 0, run.out() + run.err()
    out, err = run.out(), run.err()
    assert "[0] worker 0: epoch 4, asked process 1 to leave" in out
    assert "[launch] process 1 left the cluster" in err, err
    leavers = list(range(workers, 2 * workers))
    left = [int(w) for w in re.findall(r"^\[1\] worker (\d+): leaving after epoch \d+", out, re.M)]
    assert sorted(left) == leavers, out
    stayers = [w for w in range(3 * workers) if w not in leavers]
    members = re.findall(r"^\[\d\] worker (\d+): \d+ \(epoch, word\) pairs counted, members \[([\d, ]+)\]$", out, re.M)
    assert sorted(int(w) for w, _ in members) == stayers, out
    assert all([int(m) for m in listed.split(", ")] == stayers for _, listed in members), out
    assert re.search(r"^\[0\] worker 0: exact: \d+ \(epoch, word\) counts equal the \d+ words fed$", out, re.M), out


# --- skewed_word_count.py -------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_skewed_word_count_is_exact_and_spread_evens_out_the_normalizing(tmp_path):
    """The docstring's commands, shortened: both layouts count exactly; after routing by word
    the worker that owns the most frequent words normalizes most of them, while where drawn
    every worker normalizes exactly the words it drew."""
    epochs, words = 4, 300
    normalized = {}
    for layout in ("--keyed", "--spread"):
        (tmp_path / layout).mkdir()
        with Launched(tmp_path / layout, "-n", 2, "-w", 1, EXAMPLES / "skewed_word_count.py", epochs, words,
                      layout) as run:  # fmt: skip
            assert run.status() == 0, run.out() + run.err()
        out = run.out()
        assert re.search(rf"^\[0\] {2 * epochs * words} words on 2 workers, .*: [\d.]+ s; counts exact$", out, re.M), out
        seen = re.findall(r"^\[(\d)\] worker (\d): normalized (\d+) words$", out, re.M)
        normalized[layout] = sorted(int(count) for _, _, count in seen)
    assert normalized["--spread"] == [epochs * words] * 2
    assert sum(normalized["--keyed"]) == 2 * epochs * words
    # The most frequent word is normalized on one worker, with every other word it owns.
    drawn = Counter(w for index in range(2) for epoch in range(epochs) for w in example_draw(index, epoch, words))
    assert normalized["--keyed"][1] >= drawn.most_common(1)[0][1] > epochs * words / 2, (normalized, drawn)


def example_draw(worker_index, epoch, count):
    """The words `skewed_word_count.py` draws (its own `draw`, loaded from the file)."""
    spec = importlib.util.spec_from_file_location("skewed_word_count", EXAMPLES / "skewed_word_count.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.draw(worker_index, epoch, count)


def test_skewed_word_count_refuses_both_layouts_at_once():
    done = python_subprocess([EXAMPLES / "skewed_word_count.py", "--keyed", "--spread"], timeout=60)
    assert done.returncode == 2
    assert "usage: skewed_word_count.py" in done.stderr


# --- loops.py -------------------------------------------------------------------------------


def collatz_steps(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


@pytest.mark.parametrize("workers", [1, 2])
def test_loops_counts_collatz_steps(workers):
    out = run_example("loops.py", "300", "-w", str(workers))
    lines = out.splitlines()
    assert lines[-1] == "ok"
    assert lines[0] == f"collatz: numbers 1..300 on {workers} workers"
    steps = {n: collatz_steps(n) for n in range(1, 301)}
    longest = max(steps, key=lambda n: (steps[n], -n))
    assert f"longest: {longest} takes {steps[longest]} steps" in lines
    assert f"total steps: {sum(steps.values())}" in lines
    histogram = {int(low): int(count) for low, count in re.findall(r"^\s+(\d+)-\s*\d+ steps: (\d+)$", out, re.M)}
    assert sum(histogram.values()) == 300


def test_loops_default_size_and_attached_worker_option():
    out = run_example("loops.py", "-w2")
    assert "collatz: numbers 1..1000 on 2 workers" in out
    assert "longest: 871 takes 178 steps" in out
    assert out.splitlines()[-1] == "ok"


# --- bfs.py ---------------------------------------------------------------------------------


def reference_bfs(nodes, edges, seed):
    """A sequential BFS on the graph the example documents: `random.Random(seed)` drawing
    `(src, dst)` pairs with `randrange(nodes)`."""
    rng = random.Random(seed)
    graph = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(edges)]
    adjacency = {}
    for src, dst in graph:
        adjacency.setdefault(src, []).append(dst)
    distance, queue = {0: 0}, deque([0])
    while queue:
        node = queue.popleft()
        for other in adjacency.get(node, ()):
            if other not in distance:
                distance[other] = distance[node] + 1
                queue.append(other)
    return distance


def parse_bfs(out):
    reached = re.search(r"^reached (\d+) of (\d+) nodes$", out, re.M)
    assert reached, out
    histogram = {int(d): int(n) for d, n in re.findall(r"^  (\d+): (\d+)$", out, re.M)}
    return int(reached.group(1)), int(reached.group(2)), histogram


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("nodes,edges,seed", [(500, 1200, 3), (2000, 5000, 12)])
def test_bfs_matches_a_sequential_bfs(workers, nodes, edges, seed):
    out = run_example("bfs.py", str(nodes), str(edges), str(seed), "-w", str(workers))
    assert out.splitlines()[-1] == "ok"
    assert out.splitlines()[0] == f"bfs: {nodes} nodes, {edges} edges, seed {seed}, {workers} workers"
    reached, total, histogram = parse_bfs(out)
    expected = reference_bfs(nodes, edges, seed)
    assert total == nodes
    assert reached == len(expected)
    assert histogram == dict(Counter(expected.values()))
    assert reached > 1, "the test graph should reach beyond the root"


def test_bfs_output_does_not_depend_on_the_worker_count():
    one = run_example("bfs.py", "800", "2000", "5", "-w", "1")
    four = run_example("bfs.py", "-w", "4", "800", "2000", "5")
    assert parse_bfs(one) == parse_bfs(four)


def test_bfs_on_a_graph_without_edges_reaches_only_the_root():
    out = run_example("bfs.py", "10", "0", "1")
    assert parse_bfs(out) == (1, 10, {0: 1})
    assert out.splitlines()[-1] == "ok"


def test_program_args_leave_out_the_runtime_options():
    argv = ["500", "-w", "2", "--workers=3", "-w4", "--threads", "1", "7", "--", "-w", "9"]
    assert timely.program_args(argv) == ["500", "7", "--", "-w", "9"]
    with pytest.raises(ValueError, match="-w"):
        timely.program_args(["-w"])


# --- autoscaled_pipeline.py ------------------------------------------------------------------


@pytest.mark.cluster
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_autoscaled_pipeline_grows_to_three_processes_and_stays_exact(tmp_path):
    """The docstring's command (on free ports), 10 s of 400 orders/s: two processes cannot
    keep up with a 5 ms remote call per order, the autoscaler asks for a third, which takes
    orders; the revenues every worker printed add up to the sequential reference."""
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--autoscale", "--max", 3,
                  EXAMPLES / "autoscaled_pipeline.py", "--seconds", 10) as run:
        assert run.status(timeout=120) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    assert "[launch] autoscaling between 2 and 3 processes at target utilisation 0.7" in err
    assert re.search(r"^\[0\] epoch \d+: scale out from 2 to 3 processes: Map#\d+ is at utilisation", out, re.M), out
    assert "[launch] process 2 started: it joins the cluster through worker 0" in err
    workers = {int(w): (int(n), int(r)) for w, n, r in
               re.findall(r"^\[\d\] worker (\d+): (\d+) orders, revenue (\d+)$", out, re.M)}
    assert sorted(workers) == [0, 1, 2] and workers[2][0] > 0, out
    reference = re.search(r"^\[0\] reference: (\d+) orders, revenue (\d+); 1 actions, 3 processes at the end$",
                          out, re.M)
    assert reference, out
    assert sum(n for n, _ in workers.values()) == int(reference.group(1)) == 4000
    assert sum(r for _, r in workers.values()) == int(reference.group(2))


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_autoscaled_pipeline_in_metrics_only_mode_explains_and_stays(tmp_path):
    hostfile, _ = write_hostfile(tmp_path, 3)
    with Launched(tmp_path, "-n", 2, "--hostfile", hostfile, "--autoscale", "--max", 3,
                  EXAMPLES / "autoscaled_pipeline.py", "--seconds", 8, "--metrics-only") as run:
        assert run.status(timeout=90) == 0, run.out()[-3000:] + run.err()
    out, err = run.out(), run.err()
    assert re.search(r"^\[0\] epoch \d+: scale out from 2 to 3 processes \(metrics only: not done\)", out, re.M), out
    assert "process 2 started" not in err
    assert re.search(r"^\[0\] reference: 3200 orders, revenue \d+; 0 actions, 2 processes at the end$", out, re.M)
