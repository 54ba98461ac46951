"""`python -m timely_py.launch --autoscale [--min N --max M --target T]`: the options, their
checks, and the settings they hand every process in TIMELY_AUTOSCALE, which
`Settings.from_environment` (the `Autoscaler`'s default) reads."""

import json
import subprocess
import sys

import pytest
from support.paths import ROOT
from timely_py import TimelyError, launch
from timely_py.autoscale import ENV_AUTOSCALE, AutoscaleSettingsError, Autoscaler, Settings

pytestmark = pytest.mark.timeout(60)


def test_the_options_become_settings_in_every_process_environment():
    options = launch.parse_args(["-n", "2", "--autoscale", "--min", "2", "--max", "5", "--target", "0.6", "job.py"])
    assert options.autoscale == (2, 5, 0.6)
    assert options.room == 5, "--max alone plans addresses for the processes it may add"
    env = launch.child_environment(1, "s", "/c", options.autoscale_environment())
    assert json.loads(env[ENV_AUTOSCALE]) == {"min_processes": 2, "max_processes": 5, "target": 0.6}
    settings = Settings.from_environment(env, window=2.0)
    assert (settings.min_processes, settings.max_processes, settings.target, settings.window) == (2, 5, 0.6, 2.0)
    assert ENV_AUTOSCALE == launch.ENV_AUTOSCALE


def test_defaults_are_the_launch_size_and_its_room(monkeypatch):
    options = launch.parse_args(["-n", "3", "--autoscale", "job.py"])
    assert options.autoscale == (3, 7, 0.7) and options.room == 7
    with_room = launch.parse_args(["-n", "2", "--max-processes", "3", "--autoscale", "job.py"])
    assert with_room.autoscale == (2, 3, 0.7)
    plain = launch.parse_args(["-n", "2", "job.py"])
    assert plain.autoscale is None and plain.autoscale_environment() is None
    monkeypatch.setenv(ENV_AUTOSCALE, "{}")
    assert ENV_AUTOSCALE not in launch.child_environment(1, "s", "/c", None), "an inherited value is removed"
    monkeypatch.setenv(ENV_AUTOSCALE, json.dumps({"max_processes": 6}))
    assert Autoscaler().settings.max_processes == 6


@pytest.mark.parametrize("argv, message", [
    (["-n", "1", "--autoscale", "job.py"], "--autoscale needs -n 2 or more"),
    (["-n", "2", "--min", "1", "job.py"], "--min goes only with --autoscale"),
    (["-n", "2", "--max", "3", "--target", "0.5", "job.py"], "--max, --target go only with --autoscale"),
    (["-n", "2", "--autoscale", "--min", "4", "--max", "3", "job.py"], "--min 4 is above --max 3"),
    (["-n", "2", "--autoscale", "--max", "6", "--max-processes", "4", "job.py"], "--max 6 is above --max-processes 4"),
    (["-n", "2", "--autoscale", "--target", "1", "job.py"], r"must lie in \(0, 1\), found 1"),
    (["-n", "2", "--autoscale", "--target", "high", "job.py"], "expected a number, found 'high'"),
    (["-n", "2", "--autoscale", "--max", "0", "job.py"], "must be from 1 to 65535"),
])
def test_bad_autoscale_options_exit_2(argv, message, capsys):
    assert launch.main(argv) == 2
    import re

    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize("text, message", [
    ("[2, 3]", "must be a JSON object of settings"),
    ("{not json", "must be a JSON object of settings"),
    ('{"max": 3}', r"names unknown settings \['max'\]"),
    ('{"min_processes": 4, "max_processes": 3}', r"min_processes \(4\) is larger than max_processes \(3\)"),
])
def test_bad_settings_in_the_environment_are_clear_errors(text, message):
    with pytest.raises(AutoscaleSettingsError, match=message) as raised:
        Settings.from_environment({ENV_AUTOSCALE: text})
    assert isinstance(raised.value, TimelyError)


def test_the_help_documents_autoscaling():
    result = subprocess.run([sys.executable, "-m", "timely_py.launch", "--help"],
                            cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert result.returncode == 0
    for words in ("--autoscale", "--min N", "--max M", "--target T", "TIMELY_AUTOSCALE", "docs/autoscaling.md"):
        assert words in result.stdout
