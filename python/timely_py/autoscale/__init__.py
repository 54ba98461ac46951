"""A live autoscaler: it reads the workers' trace events as they happen, computes DS2's
signals per operator (true processing and output rates over a sliding window), decides how
many processes the workload needs (the bottleneck operator decides, since every worker runs
every operator), and adds processes or makes them leave through the launcher, without a
restart (``docs/autoscaling.md``).

    >>> from timely_py import autoscale
    >>> settings = autoscale.Settings(min_processes=2, max_processes=4, target=0.7)
    >>> scaler = autoscale.Autoscaler(settings)      # trace_callback=scaler.observe
    >>> scaler.settings.band
    (0.49, 0.85)

The parts, one concern each: `errors` (the exceptions), `settings` (what it may do, checked),
`graph` (operators and channels from the trace), `window` (recent operator runs and
messages, pyarrow), `signals` (DS2's rates from them), `decision` (decisions that explain
themselves), `policy` (the arithmetic), `contributors` (where the window's time went:
critical path or useful time), `actions` (joins and leaves on a thread of their own),
`keyed` (Megaphone bins moved around joins and leaves), `bins` (skew: a keyed operator's
load per bin, the instances its bins can use, layouts that even it), `controller` (`Autoscaler`: the
loop a program drives), `testing` (hand-built signals).
"""

from __future__ import annotations

from .actions import ActionRunner, Actuator, LauncherActuator, RecordingActuator
from .bins import BinLoad, balance
from .contributors import Contributor, Contributors, CriticalPaths
from .controller import Autoscaler
from .decision import ACTIONS, Decision, OperatorDemand
from .errors import AutoscaleError, AutoscaleSettingsError
from .graph import Edge, Graph, Operator
from .keyed import DEFAULT_STRATEGY, KeyedState
from .policy import Policy
from .settings import ENV_AUTOSCALE, SOURCE_MODES, Settings
from .signals import OperatorSignals, Signals, WorkerSignals, compute_signals
from .window import EventWindow

__all__ = [
    "ACTIONS",
    "ActionRunner",
    "Actuator",
    "AutoscaleError",
    "AutoscaleSettingsError",
    "Autoscaler",
    "BinLoad",
    "Contributor",
    "Contributors",
    "CriticalPaths",
    "DEFAULT_STRATEGY",
    "Decision",
    "ENV_AUTOSCALE",
    "Edge",
    "EventWindow",
    "Graph",
    "KeyedState",
    "LauncherActuator",
    "Operator",
    "OperatorDemand",
    "OperatorSignals",
    "Policy",
    "RecordingActuator",
    "SOURCE_MODES",
    "Settings",
    "Signals",
    "WorkerSignals",
    "balance",
    "compute_signals",
]
