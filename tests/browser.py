"""Headless Chromium for the browser tests, driven by Selenium through the system chromedriver.

Chromium and chromedriver come from Debian's packages (scripts/setup_system.sh installs them);
Selenium never downloads a driver or a browser here. Every host name resolves to nothing but
127.0.0.1, so a page that reaches for the network fails loudly instead of fetching.
"""
from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from .system import unavailable

CHROMIUM = os.environ.get("COURSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("COURSE_CHROMEDRIVER") or shutil.which(
    "chromedriver") or "/usr/bin/chromedriver"
# Screenshots the browser tests keep for a person, outside the course (never in build/): one
# subfolder per test, replaced by the next run.
SCREENSHOTS = Path(
    os.environ.get("COURSE_TEST_SCREENSHOTS") or Path(tempfile.gettempdir()) / "course-test-screenshots")
# The page's own files, inline data, and Chromium's built-in pages (its new-tab page): no network.
LOCAL = ("file://", "http://127.0.0.1", "data:", "blob:", "about:", "chrome:", "chrome-untrusted:",
         "chrome-error:")


def require_browser() -> None:
    """Skip (fail in CI, whose setup installs them) when Chromium, its driver or Selenium is missing."""
    missing = [name for name, path in (("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER))
               if not Path(path).is_file()]
    if importlib.util.find_spec("selenium") is None:
        missing.append("selenium (the dev extra)")
    if missing:
        unavailable(f"{', '.join(missing)} not installed")


@contextlib.contextmanager
def chromium(width: int = 1280, height: int = 800) -> Iterator:
    """A fresh headless Chromium (own profile folder) with browser and network logs recorded."""
    require_browser()
    os.environ["SE_OFFLINE"] = "true"  # selenium-manager must not look for drivers online
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    with tempfile.TemporaryDirectory(prefix="course-chromium-") as profile:
        options = webdriver.ChromeOptions()
        options.binary_location = CHROMIUM
        for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update",
                     "--disable-sync", "--no-first-run", "--disable-extensions",
                     f"--user-data-dir={profile}", f"--window-size={width},{height}",
                     "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        driver.set_page_load_timeout(60)
        try:
            yield driver
        finally:
            driver.quit()


def console_errors(driver) -> list[str]:
    """Console messages at level SEVERE since the last call (failed loads included)."""
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def requested_urls(driver) -> list[str]:
    """Every URL the page requested since the last call, from the DevTools network log."""
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    return urls


def remote_requests(driver) -> list[str]:
    return [url for url in requested_urls(driver) if not url.startswith(LOCAL)]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(driver, script: str, timeout: float = 60, *args):
    """Poll a JavaScript expression (``args`` as ``arguments[i]``) until it returns something truthy; return
    it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = driver.execute_script(script, *args)
        if value:
            return value
        time.sleep(0.25)
    pytest.fail(f"timed out after {timeout:.0f} s waiting for: {script}")
