"""Runs a one-record dataflow with the runtime's warnings captured through Python's
`logging`: each warning is printed on stdout as `LOGGED <logger> <level> <message>`, and
nothing reaches stderr."""

import logging
import sys

import timely_py as timely

handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("LOGGED %(name)s %(levelname)s %(message)s"))
runtime = logging.getLogger("timely_communication")
runtime.addHandler(handler)
runtime.propagate = False


def main(worker):
    inp, probe = timely.InputHandle(), timely.ProbeHandle()
    with worker.dataflow() as scope:
        scope.input_from(inp).exchange(lambda x: x).probe_with(probe)
    inp.send(worker.index)
    inp.advance_to(1)
    while probe.less_than(1):
        worker.step()


timely.execute_from_args(sys.argv[1:], main)
