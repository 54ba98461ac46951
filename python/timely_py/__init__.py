"""timely_py: timely dataflow with a Rust core, driven from Python.

Build a dataflow on every worker, feed it through an `InputHandle`, and step the worker
until a `ProbeHandle` shows the results are complete::

    import sys, timely_py as timely

    def main(worker):
        inp, probe = timely.InputHandle(), timely.ProbeHandle()
        with worker.dataflow() as scope:
            (scope.input_from(inp)
                  .exchange(lambda x: x)
                  .inspect(lambda x: print(f"worker {worker.index}: seen {x}"))
                  .probe_with(probe))
        for rnd in range(10):
            if worker.index == 0:
                inp.send(rnd)
            inp.advance_to(rnd + 1)
            while probe.less_than(inp.time):
                worker.step()

    timely.execute_from_args(sys.argv[1:], main)

Records are any Python objects; timestamps are non-negative ints at a dataflow's root and
tuples inside loops.

Between processes, records are encoded by `timely_py.codec` (a native encoding for
built-in types, pickle for the rest); its `encode` and `decode` can be used directly.
"""

from ._core import (
    ClusterError,
    CodecError,
    DataflowError,
    InputHandle,
    LeavingError,
    LoopHandle,
    ProbeHandle,
    Scope,
    Stream,
    TimelyError,
    Worker,
    WorkerCancelled,
    execute,
    execute_from_args,
    program_args,
    route_key,
)
from ._core import (
    Activity,
    Capability,
    Frontier,
    InputCapability,
    InputPort,
    Notificator,
    OperatorInfo,
    OutputPort,
    OutputSession,
)

__all__ = [
    "ClusterError",
    "CodecError",
    "DataflowError",
    "InputHandle",
    "LeavingError",
    "LoopHandle",
    "ProbeHandle",
    "Scope",
    "Stream",
    "TimelyError",
    "Worker",
    "WorkerCancelled",
    "execute",
    "execute_from_args",
    "program_args",
    "Activity",
    "route_key",
    "Capability",
    "Frontier",
    "InputCapability",
    "InputPort",
    "Notificator",
    "OperatorInfo",
    "OutputPort",
    "OutputSession",
]
