"""The analysis's outputs built from OUT's tables: PNG plots (`write_plots`), the Perfetto
trace with the critical path (`write_perfetto`) and the self-contained HTML viewer
(`write_viewer`), loaded in headless Chromium. One real trace (`examples/bfs.py` on 2
processes of 2 workers) is analysed once for the whole module."""

import json
import shutil
import struct
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.devtools import Page
from support.paths import ROOT
from timely_py.analysis import analyze
from timely_py.analysis.headless import attributes_of, console_messages, dump_dom
from timely_py.analysis.perfetto_export import CRITICAL_TRACK, write_perfetto
from timely_py.analysis.plots import write_plots
from timely_py.analysis.viewer import viewer_data, write_viewer
from timely_py.trace import TraceFormatError

COMMUNICATIONS = ("data_message", "progress_message")


@pytest.fixture(scope="module")
def analysed(spark, bfs_trace, tmp_path_factory):
    trace = bfs_trace
    result = analyze(trace, out=tmp_path_factory.mktemp("outputs") / "out", slice="5ms", spark=spark)
    assert result.slices >= 2, "the trace spans several slices"
    return trace, result.out


def rows(out, name):
    return pq.read_table(out / name).to_pylist()


def png_size(path):
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path} is not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_plots_are_png_images_of_sensible_size(analysed):
    from matplotlib.image import imread

    _, out = analysed
    written = write_plots(out)
    assert [p.name for p in written] == ["profile_per_slice.png", "top_contributors.png", "worker_utilisation.png"]
    for path in written:
        width, height = png_size(path)
        assert 500 <= width <= 4000 and 250 <= height <= 3000, (path.name, width, height)
        pixels = imread(path)
        assert len({tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::97]}) > 5, f"{path.name} is blank"


def test_plots_of_a_directory_without_tables_are_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="no table 'profile_type'"):
        write_plots(tmp_path)


