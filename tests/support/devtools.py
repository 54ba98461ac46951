"""A page in headless Chromium driven through the DevTools protocol (websocket-client):
real mouse events (wheel, drag, click) and reading the page's state, for the viewer's
interaction tests. Only loopback: the browser listens on 127.0.0.1 on a port it picks."""

import json
import re
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import websocket
from timely_py.analysis.headless import chromium

LISTENING = re.compile(r"DevTools listening on (ws://127\.0\.0\.1:(\d+)/\S+)")


class Page:
    """One browser with one page; use as a context manager (the browser stops at exit)."""

    def __init__(self, width=1400, height=900):
        self.profile = tempfile.TemporaryDirectory(prefix="timely-devtools-")
        self.browser = subprocess.Popen(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
             "--remote-debugging-address=127.0.0.1", f"--user-data-dir={self.profile.name}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.socket, self.next_id, self.console = None, 0, []

    def __enter__(self):
        port = self._port()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            target = next(t for t in json.load(answer) if t["type"] == "page")
        self.socket = websocket.create_connection(target["webSocketDebuggerUrl"], timeout=60)
        self.call("Runtime.enable")
        return self

    def __exit__(self, *_):
        if self.socket is not None:
            self.socket.close()
        self.browser.kill()
        self.browser.wait(timeout=30)
        self._remove_profile()

    def _remove_profile(self):
        """Removes the browser's profile. Its helper processes may still write there for a
        moment after the browser was killed, so a removal that finds new files is retried."""
        deadline = time.monotonic() + 10
        while True:
            try:
                self.profile.cleanup()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)

    def _port(self):
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = self.browser.stderr.readline()
            found = LISTENING.search(line)
            if found:
                return int(found.group(2))
            assert line or self.browser.poll() is None, "chromium exited before listening"
        raise AssertionError("chromium did not open its DevTools port within 60 s")

    def call(self, method, **params):
        """Sends one command and returns its result; console messages and exceptions seen
        meanwhile are kept in `console`."""
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("method") in ("Runtime.consoleAPICalled", "Runtime.exceptionThrown"):
                self.console.append(message["params"])
            if message.get("id") == self.next_id:
                assert "error" not in message, message["error"]
                return message["result"]

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        assert "exceptionDetails" not in result, result["exceptionDetails"]
        return result["result"].get("value")

    def open(self, path, ready="document.documentElement.dataset.rendered === 'true'"):
        self.call("Page.navigate", url=Path(path).resolve().as_uri())
        deadline = time.monotonic() + 60
        while not self.evaluate(f"document.readyState === 'complete' && ({ready})"):
            assert time.monotonic() < deadline, "the page did not get ready within 60 s"
            time.sleep(0.1)

    def root(self, name):
        """Attribute `data-NAME` of the page's root element."""
        return self.evaluate(f"document.documentElement.getAttribute('data-{name}')")

    def mouse(self, kind, x, y, **extra):
        self.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, **extra)

    def wheel(self, x, y, delta):
        self.mouse("mouseWheel", x, y, deltaX=0, deltaY=delta)

    def drag(self, x0, x1, y):
        self.mouse("mousePressed", x0, y, button="left", clickCount=1)
        for step in range(1, 6):
            self.mouse("mouseMoved", x0 + (x1 - x0) * step / 5, y, button="left")
        self.mouse("mouseReleased", x1, y, button="left", clickCount=1)

    def click(self, x, y):
        self.mouse("mousePressed", x, y, button="left", clickCount=1)
        self.mouse("mouseReleased", x, y, button="left", clickCount=1)
