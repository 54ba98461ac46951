"""The driver JVM's class-data-sharing archive (`timely_py.analysis.jvm_archive`): where it
lives and which one fits a session, that a session maps it only when it is there, that one
is made at most once and only by a process that holds the lock, that only a finished archive
is ever renamed into place, and (slow) that a JVM started on a made archive maps it."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
from support.paths import ROOT
from timely_py.analysis import jvm_archive
from timely_py.analysis.session import require_java, session_settings


@pytest.fixture
def archives(tmp_path, monkeypatch):
    """Archives in a directory of this test's own."""
    monkeypatch.setenv(jvm_archive.ENV, str(tmp_path / "jvm"))
    return tmp_path / "jvm"


def test_archives_live_in_the_users_cache_unless_moved_or_turned_off(monkeypatch, tmp_path):
    monkeypatch.delenv(jvm_archive.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert jvm_archive.archive_dir() == tmp_path / "timely_py" / "jvm"
    monkeypatch.setenv(jvm_archive.ENV, str(tmp_path / "elsewhere"))
    assert jvm_archive.archive_dir() == tmp_path / "elsewhere"
    for off in ("off", "0", "no"):
        monkeypatch.setenv(jvm_archive.ENV, off)
        assert jvm_archive.archive_dir() is None
        assert jvm_archive.archive_path(session_settings(), require_java()) is None


def test_one_archive_per_class_path_and_none_when_the_caller_chose_their_own(archives):
    java = require_java()
    plain = jvm_archive.archive_path(session_settings(), java)
    assert plain is not None and plain.parent == archives and plain.suffix == ".jsa"
    # The master, the trace's size and the JIT do not change the classes: the same archive.
    assert jvm_archive.archive_path(session_settings("local[1]", events=10), java) == plain
    jars = jvm_archive.archive_path(session_settings(conf={"spark.jars": "/x/extra.jar"}), java)
    assert jars is not None and jars != plain
    for options in ("-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa"):
        mine = session_settings(conf={"spark.driver.extraJavaOptions": options})
        assert jvm_archive.archive_path(mine, java) is None


def test_a_session_maps_an_archive_only_when_it_is_there(archives):
    archive = archives / "spark-x.jsa"
    assert jvm_archive.java_options(None) == jvm_archive.java_options(archive) == ""
    archives.mkdir()
    archive.write_bytes(b"archive")
    options = jvm_archive.java_options(archive).split()
    assert f"-XX:SharedArchiveFile={archive}" in options and "-Xshare:auto" in options  # never required


def test_a_missing_archive_is_made_after_exit_with_local_settings_only(archives, monkeypatch):
    registered = []
    monkeypatch.setattr(jvm_archive.atexit, "register", lambda *call: registered.append(call))
    archive = archives / "spark-x.jsa"
    settings = session_settings("spark://cluster:7077", {"spark.eventLog.enabled": "true", "spark.jars": "/a.jar"})
    assert jvm_archive.create_later(archive, settings)
    ((spawn, where, kept),) = registered
    assert spawn == jvm_archive._spawn and where == archive
    assert kept["spark.master"] == "local[1]", "never a job on the user's cluster"
    assert "spark.eventLog.enabled" not in kept and kept["spark.jars"] == "/a.jar"
    archives.mkdir()
    archive.write_bytes(b"archive")
    assert not jvm_archive.create_later(archive, settings) and not jvm_archive.create_later(None, settings)
    assert len(registered) == 1


def test_only_the_process_holding_the_lock_starts_the_maker(archives, monkeypatch):
    started = []
    monkeypatch.setattr(jvm_archive.subprocess, "Popen", lambda *args, **kwargs: started.append((args, kwargs)))
    archive = archives / "spark-x.jsa"
    archives.mkdir()
    with jvm_archive._lock(archive) as held:
        assert held is not None
        with jvm_archive._lock(archive) as other:
            assert other is None, "a second holder at once"
        jvm_archive._spawn(archive, {"spark.master": "local[1]"})
        assert not started, "another process is making it"
    jvm_archive._spawn(archive, {"spark.master": "local[1]"})
    ((args, kwargs),) = started
    assert kwargs["start_new_session"] and kwargs["env"][jvm_archive.ENV] == str(archives)
    (request,) = archives.glob("*.request-*.json")
    assert json.loads(request.read_text()) == {"archive": str(archive), "settings": {"spark.master": "local[1]"}}
    assert args[0][-1] == str(request)


def test_only_a_finished_archive_is_renamed_into_place(tmp_path):
    archive, part = tmp_path / "spark-x.jsa", tmp_path / "spark-x.jsa.part-1"
    part.write_bytes(b"half")
    assert not jvm_archive.adopt(part, archive, finished=False)
    assert not part.exists() and not archive.exists(), "an archive cut short crashes the JVM that maps it"
    part.write_bytes(b"")
    assert not jvm_archive.adopt(part, archive, finished=True) and not archive.exists()
    part.write_bytes(b"whole")
    assert jvm_archive.adopt(part, archive, finished=True)
    assert archive.read_bytes() == b"whole" and not part.exists()


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_made_archive_is_mapped_by_the_next_jvm(tmp_path):
    """Makes an archive in a process of its own (the maker's workload, its JVM's exit), then
    starts a session that requires it (``-Xshare:on``: the JVM refuses to start on an archive
    it cannot map) and runs a query on it."""
    archive = tmp_path / "spark-test.jsa"
    settings = {k: v for k, v in session_settings("local[1]", events=10).items() if k in jvm_archive.KEPT_SETTINGS}
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from timely_py.analysis import jvm_archive
        from pyspark.sql import SparkSession
        archive = Path({str(archive)!r})
        if sys.argv[1] == "make":
            sys.exit(0 if jvm_archive.create(archive, {settings!r}) else 1)
        options = {settings["spark.driver.extraJavaOptions"]!r} + f" -XX:SharedArchiveFile={{archive}} -Xshare:on"
        builder = SparkSession.builder
        for key, value in dict({settings!r}, **{{"spark.driver.extraJavaOptions": options}}).items():
            builder = builder.config(key, value)
        assert builder.getOrCreate().range(5).count() == 5
        """
    )
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(jvm_archive.__file__))))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYTHONPATH=package, **{jvm_archive.ENV: "off"})
    for step in ("make", "use"):
        done = subprocess.run([sys.executable, "-c", script, step], capture_output=True, text=True, timeout=800,
                              cwd=ROOT, env=env)  # fmt: skip
        assert done.returncode == 0, f"{step}: {done.stderr[-3000:]}"
        assert archive.is_file() and archive.stat().st_size > 1_000_000
    assert not list(tmp_path.glob("*.part-*")), "nothing half-written left behind"
