"""Headless Chromium (the distribution's ``chromium`` package) for the HTML viewer: load a
page and return the DOM its scripts left, or take a screenshot of it.

This module owns the browser's command line only (headless, no sandbox so that it runs as
root in containers, a throw-away profile, a fixed window). It must not download a browser:
a missing ``chromium`` is an ``OSError`` saying what to install.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from .out_tables import PathLike

#: Browser window of every run, so pages lay out the same way.
WINDOW = (1400, 900)
#: How long (virtual ms) the page's scripts may run before the DOM is taken.
BUDGET_MS = 5000
#: How long (s) one browser run may take.
TIMEOUT = 180


def chromium() -> str:
    """The chromium executable; OSError naming the package when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        raise OSError("headless Chromium is needed: apt-get install -y chromium")
    return found


def _run(page: PathLike, fragment: str, window: Tuple[int, int], action: List[str]) -> Tuple[str, str]:
    address = Path(page).resolve().as_uri() + (f"#{fragment}" if fragment else "")
    with tempfile.TemporaryDirectory(prefix="timely-chromium-") as profile:
        done = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
             f"--user-data-dir={profile}", f"--window-size={window[0]},{window[1]}", "--enable-logging=stderr",
             "--v=0", f"--virtual-time-budget={BUDGET_MS}", *action, address],
            capture_output=True, text=True, timeout=TIMEOUT,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"chromium failed on {address} (exit {done.returncode}): {done.stderr[-2000:]}")
    return done.stdout, done.stderr


def dump_dom(page: PathLike, fragment: str = "", window: Tuple[int, int] = WINDOW) -> Tuple[str, str]:
    """Loads ``page`` (a file; ``fragment`` after its ``#``), lets its scripts run and
    returns (the serialised DOM, the browser's log)."""
    return _run(page, fragment, window, ["--dump-dom"])


def screenshot(page: PathLike, png: PathLike, window: Tuple[int, int] = (1600, 900), fragment: str = "") -> Path:
    """Renders ``page`` into the PNG file ``png`` (``window`` pixels) and returns its path."""
    target = Path(png).resolve()
    _run(page, fragment, window, [f"--screenshot={target}"])
    if not target.is_file() or target.stat().st_size == 0:
        raise RuntimeError(f"chromium wrote no screenshot to {target}")
    return target


def console_messages(log: str) -> List[str]:
    """The page's console messages and uncaught errors in a browser log."""
    return [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]


class _Attributes(HTMLParser):
    def __init__(self, tag: str) -> None:
        super().__init__()
        self.tag = tag
        self.attributes: Optional[Dict[str, Optional[str]]] = None

    def handle_starttag(self, tag: str, attrs: List[Tuple[str, Optional[str]]]) -> None:
        if tag == self.tag and self.attributes is None:
            self.attributes = dict(attrs)


def attributes_of(dom: str, tag: str = "html") -> Dict[str, Optional[str]]:
    """The attributes of the first ``tag`` element of a dumped DOM (by default the root);
    ValueError when there is none."""
    parser = _Attributes(tag)
    parser.feed(dom)
    if parser.attributes is None:
        raise ValueError(f"no <{tag}> element in the DOM")
    return parser.attributes
