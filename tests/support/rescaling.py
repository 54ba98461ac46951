"""Keyed operators across joins and leaves (`tests/cluster/test_keyed_rescaling.py`): the plan
of a seed that the cluster script (`cluster/scripts/keyed_rescaling.py`) and the test share,
the launcher run that carries it out, the sequential reference and the checks.

A plan draws from its seed the keys (12 to 30, ints and strs mixed), one or two joins (the
epoch at which worker 0 asks for the first, the worker that serves each, and how many epochs
after it counts the first joiner's workers it asks for the second: 0 is right after the
first joiner's bootstrap), and the epochs every worker runs at least. A plan with a leave
(`plan(seed, leave=True)`) starts 2 or 3 processes, has 0 to 2 joins, and then makes one
process leave (`timely_py.launch.remove_process`), drawn among all of them (process 0 and
joined ones included), some epochs after the last join. Each worker feeds
`records(epoch, worker)` every epoch until it has seen the final membership for `AFTER`
epochs, or until its process leaves, and writes what it fed and what each operator emitted
on it to `OUTDIR/W.json`:

    {"worker": W, "first_epoch": E, "last_epoch": L, "left": bool, "fed": [[epoch, key, value], ...],
     "exchange": [[epoch, key, value], ...],
     OP: [[epoch, key, result], ...] for OP in OPERATORS}
"""

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, replace

from support.cluster import write_hostfile
from support.launched import Launched
from support.paths import CLUSTER_SCRIPTS

SCRIPT = CLUSTER_SCRIPTS / "keyed_rescaling.py"
#: The processes the launcher starts for a plan without a leave; joins add one each.
PROCESSES = 2
#: Epochs every worker runs after it counted every joined worker.
AFTER = 6
#: Worker 0 pauses this long per epoch, so that a join lands in the middle of the epochs.
PAUSE = 0.03
#: How long one launch of the script may take.
RUN_TIMEOUT = 90
#: The keyed operators the script runs, each emitting one (key, result) per key and epoch:
#: `count_by_key()` on the keys, `count_by_key(key)` and `aggregate(key, sum)` on the
#: records, a `unary_notify(exchange=key)` summing per (time, key), emitting at notification,
#: and a Megaphone `keyed_unary` counting per (time, key) in per-key state.
OPERATORS = ("count_by_key", "count_by_key(key)", "aggregate", "unary_notify", "megaphone")
#: What each operator's result is, per (epoch, key), in the sequential reference.
RESULT_OF = {"count_by_key": "count", "count_by_key(key)": "count", "aggregate": "sum", "unary_notify": "sum",
             "megaphone": "count"}


@dataclass(frozen=True)
class Plan:
    seed: int
    keys: tuple
    epochs: int  # every worker runs at least until this epoch
    first_join_at: int  # worker 0 asks for the first process in this epoch
    second_join_gap: object  # None: one join; else epochs after worker 0 counted the first joiner
    servers: tuple  # per join, a fraction of the workers counted then: the serving worker
    initial: int = PROCESSES  # processes the launcher starts
    no_joins: bool = False  # a leave plan may have no join
    leaver: object = None  # None: no leave; else a fraction of the processes: the one that leaves
    leave_gap: int = 0  # epochs after the last join (or the start) worker 0 asks for the leave
    rejoin: bool = False  # after the leave, one more process joins

    @property
    def joins(self):
        if self.no_joins:
            return 0
        return 1 if self.second_join_gap is None else 2

    @property
    def processes(self):
        """Every process that takes part, joined ones included."""
        return self.initial + self.joins + self.rejoin

    @property
    def leaving_process(self):
        """The process that leaves, or None (never the one that joins after the leave)."""
        return None if self.leaver is None else int(self.leaver * (self.initial + self.joins))

    @property
    def final_processes(self):
        """The processes present at the end."""
        return self.processes - (self.leaver is not None)

    def server(self, join, peers):
        """The worker that serves join `join` (0 or 1) when the cluster counts `peers` workers."""
        return int(self.servers[join] * peers)

    def records(self, epoch, worker):
        """The `(key, value)` records worker `worker` feeds in `epoch` (0 to 8 of them)."""
        rng = random.Random(f"{self.seed}:{epoch}:{worker}")
        return [(rng.choice(self.keys), rng.randint(-3, 20)) for _ in range(rng.randint(0, 8))]


def plan(seed, leave=False, rejoin=False):
    """The plan of `seed`: joins only, or (`leave`) 0 to 2 joins and then a leave, and
    (`rejoin`) one more join after the leave."""
    rng = random.Random(seed)
    count = rng.randint(12, 30)
    ints = rng.sample(range(-50, 500), count)
    keys = [i if rng.random() < 0.5 else f"k{i}" for i in ints]  # ints and strs, all distinct
    joins = Plan(
        seed=seed,
        keys=tuple(keys),
        epochs=rng.randint(10, 16),
        first_join_at=rng.randint(1, 6),
        second_join_gap=rng.choice([None, 0, 0, rng.randint(1, 4)]),
        servers=(rng.random(), rng.random()),
    )
    if not leave:
        return joins
    rng = random.Random(f"{seed}:leave")
    initial = rng.choice([2, 3])
    return replace(joins, initial=initial, no_joins=initial == 3 and rng.random() < 0.5,
                   leaver=rng.random(), leave_gap=rng.randint(0, 4), rejoin=rejoin)


