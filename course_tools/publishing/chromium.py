"""Headless Chromium driven through its DevTools pipe: print a page to PDF once the page says it is ready.

``chromium --print-to-pdf`` alone prints whatever is on screen when its time budget runs out (a
blank page when scripts load slowly); the DevTools protocol lets the course wait for the page.
Only the standard library is needed: Chromium reads commands on fd 3 and answers on fd 4.
"""
from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import tempfile
import time

from course_tools.course import CourseError

CHROMIUM_ENV = "COURSE_CHROMIUM"  # the Chromium binary (default: chromium on PATH)
HEADLESS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1")  # offline, whatever a page asks


def chromium() -> str:
    """The Chromium binary, or CourseError saying how to install it."""
    for candidate in (os.environ.get(CHROMIUM_ENV), "chromium", "chromium-browser", "google-chrome"):
        found = candidate and shutil.which(candidate)
        if found:
            return found
    raise CourseError(
        f"printing needs Chromium: run scripts/setup_slides.sh (make setup does), or set {CHROMIUM_ENV}")


def print_to_pdf(url: str, *, ready: str, timeout: float = 180) -> bytes:
    """The PDF of ``url`` printed as soon as the JavaScript expression ``ready`` is true (a Promise may
    resolve to it)."""
    with tempfile.TemporaryDirectory(prefix="course-chromium-") as profile, \
            DevTools([chromium(), *HEADLESS, f"--user-data-dir={profile}", url]) as devtools:
        page = next(t for t in devtools.send("Target.getTargets")["targetInfos"] if t["type"] == "page")
        session = devtools.send("Target.attachToTarget", targetId=page["targetId"], flatten=True)["sessionId"]
        deadline = time.monotonic() + timeout
        while not _evaluate(devtools, session, ready):
            if time.monotonic() > deadline:
                raise CourseError(f"{url}: not ready to print after {timeout:.0f} s in Chromium")
            time.sleep(0.2)
        data = devtools.send("Page.printToPDF", session, printBackground=True, preferCSSPageSize=True)["data"]
    return base64.b64decode(data)


def _evaluate(devtools: "DevTools", session: str, expression: str):
    try:
        return devtools.send("Runtime.evaluate", session, expression=expression, awaitPromise=True,
                             returnByValue=True)["result"].get("value")
    except CourseError:
        if devtools.process.poll() is not None:
            raise
        return None  # the page was between two documents; ask again


def pdf_pages(data: bytes) -> int:
    """Pages of a PDF that Chromium wrote (its page objects are plain dictionaries)."""
    return len(re.findall(rb"/Type\s*/Page\b", data))


class DevTools:
    """A Chromium process started with ``--remote-debugging-pipe``, and ``send`` for its commands."""

    def __init__(self, command: list[str]):
        self.command = command
        self.last_id = 0
        self.buffer = b""

    def __enter__(self) -> "DevTools":
        to_chromium, self.commands = os.pipe()
        self.answers, from_chromium = os.pipe()

        def plumb():  # in the child, before exec: the pipe ends Chromium uses go to fds 3 and 4
            writing = os.dup(from_chromium) if from_chromium == 3 else from_chromium
            os.dup2(to_chromium, 3)
            os.dup2(writing, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        # close_fds=False keeps fds 3 and 4; every other descriptor Python opens is non-inheritable.
        self.process = subprocess.Popen([*self.command, "--remote-debugging-pipe"], preexec_fn=plumb,
                                        close_fds=False, stdin=subprocess.DEVNULL,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chromium)
        os.close(from_chromium)
        return self

    def send(self, method: str, session: str | None = None, **params) -> dict:
        """Send one command (to a page when ``session`` is given) and return its result; events are
        skipped."""
        self.last_id += 1
        message = {"id": self.last_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        try:
            os.write(self.commands, json.dumps(message).encode() + b"\0")
        except BrokenPipeError:
            raise CourseError(f"Chromium quit before {method}") from None
        while True:
            while b"\0" not in self.buffer:
                chunk = os.read(self.answers, 1 << 20)
                if not chunk:
                    raise CourseError(f"Chromium quit while answering {method}")
                self.buffer += chunk
            raw, self.buffer = self.buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self.last_id:
                if "error" in answer:
                    raise CourseError(f"Chromium refused {method}: {answer['error'].get('message')}")
                return answer["result"]

    def __exit__(self, *exc) -> None:
        try:
            self.send("Browser.close")
        except CourseError:
            pass
        os.close(self.commands)
        os.close(self.answers)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
