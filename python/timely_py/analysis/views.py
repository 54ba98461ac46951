"""``write_views``: the plots, the HTML viewer and the Perfetto trace of an analysis, side by side.

This module owns making the three views of OUT's tables together: the Perfetto trace
(written natively, without the interpreter's lock) and the viewer on threads of their own
while this thread draws the plots, so that at 100,000 events the views take about as long
as the plots alone (``docs/benchmarks.md``, "Views side by side"). Each view is its
own module's (:mod:`.plots`, :mod:`.viewer`, :mod:`.perfetto_export`); this one must not
make any of them itself. matplotlib is only ever used on the calling thread.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List

from .out_tables import PathLike
from .perfetto_export import write_perfetto
from .plots import write_plots
from .viewer import write_viewer


def write_views(out: PathLike, trace_dir: PathLike) -> Dict[str, List[Path]]:
    """Writes the plots, the viewer and the Perfetto trace from the tables in ``out`` (the
    trace in ``trace_dir`` names the processes); returns their paths by view. The first
    error of any view is raised, after every view has finished."""
    with ThreadPoolExecutor(max_workers=2, thread_name_prefix="views") as pool:
        perfetto = pool.submit(write_perfetto, out, trace_dir)
        viewer = pool.submit(write_viewer, out)
        try:
            plots = write_plots(out)
        finally:
            done = [perfetto.exception(), viewer.exception()]  # waits for both
        for error in done:
            if error is not None:
                raise error
    return {"plots": plots, "viewer": [viewer.result()], "perfetto": [perfetto.result()]}
