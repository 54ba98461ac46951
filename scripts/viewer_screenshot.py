"""Renders the critical-path viewer of an analysis (OUT/viewer.html, written by
timely_py.analysis.viewer.write_viewer) to a PNG with headless Chromium, the distribution's
package (`apt-get install -y chromium`).

Usage: .venv/bin/python scripts/viewer_screenshot.py OUT [--png FILE] [--size 1600x900] [--at FRAGMENT]
(PNG defaults to OUT/viewer.png; FRAGMENT is a viewer address such as from=0&to=5000000).
"""

import argparse
import sys
from pathlib import Path

from timely_py.analysis.headless import screenshot


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="the analysis's OUT directory")
    parser.add_argument("--png", type=Path, help="where to write the picture (default OUT/viewer.png)")
    parser.add_argument("--size", default="1600x900", help="window WIDTHxHEIGHT in pixels")
    parser.add_argument("--at", default="", help="viewer address fragment, e.g. from=0&to=5000000")
    args = parser.parse_args(argv)
    page = args.out / "viewer.html"
    if not page.is_file():
        parser.error(f"no {page} (write it with timely_py.analysis.viewer.write_viewer)")
    try:
        width, height = (int(x) for x in args.size.lower().split("x"))
    except ValueError:
        parser.error(f"--size takes WIDTHxHEIGHT, not {args.size!r}")
    try:
        print(screenshot(page, args.png or args.out / "viewer.png", (width, height), args.at))
    except (OSError, RuntimeError) as error:
        print(f"viewer_screenshot: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
