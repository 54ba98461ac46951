"""Bad settings are clear errors: an `AutoscaleSettingsError` (a `timely_py.TimelyError`
and a `ValueError`) naming the setting and the value."""

import pytest
import timely_py
from timely_py.autoscale import AutoscaleSettingsError, Autoscaler, Settings

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize("keywords, message", [
    ({"min_processes": 3, "max_processes": 2}, r"min_processes \(3\) is larger than max_processes \(2\)"),
    ({"min_processes": 0}, "min_processes must be at least 1, not 0"),
    ({"max_processes": 2.5}, "max_processes must be an int, not float"),
    ({"min_processes": True}, "min_processes must be an int, not bool"),
    ({"target": 0.0}, r"target must lie in \(0, 1\), not 0.0"),
    ({"target": 1.0}, r"target must lie in \(0, 1\), not 1.0"),
    ({"target": -0.5}, r"target must lie in \(0, 1\)"),
    ({"target": float("nan")}, "target must be a finite number, not nan"),
    ({"target": "0.7"}, "target must be a finite number, not '0.7'"),
    ({"band": (0.8, 0.9)}, r"band \(0.8, 0.9\) must satisfy 0 < low <= target \(0.7\) <= high <= 1"),
    ({"band": (0.5, 1.2)}, "must satisfy"),
    ({"band": [0.5, 0.9]}, "band must be a pair"),
    ({"window": 0}, "window must be a positive number of seconds, not 0"),
    ({"stabilisation": -1}, "stabilisation must be seconds >= 0, not -1"),
    ({"min_useful": -0.1}, "min_useful must be seconds >= 0"),
    ({"interval": -1.0}, "interval must be seconds >= 0, not -1.0"),
    ({"max_step": 0}, "max_step must be at least 1, not 0"),
    ({"metrics_only": "yes"}, "metrics_only must be True or False, not 'yes'"),
    ({"sources": "everywhere"}, "sources must be one of"),
])
def test_bad_settings_are_clear_errors(keywords, message):
    with pytest.raises(AutoscaleSettingsError, match=message) as raised:
        Settings(**keywords)
    assert isinstance(raised.value, timely_py.TimelyError) and isinstance(raised.value, ValueError)


def test_good_settings_and_the_default_band():
    settings = Settings(min_processes=2, max_processes=2, target=0.5, window=0.5, stabilisation=0)
    assert settings.band == (0.35, 0.75) and (settings.low, settings.high) == (0.35, 0.75)
    assert Settings(band=(0.7, 0.7)).band == (0.7, 0.7)


def test_a_tick_without_a_known_cluster_size_says_what_to_pass():
    with pytest.raises(timely_py.TimelyError, match="pass tick\\(worker\\), or processes= and workers_per_process="):
        Autoscaler().tick()
