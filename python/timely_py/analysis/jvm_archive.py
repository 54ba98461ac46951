"""The driver JVM's class-data-sharing archive: Spark's classes parsed once, mapped at every start.

Most of a session's start is the driver's JVM loading and verifying Spark's classes (about
18,000 of them by the end of a small analysis). A dynamic CDS archive
(``-XX:ArchiveClassesAtExit``, JDK 13 and later) holds them parsed and verified; a JVM
started with ``-XX:SharedArchiveFile`` maps it instead (``docs/critical-path.md``, "The
Spark session"). This module owns that archive: where it lives, which archive fits a
session's settings (:func:`archive_path`), the JVM options of a session made on demand
(:func:`java_options`), and making the archive once, in a process of its own after the
analysis that found none (:func:`create_later`, :func:`create`). It must not configure
anything else of the session.

An archive cut short (the JVM killed while it wrote it) crashes every JVM that maps it, so
an archive is only ever renamed into place by the process that started its JVM, after the
JVM exited with status 0; one process at a time makes one (a lock file). The JVM checks the
rest itself: an archive of another JDK or class path is ignored (``-Xshare:auto``).
``TIMELY_PY_JVM_ARCHIVE=off`` turns it all off; a directory there puts the archives in it.
"""

from __future__ import annotations

import atexit
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO, Any, Mapping, Optional

#: The environment variable that turns the archive off (``off``, ``0``, ``no``) or moves it
#: (a directory).
ENV = "TIMELY_PY_JVM_ARCHIVE"

#: Options that silence the JVM's notes about classes it cannot archive (signed jars, Spark's
#: generated classes) and about an archive it cannot use: both are normal, neither an error.
QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"

#: The settings that change the driver's class path (with the JDK and Spark's jars: the key).
CLASS_PATH_SETTINGS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath", "spark.submit.pyFiles")

#: The settings of the user's session that the session making the archive keeps (the rest,
#: its master included, are the defaults: it runs ``local[1]``, whatever the user's cluster).
KEPT_SETTINGS = CLASS_PATH_SETTINGS + (
    "spark.app.name", "spark.driver.memory", "spark.driver.extraJavaOptions", "spark.driver.host",
    "spark.driver.bindAddress", "spark.ui.enabled", "spark.ui.showConsoleProgress",
    "spark.sql.execution.arrow.pyspark.enabled",
)  # fmt: skip

#: How long the process making the archive waits for its JVM to write it and exit.
DUMP_TIMEOUT_S = 900


def archive_dir() -> Optional[Path]:
    """Where archives live (``$TIMELY_PY_JVM_ARCHIVE``, else ``$XDG_CACHE_HOME/timely_py/jvm``,
    else ``~/.cache/timely_py/jvm``); None when the variable turns archives off."""
    chosen = os.environ.get(ENV, "").strip()
    if chosen.lower() in ("off", "0", "no", "false"):
        return None
    if chosen:
        return Path(chosen)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "timely_py" / "jvm"


def archive_path(settings: Mapping[str, str], java: str) -> Optional[Path]:
    """The archive for a driver started with ``java`` and ``settings`` (its name a digest of
    the JDK, Spark's jars and the class-path settings), or None when archives are off or the
    caller's options already choose their own (``-Xshare``, an archive of theirs)."""
    directory = archive_dir()
    options = settings.get("spark.driver.extraJavaOptions", "")
    if directory is None or any(word in options for word in ("Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")):
        return None
    digest = hashlib.sha256()
    for part in _identity(java):
        digest.update(part.encode() + b"\0")
    for key in CLASS_PATH_SETTINGS:
        digest.update(f"{key}={settings.get(key, '')}".encode() + b"\0")
    return directory / f"spark-{digest.hexdigest()[:20]}.jsa"


def _identity(java: str) -> list:
    """What an archive depends on besides settings: the java binary, the JDK's class image and
    Spark's jars (each file's name, size and modification time)."""
    import pyspark

    real = os.path.realpath(shutil.which(java) or java)
    modules = os.path.realpath(os.path.join(os.path.dirname(real), "..", "lib", "modules"))  # the JDK's classes
    parts = [real, _stamp(real), modules, _stamp(modules)]
    jars = Path(os.environ.get("SPARK_HOME") or os.path.dirname(pyspark.__file__)) / "jars"
    parts += [f"{entry.name}:{_stamp(str(entry))}" for entry in sorted(jars.glob("*.jar"))]
    return parts


