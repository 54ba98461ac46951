"""The SparkSession the analysis runs on: made on demand, or the caller's own.

This module owns how the analysis gets its Spark: the defaults for a laptop (``local[*]``,
quiet logs, a modest driver memory, Arrow transfers on, few shuffle partitions), how a
``master`` URL and ``spark.*`` settings reach a new session, the check that Java is there
before PySpark tries to start it, and which JVM options map Spark's classes from an archive
(:mod:`.jvm_archive` owns the archive). It must not configure a session the caller passed in (that
one is used as it is), and it knows nothing about traces.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional

from .._core import TimelyError
from . import jvm_archive

if TYPE_CHECKING:  # pragma: no cover - imported for annotations only
    from pyspark.sql import SparkSession

#: Settings of a session made on demand; ``conf`` given to :func:`get_session` overrides them.
DEFAULTS: Dict[str, str] = {
    "spark.app.name": "timely-py analyze",
    "spark.driver.memory": "2g",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "true",
}

#: The driver's log settings (errors only) of a session made on demand.
LOG_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")

#: The master of a session made on demand when none is given.
DEFAULT_MASTER = "local[*]"

#: A trace of fewer events than this is *small*: its analysis is mostly Spark's fixed cost
#: per job (``docs/benchmarks.md``, "Analysis throughput").
SMALL_TRACE_EVENTS = 1_000_000

#: The driver JVM's options for a small trace: compile with the client JIT only. Spark's
#: first minute is spent compiling its own code and each job's generated code; the server
#: JIT's compilations take a core of two for most of a small analysis and pay off only on
#: large data. With the client JIT alone the JVM reserves 48 MB for compiled code, which a
#: session fills within about a minute of analyses; the JVM then stops compiling and runs
#: everything after in its interpreter, so the reserve is the tiered JIT's 240 MB.
SMALL_TRACE_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=240m"

#: Settings over :data:`DEFAULTS` for a small trace: no adaptive execution (it plans the rest
#: of a query again after each of its stages, and the driver's planning is most of a small
#: trace's cost) and two shuffle partitions (which adaptive execution would coalesce to).
SMALL_TRACE_SETTINGS: Dict[str, str] = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "2",
}


class MissingDependencyError(TimelyError, OSError):
    """Something the analysis runs on is not installed (a ``TimelyError``, and an ``OSError``:
    the environment's fault)."""


class JavaMissingError(MissingDependencyError):
    """PySpark needs a Java runtime and none was found."""


#: The packages of the ``analysis`` extra (``pip install 'timely_py[analysis]'``), by import name.
EXTRA_PACKAGES = ("pyspark", "pandas", "numpy", "rich", "matplotlib")


def require_extra() -> None:
    """Raises :class:`MissingDependencyError` naming every package of the ``analysis`` extra
    that is not installed, and how to install them; returns when all are there."""
    missing = [name for name in EXTRA_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingDependencyError(
            f"the analysis needs {', '.join(missing)}, which the plain install leaves out; "
            "install them with: pip install 'timely_py[analysis]'"
        )


def java_command() -> Optional[str]:
    """The ``java`` PySpark will start: ``$JAVA_HOME/bin/java`` or the one on ``PATH``."""
    home = os.environ.get("JAVA_HOME")
    if home:
        candidate = os.path.join(home, "bin", "java")
        return candidate if os.access(candidate, os.X_OK) else None
    return shutil.which("java")


def require_java() -> str:
    """The java command, or :class:`JavaMissingError` naming what to install."""
    command = java_command()
    if command is None:
        where = (
            f"JAVA_HOME={os.environ['JAVA_HOME']} has no bin/java" if "JAVA_HOME" in os.environ else "no java on PATH"
        )
        raise JavaMissingError(
            f"the analysis runs on Spark, which needs Java 17 or later ({where}); install a JDK "
            "(Debian/Ubuntu: apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
        )
    return command


def session_settings(
    master: Optional[str] = None, conf: Optional[Mapping[str, str]] = None, events: Optional[int] = None,
    sql: bool = True,
) -> Dict[str, str]:
    """The settings a new session gets: :data:`DEFAULTS`, then ``conf``, then ``master``;
    for a trace of ``events`` below :data:`SMALL_TRACE_EVENTS`, or for a session that will
    run no SQL query (``sql`` false: the per-worker path of :mod:`.worker_files`, whose two
    jobs of Python tasks leave the driver's JVM little to compile), :data:`SMALL_TRACE_SETTINGS`
    come before ``conf`` and the driver's JVM gets :data:`SMALL_TRACE_JAVA_OPTIONS` (before
    any of ``conf``'s, which can override them).

    >>> session_settings("local[2]", {"spark.driver.memory": "1g"})["spark.master"]
    'local[2]'
    """
    small = not sql or (events is not None and events < SMALL_TRACE_EVENTS)
    settings = dict(DEFAULTS, **(SMALL_TRACE_SETTINGS if small else {}))
    settings["spark.master"] = DEFAULT_MASTER
    for key, value in (conf or {}).items():
        if not key.startswith("spark."):
            raise ValueError(f"Spark setting {key!r} must start with 'spark.'")
        settings[key] = str(value)
    if master is not None:
        settings["spark.master"] = master
    if settings["spark.master"].startswith("local"):
        # A local session talks to itself only: no warning about the host's address.
        settings.setdefault("spark.driver.host", "127.0.0.1")
        settings.setdefault("spark.driver.bindAddress", "127.0.0.1")
    quiet = f"-Dlog4j.configurationFile=file:{LOG_CONFIG}"
    jit = SMALL_TRACE_JAVA_OPTIONS if small else ""
    settings["spark.driver.extraJavaOptions"] = " ".join(
        part for part in (quiet, jit, settings.get("spark.driver.extraJavaOptions", "")) if part
    )
    return settings


def get_session(
    spark: "Optional[SparkSession]" = None,
    *,
    master: Optional[str] = None,
    conf: Optional[Mapping[str, str]] = None,
    events: Optional[int] = None,
    sql: bool = True,
) -> "SparkSession":
    """``spark`` itself when given; otherwise a session with :func:`session_settings` (for a
    trace of ``events``, when known, and whether it will run SQL queries).

    A running session of this process with another master is reused as Spark does
    (``getOrCreate``); its static settings then stay as they were. A session that starts the
    driver's JVM maps the class-data-sharing archive of :mod:`.jvm_archive` when there is
    one, and has one made after this process exits when there is none.
    """
    if spark is not None:
        return spark
    return _started(_builder(master, conf, events, sql))


def _builder(master: Optional[str], conf: Optional[Mapping[str, str]], events: Optional[int], sql: bool) -> Any:
    """What a new session needs before its JVM starts (Java found, PySpark imported, the
    settings and the archive chosen): its builder, and the archive and settings made after."""
    java = require_java()
    try:
        from pyspark.sql import SparkSession
    except ImportError as error:
        raise MissingDependencyError(
            f"the analysis needs PySpark ({error}); install it with: pip install 'timely_py[analysis]'"
        ) from error

    from pyspark import SparkContext

    # Spark's Python workers run this interpreter, which has timely_py (the kernels) installed,
    # unless the caller chose another with PYSPARK_PYTHON.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = session_settings(master, conf, events, sql)
    starts_jvm = SparkContext._gateway is None
    archive = jvm_archive.archive_path(settings, java) if starts_jvm else None
    mapped = jvm_archive.java_options(archive)
    if mapped:
        settings["spark.driver.extraJavaOptions"] = f"{mapped} {settings['spark.driver.extraJavaOptions']}"
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder, archive, settings


def _started(prepared: Any) -> "SparkSession":
    """The session of a :func:`_builder`'s builder (its JVM started when none runs)."""
    builder, archive, settings = prepared
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    jvm_archive.create_later(archive, settings)
    return session


def session_soon(
    *, master: Optional[str] = None, conf: Optional[Mapping[str, str]] = None, events: Optional[int] = None,
    sql: bool = True,
) -> "Future[SparkSession]":
    """:func:`get_session` with its JVM's start on a thread of its own: the driver's JVM starts
    (seconds, in another process) while the caller goes on importing and reading;
    ``result()`` gives the session or raises what starting it raised. What comes before the
    JVM's start (Java found, PySpark imported: :func:`get_session`'s errors but Spark's) runs
    in the caller's thread, so that no import of the caller's holds it back."""
    prepared = _builder(master, conf, events, sql)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spark-session")
    try:
        return pool.submit(_started, prepared)
    finally:
        pool.shutdown(wait=False)


def parse_conf(pairs: Optional[list]) -> Dict[str, str]:
    """``["spark.a=1", "spark.b=x"]`` (the ``--conf`` options) as a dict; bad pairs raise ValueError."""
    settings: Dict[str, str] = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf takes KEY=VALUE, got {pair!r}")
        settings[key.strip()] = value
    return settings
