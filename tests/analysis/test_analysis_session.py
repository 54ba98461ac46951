"""The analysis's SparkSession: settings of a session made on demand, a session passed in is
used as it is, `--conf` pairs, and a clear error naming what to install when Java is missing."""

import pytest
from timely_py.analysis import JavaMissingError, get_session
from timely_py.analysis.session import (
    DEFAULTS,
    SMALL_TRACE_EVENTS,
    SMALL_TRACE_JAVA_OPTIONS,
    SMALL_TRACE_SETTINGS,
    parse_conf,
    require_java,
    session_settings,
)


def test_master_and_spark_settings_override_the_defaults():
    settings = session_settings("spark://host:7077", {"spark.driver.memory": "6g", "spark.executor.cores": 3})
    assert settings["spark.master"] == "spark://host:7077"
    assert settings["spark.driver.memory"] == "6g" and settings["spark.executor.cores"] == "3"
    assert settings["spark.sql.execution.arrow.pyspark.enabled"] == "true"
    assert "spark.driver.host" not in settings  # only a local session is pinned to loopback
    local = session_settings()
    assert local["spark.master"] == "local[*]" and local["spark.driver.host"] == "127.0.0.1"
    assert "log4j2.properties" in local["spark.driver.extraJavaOptions"]
    assert local["spark.driver.memory"] == DEFAULTS["spark.driver.memory"]


def test_only_a_small_trace_gets_the_small_trace_settings_and_conf_overrides_them():
    def options(**kwargs):
        return session_settings(**kwargs)["spark.driver.extraJavaOptions"]

    assert SMALL_TRACE_JAVA_OPTIONS in options(events=SMALL_TRACE_EVENTS - 1)
    assert SMALL_TRACE_JAVA_OPTIONS not in options(events=SMALL_TRACE_EVENTS)
    assert SMALL_TRACE_JAVA_OPTIONS not in options()  # size unknown: the JVM's default
    mine = options(events=10, conf={"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4"})
    assert mine.index(SMALL_TRACE_JAVA_OPTIONS) < mine.index("-XX:TieredStopAtLevel=4")  # the last one wins
    small, large = session_settings(events=10), session_settings(events=SMALL_TRACE_EVENTS)
    assert all(small[key] == value != large[key] for key, value in SMALL_TRACE_SETTINGS.items())
    assert session_settings(events=10, conf={"spark.sql.shuffle.partitions": "5"})["spark.sql.shuffle.partitions"] == "5"


def test_settings_must_be_spark_settings():
    with pytest.raises(ValueError, match="must start with 'spark.'"):
        session_settings(None, {"driver.memory": "1g"})
    assert parse_conf(["spark.a=1", "spark.b=x=y"]) == {"spark.a": "1", "spark.b": "x=y"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_conf(["spark.a"])


def test_a_missing_java_names_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(JavaMissingError, match="Java 17.*openjdk-17-jre-headless.*JAVA_HOME"):
        require_java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(OSError, match="no java on PATH"):
        get_session(master="local[1]")


def test_a_session_passed_in_is_used_as_it_is(spark):
    assert get_session(spark) is spark
    assert spark.conf.get("spark.sql.execution.arrow.pyspark.enabled") == "true"
    assert spark.conf.get("spark.master") == "local[2]"