def test_perfetto_trace_marks_the_critical_path_on_its_own_track(analysed):
    trace, out = analysed
    events = json.loads(write_perfetto(out, trace).read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    critical = [pid for pid, name in names.items() if name == CRITICAL_TRACK]
    assert len(critical) == 1 and set(names) == {0, 1, critical[0]}
    path = rows(out, "critical_path")
    on_track = [e for e in events if e["ph"] == "X" and e["pid"] == critical[0]]
    assert len(on_track) == len(path) and all(e["dur"] >= 0 for e in on_track)
    assert sum(e["dur"] for e in on_track) * 1000 == pytest.approx(sum(r["duration"] for r in path), rel=1e-9)
    crossings = [r for r in path if r["type"] in COMMUNICATIONS]
    flows = [e for e in events if e["ph"] in ("s", "f")]
    assert crossings and len(flows) == 2 * len(crossings)
    assert {e["id"] for e in flows if e["ph"] == "s"} == {e["id"] for e in flows if e["ph"] == "f"}
    workers = [e for e in events if e["ph"] == "X" and e["pid"] != critical[0]]
    assert len(workers) == len(rows(out, "activities"))
    assert {(e["pid"], e["tid"]) for e in workers} == {(0, 0), (0, 1), (1, 2), (1, 3)}
    assert any(e["args"]["critical"] for e in workers) and any(e["cat"] == "waiting" for e in workers)


def test_perfetto_export_of_a_path_that_is_not_a_trace_fails_clearly(analysed, tmp_path):
    _, out = analysed
    with pytest.raises(TraceFormatError):
        write_perfetto(out, tmp_path)


@pytest.mark.browser
def test_the_viewer_draws_every_lane_and_critical_edge_in_chromium(analysed, tmp_path):
    _, out = analysed
    page = write_viewer(out)
    text = page.read_text()
    assert "<script src" not in text and "<link" not in text and "http://" not in text and "https://" not in text
    dom, log = dump_dom(page)
    attributes = attributes_of(dom)
    assert "data-errors" not in attributes, dom[-2000:]
    assert console_messages(log) == []
    path = rows(out, "critical_path")
    assert attributes["data-rendered"] == "true"
    assert int(attributes["data-lanes"]) == len({r["worker"] for r in rows(out, "activities")}) == 4
    assert int(attributes["data-critical-segments"]) == len(path)
    assert int(attributes["data-critical-crossings"]) == len([r for r in path if r["type"] in COMMUNICATIONS]) > 0
    assert int(attributes["data-activities-in-view"]) == len(rows(out, "activities"))


@pytest.mark.browser
def test_the_viewer_zooms_and_shows_details_from_its_address(analysed, tmp_path):
    _, out = analysed
    data = viewer_data(out)
    acts = data["activities"]
    wait = next(i for i, kind in enumerate(acts["type"]) if data["types"][kind] == "waiting" and acts["dur"][i] > 0)
    start, end = acts["start"][wait], acts["start"][wait] + acts["dur"][wait]
    fragment = f"from={start}&to={end}&worker={acts['worker'][wait]}&t={(start + end) // 2}"
    dom, log = dump_dom(write_viewer(out), fragment)
    assert "data-errors" not in attributes_of(dom) and console_messages(log) == []
    assert attributes_of(dom, "aside")["data-activity"] == str(acts["id"][wait])
    assert "ended by" in dom and "message sent at" in dom
    drawn = int(attributes_of(dom)["data-activities-in-view"])
    assert 4 <= drawn < len(acts["start"]), "zoomed in on one wait, the page draws only what is in view"


@pytest.mark.browser
def test_the_viewer_zooms_pans_and_shows_details_with_the_mouse(analysed):
    _, out = analysed
    with Page() as page:
        page.open(write_viewer(out))
        left, top, width, _ = page.evaluate("(r => [r.left, r.top, r.width, r.height])(canvas.getBoundingClientRect())")
        plot, lane_y = width - 80, top + 28 + 7  # the page's label width, axis height, least lane height
        start, end = map(float, page.root("view").split(","))
        x = round(left + 80 + plot * 0.4)  # mouse events land on whole pixels
        share = (x - left - 80) / plot
        under = start + share * (end - start)
        for _ in range(10):
            page.wheel(x, lane_y, -100)  # wheel up: zoom in around the pointer
        zoomed = list(map(float, page.root("view").split(",")))
        assert zoomed[1] - zoomed[0] == pytest.approx(0.8**10 * (end - start), rel=1e-6)
        pixel = (zoomed[1] - zoomed[0]) / plot
        assert zoomed[0] + share * (zoomed[1] - zoomed[0]) == pytest.approx(under, abs=pixel), "the pointer's time stays"
        assert int(page.root("activities-in-view")) < int(page.evaluate("acts.start.length"))
        page.drag(x, x + 200, lane_y)  # drag right: earlier times come into view
        panned = list(map(float, page.root("view").split(",")))
        assert panned[0] == pytest.approx(zoomed[0] - 200 * pixel, abs=pixel)
        page.evaluate("document.getElementById('reset').click()")
        longest = page.evaluate("(l => l.reduce((a, b) => acts.dur[b] > acts.dur[a] ? b : a))(lanes[0])")
        middle = page.evaluate(f"acts.start[{longest}] + acts.dur[{longest}] / 2") / end
        page.click(left + 80 + plot * middle, lane_y)
        assert page.evaluate("document.getElementById('details').dataset.activity") == str(
            page.evaluate(f"acts.id[{longest}]")
        )
        assert not [m for m in page.console if m.get("type") in ("error", "assert") or "exceptionDetails" in m]


@pytest.mark.browser
def test_a_capped_viewer_says_so_and_hostile_names_stay_data(analysed, tmp_path):
    _, source = analysed
    out = tmp_path / "out"
    for name in ("activities", "critical_path", "slices", "communications"):
        shutil.copytree(source / name, out / name)
    table = pq.read_table(out / "activities")
    hostile = "</script><script>document.documentElement.setAttribute('data-injected','1')</script>"
    names = table.column("name").to_pylist()
    names[0] = hostile
    table = table.set_column(table.schema.get_field_index("name"), "name", pa.array(names, pa.string()))
    shutil.rmtree(out / "activities")
    (out / "activities").mkdir()
    pq.write_table(table, out / "activities" / "part-00000.parquet")
    data = viewer_data(out, max_activities=100)
    assert data["capped"]["total"] == len(table) and 0 < data["capped"]["shown"] <= 100
    assert len(data["activities"]["start"]) == data["capped"]["shown"]
    assert max(data["path"]["start"], default=0) < data["capped"]["until"]
    dom, log = dump_dom(write_viewer(out, max_activities=100, title="</title>__DATA__<b>"))
    attributes = attributes_of(dom)
    assert "data-errors" not in attributes and "data-injected" not in attributes and console_messages(log) == []
    assert int(attributes["data-activities-in-view"]) == data["capped"]["shown"]
    assert int(attributes["data-critical-segments"]) == len(data["path"]["start"])
    assert "Large trace: showing the first" in dom
    assert "<title>&lt;/title&gt;__DATA__&lt;b&gt;</title>" in dom


def test_viewer_rejects_a_cap_that_is_not_positive(analysed):
    with pytest.raises(ValueError, match="max_activities"):
        write_viewer(analysed[1], max_activities=0)


@pytest.mark.browser
def test_screenshot_script_renders_the_viewer(analysed, tmp_path):
    _, out = analysed
    write_viewer(out)
    shot = tmp_path / "viewer.png"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "viewer_screenshot.py"), str(out), "--png", str(shot),
         "--size", "1200x700"],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(shot) and png_size(shot) == (1200, 700)


def test_screenshot_script_without_a_viewer_is_a_usage_error(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "viewer_screenshot.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "write_viewer" in done.stderr


@pytest.mark.browser
@pytest.mark.bench
def test_the_viewer_benchmark_runs_on_a_small_synthetic_output(tmp_path):
    figures = tmp_path / "viewer.json"
    subprocess.run(
        [sys.executable, str(ROOT / "benches" / "python" / "bench_viewer.py"), "--activities", "2000", "--reps", "1",
         "--json", str(figures)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    medians = json.loads(figures.read_text())
    assert medians["page_bytes"] > 2000 * 20 and medians["draw_full_ms"] >= 0 and medians["ready_ms"] > 0