def _stamp(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "-"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def java_options(archive: Optional[Path]) -> str:
    """The driver's JVM options for ``archive``: map it when it is there, nothing otherwise."""
    if archive is None or not archive.is_file():
        return ""
    return f"-XX:SharedArchiveFile={archive} -Xshare:auto {QUIET}"


def create_later(archive: Optional[Path], settings: Mapping[str, str]) -> bool:
    """When ``archive`` is missing, arranges for it to be made when this process exits, by a
    process of its own at the lowest priority (:func:`create`), so that the analysis that found
    none does not wait for it. Returns whether it did."""
    if archive is None or archive.is_file():
        return False
    kept = {key: value for key, value in settings.items() if key in KEPT_SETTINGS}
    atexit.register(_spawn, archive, dict(kept, **{"spark.master": "local[1]"}))
    return True


def _spawn(archive: Path, settings: Mapping[str, str]) -> None:
    try:
        archive.parent.mkdir(parents=True, exist_ok=True)
        with _lock(archive) as held:
            if held is None:  # another process is making it
                return
        request = archive.with_name(archive.name + f".request-{os.getpid()}.json")
        request.write_text(json.dumps({"archive": str(archive), "settings": dict(settings)}))
        package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        path = os.pathsep.join(p for p in (package, os.environ.get("PYTHONPATH", "")) if p)
        with open(archive.with_name(archive.name + ".log"), "ab") as log:
            subprocess.Popen(
                [sys.executable, "-c", "import sys; from timely_py.analysis import jvm_archive as j; "
                 "sys.exit(j.main(sys.argv[1:]))", str(request)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                env=dict(os.environ, PYTHONPATH=path, **{ENV: str(archive.parent)}),
            )  # fmt: skip
    except OSError:
        pass  # an archive is an optimisation: never a reason to fail


class _lock:
    """``with _lock(archive) as held``: the archive's lock file locked (``held`` its file), or
    ``held`` None when another process holds it."""

    def __init__(self, archive: Path) -> None:
        self.file: Optional[IO[str]] = open(archive.with_name(archive.name + ".lock"), "a")

    def __enter__(self) -> Optional[IO[str]]:
        assert self.file is not None
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.file.close()
            self.file = None
        return self.file

    def __exit__(self, *_: Any) -> None:
        if self.file is not None:
            self.file.close()  # closing releases the lock


def create(archive: Path, settings: Mapping[str, str]) -> bool:
    """Makes ``archive``: a session with ``settings`` whose JVM writes the classes it loaded at
    exit, a small workload of the kinds of query the analysis runs, then the JVM's exit waited
    for and the archive renamed into place if the JVM exited with status 0. Returns whether the
    archive is there; False without trying when another process holds the lock."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    with _lock(archive) as held:
        if held is None:
            return False
        if archive.is_file():
            return True
        part = archive.with_name(archive.name + f".part-{os.getpid()}")
        options = f"{settings.get('spark.driver.extraJavaOptions', '')} -XX:ArchiveClassesAtExit={part} {QUIET}"
        builder = SparkSession.builder
        for key, value in dict(settings, **{"spark.driver.extraJavaOptions": options.strip()}).items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        jvm, worked = SparkContext._gateway.proc, False  # type: ignore[union-attr]
        try:
            with tempfile.TemporaryDirectory() as scratch:
                workload(spark, Path(scratch))
            worked = True
        finally:
            spark.stop()
            jvm.stdin.close()  # Spark's gateway exits on end of input; the JVM then writes the archive
            try:
                status = jvm.wait(timeout=DUMP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                jvm.kill()
                status = jvm.wait()
            adopt(part, archive, worked and status == 0)
        return archive.is_file()


def adopt(part: Path, archive: Path, finished: bool) -> bool:
    """Renames the archive a JVM wrote at ``part`` to ``archive`` (one step: no JVM ever maps
    half an archive) when ``finished`` (its workload ran and its JVM exited with status 0) and
    it wrote something; deletes it otherwise. Returns whether it renamed it."""
    if finished and part.is_file() and part.stat().st_size > 0:
        os.replace(part, archive)
        return True
    part.unlink(missing_ok=True)
    return False


def workload(spark: Any, scratch: Path) -> None:
    """A few small queries of the kinds the analysis runs (Parquet read and write, a shuffle and
    a cache, an aggregation, a window, joins, ``applyInArrow`` over groups and cogroups, Arrow
    collects), so that the archive holds the classes they load."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rows = spark.range(4000).select(
        (F.col("id") % 2).alias("worker"), F.col("id").alias("t"),
        F.concat(F.lit("kind"), (F.col("id") % 5).cast("string")).alias("kind"),
        F.array(F.col("id") % 3, F.col("id") % 7).alias("address"), (F.col("id") % 2 == 0).alias("useful"),
    )  # fmt: skip
    rows.write.mode("overwrite").parquet(str(scratch / "events"))
    events = spark.read.parquet(str(scratch / "events")).repartition("worker").cache()
    events.agg(F.collect_set(F.struct("kind", "address")), F.min("t"), F.max("t")).first()
    other = spark.read.parquet(str(scratch / "events"))
    window = Window.partitionBy("worker").orderBy("t")
    later = other.withColumn("next", F.lead("t").over(window))
    firsts = other.groupBy("kind").agg(F.min("t").alias("first"))
    joined = later.join(firsts, "kind").join(F.broadcast(firsts.withColumnRenamed("first", "again")), "kind", "left")
    cogrouped = events.groupBy("worker").cogroup(joined.groupBy("worker"))
    result = cogrouped.applyInArrow(lambda mine, theirs: mine, events.schema).cache()
    result.count()
    sliced = result.withColumn("slice", F.explode(F.sequence(F.lit(0), F.col("worker"))))
    per = sliced.groupBy("slice").applyInArrow(lambda table: table, sliced.schema).repartition(1).cache()
    per.write.mode("overwrite").parquet(str(scratch / "out"))
    shares = per.groupBy("slice", "kind").agg(F.sum("t").alias("total"))
    shares = shares.withColumn("share", F.col("total") / F.sum("total").over(Window.partitionBy("slice")))
    shares.join(per.groupBy("kind").agg(F.percentile_approx("t", 0.5)), "kind", "full").orderBy("kind").toArrow()


def main(argv: list) -> int:
    """The process :func:`create_later` starts, with the path of a request file: makes the archive a request file
    (written by :func:`create_later`) asks for, then deletes the request."""
    os.nice(19)  # the JVM it starts inherits the lowest priority: the user's work goes first
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    request = Path(argv[0])
    try:
        asked = json.loads(request.read_text())
    finally:
        request.unlink(missing_ok=True)
    return 0 if create(Path(asked["archive"]), asked["settings"]) else 1
