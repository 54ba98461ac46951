"""Headless Chromium (the distribution's package) for the viewer's tests: load a page, let
its scripts run, and return the DOM it ended with plus the browser's log.

`scripts/test.sh` installs chromium when it is missing; here a missing browser is a clear
failure, never a skip.
"""

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

#: Browser window of every run, so pages lay out the same way.
WINDOW = "1400,900"


def chromium():
    """The chromium executable; fails with what to install when there is none."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    assert found, "headless Chromium is needed: `apt-get install -y chromium` (scripts/test.sh does it as root)"
    return found


def _flags(profile):
    return [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
            f"--window-size={WINDOW}", "--enable-logging=stderr", "--v=0"]  # fmt: skip


def dump_dom(page, profile, fragment=""):
    """Loads `page` (a file; `fragment` after its `#`) and returns (the serialised DOM after
    its scripts ran, the log)."""
    address = Path(page).resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = subprocess.run(
        _flags(profile) + ["--virtual-time-budget=5000", "--dump-dom", address],
        capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout, done.stderr


def console_messages(log):
    """The page's console messages and uncaught errors that Chromium logged."""
    return [line for line in log.splitlines() if "CONSOLE" in line or "Uncaught" in line]


class _Attributes(HTMLParser):
    def __init__(self, tag):
        super().__init__()
        self.tag, self.attributes = tag, None

    def handle_starttag(self, tag, attrs):
        if tag == self.tag and self.attributes is None:
            self.attributes = dict(attrs)


def attributes_of(dom, tag="html"):
    """The attributes of the first `tag` element of a dumped DOM (by default the root)."""
    parser = _Attributes(tag)
    parser.feed(dom)
    assert parser.attributes is not None, f"no <{tag}> element in the dumped DOM"
    return parser.attributes
