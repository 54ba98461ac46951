"""A process whose generic source never stops leaves the cluster (`tests/cluster/test_source_leaving.py`):
the plan of a seed that the cluster script (`cluster/scripts/source_leaving.py`) and the test
share, the launcher run that carries it out, and the checks against the sequential reference.

Every worker runs a generic `scope.source` named "Numbers" that gives the numbered records
`records(epoch, worker)` at every epoch, one epoch per `PACE` seconds, downgrading its
capability as it goes; the sources of the process that stays stop after `stay_epochs` epochs,
those of the leaving process never stop and never look at `worker.leaving`. Each source
touches its capability in every run in the plan's way (`TOUCHES`), so the first use after the
leave released it is that one. The records go through a plain `exchange` and a keyed
`count_by_key`. The leaving process leaves once its source has emitted `leave_at` epochs:
its first worker calls `worker.leave()` ("leave", and "fail", where its source then raises an
unrelated exception), or the first worker of process `remover` asks the launcher once its
probe passed `leave_at` ("remove"). With `join`, worker 0 first asks the launcher for a process
in epoch `join_at`; the joined workers build the same dataflow, feed from the first epoch their
source is given, and the joined process may be the leaver or the remover. The leave is asked
only once the asking worker saw the join, and the sources that stay stop `stay_epochs` epochs
after their worker saw it (a source stopped before the join would leave the joiner's without
a capability). Each worker writes to `OUTDIR/W.json`:

    {"worker": W, "leaving": bool, "members": [...], "epoch": E (next epoch its source would emit),
     "stop_at": epoch its source stops at if it stays, "joined": bool (a joined worker),
     "stopped": None or [exception type, message] (what ended its source's logic),
     "emitted": [[epoch, key, worker, epoch, i], ...] (records its source gave),
     "exchange": [[epoch, key, worker, epoch, i], ...], "counts": [[epoch, key, count], ...]}
"""

import json
import random
from collections import Counter
from dataclasses import dataclass

from support.cluster import write_hostfile
from support.launched import Launched
from support.paths import CLUSTER_SCRIPTS

SCRIPT = CLUSTER_SCRIPTS / "source_leaving.py"
#: Seconds between two epochs of a source.
PACE = 0.002
#: How a source touches its capability in every run, first thing: reads `time`, `downgrade`s
#: it to the epoch it emits next, or (in runs where no epoch is due) gives an empty batch
#: with it or makes a `delayed` one (then also gives through a delayed capability).
TOUCHES = ("time", "downgrade", "give", "delayed")
#: How long one launch of the script may take.
RUN_TIMEOUT = 90
#: What the source of a "fail" run raises once its capability is gone.
FAILURE = "source broke after the leave"


@dataclass(frozen=True)
class Plan:
    seed: int
    processes: int
    workers: int  # per process
    how: str  # "leave", "remove" or "fail"
    leaver: int  # the process that leaves
    remover: int  # with "remove": the process whose first worker asks the launcher
    leave_at: int  # the leave is asked once the leaver's source emitted this many epochs (from its first)
    stay_epochs: int  # epochs the sources of the processes that stay emit (after the join, if any)
    touch: str  # one of TOUCHES
    keys: tuple
    join: bool  # worker 0 asks the launcher for one more process first
    join_at: int  # with `join`, the epoch in which worker 0 asks

    @property
    def final_processes(self):
        """The processes of the run, the joined one included."""
        return self.processes + self.join

    @property
    def leavers(self):
        """The workers of the leaving process."""
        return list(range(self.leaver * self.workers, (self.leaver + 1) * self.workers))

    def records(self, epoch, worker):
        """The numbered records worker `worker`'s source gives at `epoch` (0 to 3 of them)."""
        rng = random.Random(f"{self.seed}:{epoch}:{worker}")
        return [(rng.choice(self.keys), worker, epoch, i) for i in range(rng.randint(0, 3))]


def plan(seed, processes, workers, how, join=False):
    """The plan of `seed` on `processes` processes of `workers` workers each (and one that
    joins, with `join`)."""
    rng = random.Random(seed)
    final = processes + join
    leaver = rng.randrange(final)
    ints = rng.sample(range(-20, 200), rng.randint(3, 10))
    return Plan(
        seed=seed, processes=processes, workers=workers, how=how, leaver=leaver,
        remover=rng.choice([p for p in range(final) if p != leaver]),
        leave_at=rng.randint(2, 40), stay_epochs=rng.randint(1, 80), touch=TOUCHES[seed % len(TOUCHES)],
        keys=tuple(i if rng.random() < 0.5 else f"k{i}" for i in ints),
        join=join, join_at=rng.randint(0, 3),
    )


@dataclass
class Run:
    """What one launch did: the launcher's status and output, and `workers[W]`, worker W's JSON."""

    plan: Plan
    status: int
    workers: dict
    out: str
    err: str

    def emitted(self):
        return Counter(tuple(r) for data in self.workers.values() for r in data["emitted"])

    def received(self):
        return Counter(tuple(r) for data in self.workers.values() for r in data["exchange"])

    def results(self, operator):
        """`(epoch, key, count, worker)` of every result `count_by_key` emitted (the shape
        `support.rescaling.keyed_errors` reads)."""
        assert operator == "counts"
        return [(e, k, c, w) for w, data in self.workers.items() for e, k, c in data["counts"]]


def launch_run(directory, seed, processes, workers, how, join=False):
    """Runs the script of `seed` under the launcher and returns its `Run` (failed or not)."""
    p = plan(seed, processes, workers, how, join)
    outdir = directory / "workers"
    outdir.mkdir()
    hostfile, _ = write_hostfile(directory, p.final_processes)
    with Launched(directory, "-n", processes, "-w", workers, "--hostfile", hostfile,
                  SCRIPT, seed, outdir, processes, workers, how, "join" if join else "stay") as run:
        status = run.status(RUN_TIMEOUT)
        out, err = run.out(), run.err()
    found = {int(path.stem): json.loads(path.read_text()) for path in outdir.glob("*.json")}
    return Run(p, status, found, out, err)


def reference_counts(run):
    """The sequential program's `count_by_key`: per (epoch, key), the records emitted."""
    counts = Counter()
    for (epoch, key, *_), times in run.emitted().items():
        counts[(epoch, key)] += times
    return dict(counts)


def exchange_errors(run):
    """What is wrong with the `exchange`'s deliveries (every emitted record exactly once), or None."""
    emitted, received = run.emitted(), run.received()
    if emitted == received:
        return None
    return (f"missing {sorted((emitted - received).elements(), key=repr)[:8]}, "
            f"extra {sorted((received - emitted).elements(), key=repr)[:8]}")