@dataclass
class Run:
    """What the workers of one launch wrote: `workers[W]` is worker W's JSON."""

    plan: Plan
    workers_per_process: int
    workers: dict
    out: str
    err: str
    how: str = "no"  # how a process left: "no" leave, "remove", "leave", ... (`launch_run`)

    @property
    def initial_peers(self):
        return self.plan.initial * self.workers_per_process

    @property
    def leavers(self):
        """The workers of the process that left (empty without a leave)."""
        p, w = self.plan.leaving_process, self.workers_per_process
        return [] if p is None else list(range(p * w, (p + 1) * w))

    def fed(self):
        return [tuple(r) for w in self.workers.values() for r in w["fed"]]

    def results(self, operator):
        """`(epoch, key, result, worker)` of every result `operator` emitted."""
        return [(e, k, v, w) for w, data in self.workers.items() for e, k, v in data[operator]]


def launch_run(directory, seed, workers, leave="no"):
    """Runs the script of `seed` under the launcher on the plan's processes of `workers`
    workers each, with room for its joins; checks that it succeeded and returns its `Run`.
    `leave` is "no" (a plan without a leave), "remove" (worker 0 asks the launcher to make
    the plan's process leave), "leave" (the process's first worker calls `worker.leave()`),
    "rejoin" (as "remove", then one more process joins), or "ignore" and "raise" (as "remove",
    and the leaving process's program feeds on: it catches each `LeavingError` until its
    dataflows are gone, or lets the first one end `main`)."""
    p = plan(seed, leave != "no", leave == "rejoin")
    outdir = directory / "workers"
    outdir.mkdir()
    hostfile, _ = write_hostfile(directory, p.processes)
    with Launched(directory, "-n", p.initial, "-w", workers, "--hostfile", hostfile,
                  SCRIPT, seed, outdir, workers, leave) as run:
        status = run.status(RUN_TIMEOUT)
        out, err = run.out(), run.err()
    assert status == 0, f"the launch failed ({status}):\n{out[-3000:]}\n{err[-6000:]}"
    found = {int(path.stem): json.loads(path.read_text()) for path in outdir.glob("*.json")}
    final = p.processes * workers
    assert sorted(found) == list(range(final)), f"not every worker wrote its output: {sorted(found)}\n{err}"
    return Run(p, workers, found, out, err, leave)


def reference(fed):
    """The sequential program's results: per (epoch, key), the count and the sum of the
    values every worker fed."""
    count, total = Counter(), defaultdict(int)
    for epoch, key, value in fed:
        count[(epoch, key)] += 1
        total[(epoch, key)] += value
    return {"count": dict(count), "sum": dict(total)}


def describe(epoch, key, results):
    shown = ", ".join(f"{value} on worker {worker}" for value, worker in sorted(results, key=repr))
    return f"(epoch {epoch}, {key!r}) -> [{shown}]"


def keyed_errors(run, operator, expected):
    """What is wrong with `operator`'s results against `expected` ((epoch, key) -> result), as
    one message per kind of error, or an empty list: (epoch, key) pairs with more than one
    result (a key split across workers), pairs with none, and single results of another value."""
    by_pair = defaultdict(list)
    for epoch, key, value, worker in run.results(operator):
        by_pair[(epoch, key)].append((value, worker))
    split = sorted((p for p, r in by_pair.items() if len(r) > 1), key=repr)
    missing = sorted((p for p in expected if p not in by_pair), key=repr)
    extra = sorted((p for p in by_pair if p not in expected), key=repr)
    wrong = sorted((p for p, r in by_pair.items() if len(r) == 1 and p in expected and r[0][0] != expected[p]),
                   key=repr)
    errors = []
    total = len(expected)
    if split:
        examples = "; ".join(describe(*p, by_pair[p]) for p in split[:4])
        sums = sum(1 for p in split if sum(v for v, _ in by_pair[p]) == expected.get(p))
        errors.append(f"{operator}: {len(split)} of {total} (epoch, key) pairs have results on more than one "
                      f"worker (keys split; {sums} of them add up to the reference), e.g. {examples}")
    if missing:
        errors.append(f"{operator}: no result for {len(missing)} of {total} (epoch, key) pairs, e.g. {missing[:4]}")
    if extra:
        errors.append(f"{operator}: results for {len(extra)} (epoch, key) pairs nobody fed, e.g. {extra[:4]}")
    if wrong:
        examples = "; ".join(f"{describe(*p, by_pair[p])} expected {expected[p]}" for p in wrong[:4])
        errors.append(f"{operator}: {len(wrong)} of {total} single results differ from the reference, e.g. {examples}")
    return errors


def exchange_errors(run):
    """What is wrong with the plain `exchange`'s deliveries against the records fed (each
    record exactly once), as a message, or None."""
    received = Counter(tuple(r) for data in run.workers.values() for r in data["exchange"])
    fed = Counter(run.fed())
    if received == fed:
        return None
    return (f"missing {sorted((fed - received).elements(), key=repr)[:8]}, "
            f"extra {sorted((received - fed).elements(), key=repr)[:8]}")


def all_keyed_errors(run):
    """`keyed_errors` of every operator of `OPERATORS` against the sequential reference."""
    expected = reference(run.fed())
    return [e for op in OPERATORS for e in keyed_errors(run, op, expected[RESULT_OF[op]])]


def joined_workers_share(run, operator):
    """The (epoch, key) pairs whose `operator` results joined workers emitted, and the number
    of distinct keys fed in epochs at which a joined worker was already feeding."""
    joined = {w for w in run.workers if w >= run.initial_peers}
    first = min(run.workers[w]["first_epoch"] for w in joined)
    keys_after = {k for e, k, _ in run.fed() if e >= first}
    taken = {(e, k) for e, k, _, w in run.results(operator) if w in joined}
    return taken, len(keys_after)
