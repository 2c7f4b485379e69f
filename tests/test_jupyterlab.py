"""JupyterLab as a student meets it, in headless Chromium: the first notebook renders, nbgrader's
Validate button is there, the first cells run, and the instructor's formgrader page answers.

The server runs on 127.0.0.1 with a token, in a scratch copy of the course (running cells there
writes nothing into the repository) and a scratch home (no settings of the person running the tests).
"""
import contextlib
import http.client
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from . import browser
from .browser import wait_for
from .conftest import ROOT

ASSIGNMENT = "01_rnn_baselines"
RELEASE = ROOT / "notebooks" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"

pytestmark = [pytest.mark.notebook, pytest.mark.browser, pytest.mark.xdist_group("jupyterlab")]


@contextlib.contextmanager
def jupyter_lab(course: Path, home: Path):
    """``jupyter lab`` serving ``course``; yields (base URL, token)."""
    token, port = secrets.token_hex(16), browser.free_port()
    settings = home / "lab-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # No "official Jupyter news?" pop-up over the notebook (and no request for the news).
    (settings / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    environment = dict(os.environ, HOME=str(home), JUPYTER_CONFIG_DIR=str(home / ".jupyter"),
                       JUPYTER_RUNTIME_DIR=str(home / "runtime"),
                       JUPYTERLAB_SETTINGS_DIR=str(home / "lab-settings"),
                       JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"), COURSE_PROFILE="smoke")
    log = (home / "jupyter-lab.log").open("w")
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", "--allow-root",
         "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
         f"--ServerApp.token={token}", f"--ServerApp.root_dir={course}"],
        cwd=course, env=environment, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"jupyter lab did not start:\n{(home / 'jupyter-lab.log').read_text()[-3000:]}")
                time.sleep(0.5)
        yield base, token
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


KERNEL_IDLE = ("const s = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');"
               "return s && s.dataset.status === 'idle';")
CELLS = """return Array.from(document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell'))
.map(cell => ({
  code: cell.classList.contains('jp-CodeCell'),
  prompt: (cell.querySelector('.jp-InputPrompt') || {}).innerText || '',
  outputs: cell.querySelectorAll('.jp-OutputArea-output').length,
  images: cell.querySelectorAll('.jp-OutputArea-output img').length,
  errors: cell.querySelectorAll(
      '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"], '
      + '.jp-OutputArea-output .jp-RenderedText[data-mime-type="application/vnd.jupyter.error"]').length
    + (/Traceback|Error:/.test(Array.from(cell.querySelectorAll('.jp-OutputArea-output'))
                               .map(o => o.innerText).join('')) ? 1 : 0),
}));"""


def test_a_student_opens_runs_and_can_validate_the_first_notebook(tmp_path):
    browser.require_browser()
    assert RELEASE.is_file(), f"{RELEASE} is missing: run `course release`"
    course, home = tmp_path / "course", tmp_path / "home"
    (course / "notebooks" / ASSIGNMENT).mkdir(parents=True)
    home.mkdir()
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copy(RELEASE, course / "notebooks" / ASSIGNMENT)
    shutil.copytree(ROOT / "solutions" / ASSIGNMENT, course / "solutions" / ASSIGNMENT)  # for the formgrader
    screenshots = browser.SCREENSHOTS / "jupyterlab"  # for a person: outside the course, replaced each run
    screenshots.mkdir(parents=True, exist_ok=True)

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with jupyter_lab(course, home) as (base, token), browser.chromium(1400, 900) as driver:
        # The instructor's formgrader answers with the token, and only with it; its API reads the gradebook.
        answer = urllib.request.urlopen(f"{base}/formgrader?token={token}", timeout=30)
        assert answer.status == 200 and b"formgrader" in answer.read().lower()
        try:
            listed = json.load(
                urllib.request.urlopen(f"{base}/formgrader/api/assignments?token={token}", timeout=60)
            )
        except urllib.error.HTTPError as error:
            log = (home / "jupyter-lab.log").read_text()
            causes = re.findall(r"^\s*(\w+(?:Error|Exception): .*)$", log, re.MULTILINE)
            cause = causes[-1] if causes else "see the server log"
            pytest.fail(f"formgrader's API answered {error.code}: {cause}")
        assert [a["name"] for a in listed] == [ASSIGNMENT]
        anonymous = http.client.HTTPConnection("127.0.0.1", int(base.rsplit(":", 1)[1]), timeout=30)
        anonymous.request("GET", "/formgrader")
        assert anonymous.getresponse().status in (302, 403)

        browser.requested_urls(driver), browser.console_errors(driver)  # forget the start-up page
        driver.get(f"{base}/lab/tree/notebooks/{ASSIGNMENT}/{RELEASE.name}?token={token}")
        wait_for(driver, "return document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length > 3", 90)
        wait_for(driver, KERNEL_IDLE, 90)
        title = driver.execute_script(
            "return document.querySelector('.jp-NotebookPanel .jp-MarkdownOutput h1').innerText"
        )
        assert title.startswith("01")

        validate = [
            b
            for b in driver.find_elements(
                By.CSS_SELECTOR, ".jp-NotebookPanel-toolbar .jp-ToolbarButtonComponent"
            )
            if b.text.strip() == "Validate"
        ]
        assert validate and validate[0].is_displayed(), (
            "nbgrader's Validate button is missing from the toolbar"
        )

        # Run cells from the top with Shift+Enter, as a student would, until a figure appears.
        driver.find_element(By.CSS_SELECTOR, ".jp-NotebookPanel .jp-Cell .jp-InputPrompt").click()
        for _ in range(10):
            ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
            time.sleep(0.5)
            wait_for(driver, KERNEL_IDLE, 120)
            cells = driver.execute_script(CELLS)
            if any(cell["images"] for cell in cells):
                break
        ran = [cell for cell in cells if cell["code"] and cell["prompt"].strip() not in ("[ ]:", "")]
        assert ran and ran[0]["prompt"].strip() == "[1]:", cells[:6]
        assert any(cell["images"] for cell in cells), "no figure after running the first cells"
        assert not any(cell["errors"] for cell in ran), [c for c in ran if c["errors"]]
        driver.execute_script(
            "document.querySelector('.jp-NotebookPanel .jp-OutputArea-output img')"
            ".scrollIntoView({block: 'center'})"
        )
        time.sleep(0.5)
        driver.save_screenshot(str(screenshots / f"{ASSIGNMENT}.png"))
        assert not browser.remote_requests(driver)
        assert not browser.console_errors(driver)

        driver.get(f"{base}/formgrader?token={token}")
        wait_for(driver, "return document.body.innerText.includes(arguments[0])", 60, ASSIGNMENT)
        driver.save_screenshot(str(screenshots / "formgrader.png"))
