"""The generic operators' public API: the classes they use (capabilities, input and output
ports, sessions, notificators, frontiers, operator info) are exported, and `unary`,
`unary_frontier`, `unary_notify`, `binary`, `binary_frontier`, `binary_notify`, `sink` and
`scope.source` are documented."""

import timely_py as timely


def test_classes_are_exported():
    for name in [
        "Capability",
        "InputCapability",
        "InputPort",
        "OutputPort",
        "OutputSession",
        "Notificator",
        "Frontier",
        "OperatorInfo",
    ]:
        assert name in timely.__all__
        assert isinstance(getattr(timely, name), type)
    for method in ["unary", "unary_frontier", "unary_notify", "binary", "binary_frontier", "binary_notify", "sink"]:
        assert getattr(timely.Stream, method).__doc__
    assert timely.Scope.source.__doc__
