"""The views side by side (`views.write_views`: the Perfetto trace and the viewer on threads
while the plots are drawn): the same files as each view written on its own."""

import shutil

import pytest
from support.analysis_traces import write_all
from timely_py.analysis import analyze, plots
from timely_py.analysis.perfetto_export import write_perfetto
from timely_py.analysis.viewer import write_viewer
from timely_py.analysis.views import write_views

PLOTS = ["profile_per_slice.png", "top_contributors.png", "worker_utilisation.png"]


@pytest.fixture(scope="module")
def analysed(spark, tmp_path_factory):
    trace = write_all(tmp_path_factory.mktemp("views"))["two_processes"]
    out = tmp_path_factory.mktemp("views_out") / "out"
    analyze(trace, out=out, slice="500ns", spark=spark, views=False)
    return trace, out


def copy_of(out, target):
    shutil.copytree(out, target)
    return target


@pytest.mark.timeout(300)
def test_the_views_side_by_side_are_the_views_one_by_one(analysed, tmp_path):
    trace, out = analysed
    one = copy_of(out, tmp_path / "one")
    alone = {"plots": plots.write_plots(one), "viewer": [write_viewer(one, title="t")],
             "perfetto": [write_perfetto(one, trace, kernels="python")]}  # fmt: skip
    together_out = copy_of(out, tmp_path / "together")
    together = write_views(together_out, trace)
    write_viewer(together_out, title="t")  # the title names OUT: the same one on both sides
    assert {k: [p.name for p in v] for k, v in together.items()} == {k: [p.name for p in v] for k, v in alone.items()}
    for paths in alone.values():
        for path in paths:
            assert path.read_bytes() == (together_out / path.name).read_bytes(), path.name
