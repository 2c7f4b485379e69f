"""A term in miniature on the course's JupyterHub, in headless Chromium: ``course hub`` starts it
(deploy/jupyterhub_config.py: PAM logins of real local users, each user's JupyterLab run as that
user, configurable-http-proxy from npm); the instructor releases 01 to nbgrader's exchange; student
A logs in, fetches 01 in the Assignments tab, answers the first exercise, presses Validate and
submits; student B submits the untouched notebook; the instructor collects, autogrades and releases
feedback; A fetches the feedback, which names the checks that failed with their messages but never
shows hidden test code. Grades: A > 0, B = 0.

The test creates two Unix accounts with random names (``hubt<hex>a``, ``hubt<hex>b``) through
``course hub`` itself, and deletes them and their homes at the end: it needs root, as the hub does.
Screenshots go to the test's tmp_path and to browser.SCREENSHOTS/hub/ for a person
($COURSE_TEST_SCREENSHOTS, by default /tmp/course-test-screenshots/).
"""
import csv
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from course_tools.grading import gradebook
from course_tools.grading.submission import source_cells, split_test_cell

from . import browser
from .accounts import student_python
from .browser import wait_for
from .conftest import ROOT

ASSIGNMENT = "01_rnn_baselines"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
# Student A's answers, typed as a student would: a correct first exercise, and a second one whose
# .squeeze() passes the visible check (B=2, T=5) but breaks the hidden one with a single sentence of
# a single step, so the feedback must report a failed hidden check without showing its code.
ANSWERS = {
    "def rnn_cell_step": "def rnn_cell_step(x_t, h_prev, W_e, W_h, b): return torch.tanh(x_t @ W_e + h_prev "
                         "@ W_h + b)",
    # a loop capped at 8 steps: it passes the visible checks (T ≤ 5) and fails a hidden one (T = 9)
    "def rnn_forward": "def rnn_forward(xs, h0, W_e, W_h, b): hs = [h0]; "
    "[hs.append(rnn_cell_step(xs[:, t], hs[-1], W_e, W_h, b)) for t in range(min(xs.shape[1], 8))]; "
    "return torch.stack(hs[1:], dim=1), hs[-1]",
}
SCREENSHOTS = browser.SCREENSHOTS / "hub"
COURSE = [str(Path(sys.executable).parent / "course")]

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("hub")]


def requirements() -> None:
    browser.require_browser()
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("the hub creates Unix accounts and runs each user's server as that user: run as root")
    if not (Path(sys.executable).parent / "jupyterhub").is_file():
        browser.unavailable("jupyterhub not installed (pip install -e '.[instructor]')")
    if not (ROOT / "build" / "vendor" / "node_modules" / ".bin" / "configurable-http-proxy").is_file():
        browser.unavailable("configurable-http-proxy not installed")


def course_command(course: Path, *arguments: str, timeout: float = 300) -> str:
    done = subprocess.run(COURSE + list(arguments), cwd=course, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, COURSE_PROFILE="smoke"))
    assert done.returncode in (0, 1), f"course {' '.join(arguments)}: {done.stderr[-3000:]}"
    return done.stdout


# A plain button, or a toolbar's jp-button web component (nbgrader's Validate).
BUTTON = """return Array.from(document.querySelectorAll(
    arguments[1] + ' button, ' + arguments[1] + ' .jp-ToolbarButtonComponent'))
  .find(b => b.innerText.trim() === arguments[0] && b.offsetParent !== null && !b.disabled) || null;"""


def click_button(driver, label: str, within: str = "#jp-main-dock-panel", timeout: float = 60) -> None:
    wait_for(driver, BUTTON, timeout, label, within).click()


def log_in(driver, base: str, user: str, password: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{base}/hub/logout")  # whoever was logged in before
    driver.get(f"{base}/hub/login")
    driver.find_element(By.ID, "username_input").send_keys(user)
    driver.find_element(By.ID, "password_input").send_keys(password)
    driver.find_element(By.ID, "login_submit").click()
    wait_for(driver, "return !!document.querySelector('.lm-MenuBar-itemLabel')", 150)
    # JupyterLab's first-start question about news, which would cover the screenshots
    driver.execute_script(
        "const no = Array.from(document.querySelectorAll('.jp-toast-button'))"
        ".find(b => b.innerText.trim() === 'No'); if (no) no.click();"
    )


def open_assignments(driver) -> None:
    """Nbgrader → Assignment List, as a student opens the Assignments tab."""
    from selenium.webdriver.common.by import By

    next(m for m in driver.find_elements(By.CSS_SELECTOR, ".lm-MenuBar-item") if m.text == "Nbgrader").click()
    menu = wait_for(
        driver, "return Array.from(document.querySelectorAll('.lm-Menu-itemLabel')).map(e => e.innerText)"
    )
    assert menu == ["Assignment List"] + [""] * (len(menu) - 1), f"a student's Nbgrader menu: {menu}"
    next(
        m for m in driver.find_elements(By.CSS_SELECTOR, ".lm-Menu-item") if m.text == "Assignment List"
    ).click()
    wait_for(
        driver,
        "return document.querySelector('#jp-main-dock-panel').innerText.includes('Released assignments')",
    )


def panel_text(driver) -> str:
    return driver.execute_script("return document.querySelector('#jp-main-dock-panel').innerText")


@pytest.fixture
def hub(tmp_path):
    """A scratch course (01 only) in a folder the students can traverse, its hub, two students."""
    requirements()
    tag = secrets.token_hex(3)
    students = [f"hubt{tag}a", f"hubt{tag}b"]
    course = Path(tempfile.mkdtemp(prefix="course-hub-"))
    course.chmod(0o755)  # the students' servers read the course's nbgrader_config.py and the exchange
    for folder in ("solutions", "notebooks"):
        shutil.copytree(ROOT / folder / ASSIGNMENT, course / folder / ASSIGNMENT)
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "deploy", course / "deploy")
    (course / "build").mkdir()
    (course / "build" / "vendor").symlink_to(ROOT / "build" / "vendor")
    (course / "students.csv").write_text(
        "student_id,name\n" + "".join(f"{s},Student {s[-1].upper()}\n" for s in students)
    )
    # outside the course: what the course folder holds is private but for its public entries (access.py)
    environment = Path(tempfile.mkdtemp(prefix="course-hub-python-"))
    environment.chmod(0o755)
    python = student_python(environment / "python")
    port = browser.free_port()
    try:
        started = time.monotonic()
        course_command(course, "hub", "--port", str(port), "--python", str(python), timeout=120)
        print(f"hub started in {time.monotonic() - started:.1f} s")
        with (course / "build" / "hub" / "new-passwords.csv").open() as handle:
            passwords = {row["id"]: row["password"] for row in csv.DictReader(handle)}
        yield course, f"http://127.0.0.1:{port}", students, passwords
    finally:
        subprocess.run(COURSE + ["hub", "--stop"], cwd=course, capture_output=True, timeout=120)
        for student in students:
            try:
                pwd.getpwnam(student)
            except KeyError:
                continue
            subprocess.run(["userdel", "--remove", student], capture_output=True)
        shutil.rmtree(course, ignore_errors=True)
        shutil.rmtree(environment, ignore_errors=True)


def test_a_term_on_the_hub(hub, tmp_path):
    course, base, (student_a, student_b), passwords = hub
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    times = {}

    def screenshot(driver, name):
        driver.save_screenshot(str(tmp_path / f"{name}.png"))
        shutil.copy(tmp_path / f"{name}.png", SCREENSHOTS / f"{name}.png")

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    print(course_command(course, "release", "--exchange", ASSIGNMENT))
    with browser.chromium(1400, 900) as driver:
        started = time.monotonic()
        log_in(driver, base, student_a, passwords[student_a])
        times["A logs in, server started"] = time.monotonic() - started
        open_assignments(driver)
        click_button(driver, "Fetch")
        wait_for(
            driver, "return document.querySelector('#jp-main-dock-panel').innerText.includes('Submit')", 60
        )
        screenshot(driver, "1-student-a-fetched")

        # Open the fetched notebook and answer the first two exercises, as a student types them.
        driver.get(f"{base}/user/{student_a}/lab/tree/{ASSIGNMENT}/{NOTEBOOK}")
        wait_for(driver, "return document.querySelectorAll('.jp-NotebookPanel .jp-Cell').length > 3", 90)
        for stub, answer in ANSWERS.items():
            # JupyterLab renders only the cells near the view: scroll down until the exercise's cell is there.
            editor = wait_for(
                driver,
                """const found = Array.from(
                  document.querySelectorAll('.jp-NotebookPanel .jp-Cell .cm-content'))
                .find(e => e.innerText.startsWith(arguments[0]));
                if (!found)
                  document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer').scrollBy(0, 600);
                return found || null;""",
                60,
                stub,
            )
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", editor)
            editor.click()
            ActionChains(driver).key_down(Keys.CONTROL).send_keys("a").key_up(Keys.CONTROL).send_keys(
                answer
            ).perform()
        ActionChains(driver).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
        wait_for(
            driver,
            "return !document.querySelector('.jp-NotebookPanel-toolbar .jp-mod-dirty, "
            ".lm-TabBar-tab.jp-mod-dirty')",
            30,
        )

        started = time.monotonic()
        click_button(driver, "Validate", ".jp-NotebookPanel-toolbar")
        dialog = wait_for(
            driver,
            "const d = document.querySelector('.jp-Dialog-content');"
            "return d && /failed|Success/.test(d.innerText) && d.innerText",
            240,
        )
        times["Validate"] = time.monotonic() - started
        screenshot(driver, "2-student-a-validate")
        # The first failing cell is the next exercise's: the answered ones passed their visible checks.
        assert "The following cell failed" in dialog and "_lm_case" in dialog, dialog[:2000]
        assert "_rnn_cell_case" not in dialog and "_rnn_forward_case" not in dialog, dialog[:2000]
        driver.execute_script("document.querySelector('.jp-Dialog .jp-Dialog-button.jp-mod-accept').click()")

        driver.get(f"{base}/user/{student_a}/lab")
        wait_for(driver, "return !!document.querySelector('.lm-MenuBar-itemLabel')", 60)
        open_assignments(driver)
        click_button(driver, "Submit")
        wait_for(
            driver,
            "return /Submitted assignments[\\s\\S]*01_rnn_baselines/.test("
            "document.querySelector('#jp-main-dock-panel').innerText)",
            60,
        )
        screenshot(driver, "3-student-a-submitted")

        log_in(driver, base, student_b, passwords[student_b])
        open_assignments(driver)
        click_button(driver, "Fetch")
        click_button(driver, "Submit")
        wait_for(
            driver,
            "return /Submitted assignments[\\s\\S]*01_rnn_baselines/.test("
            "document.querySelector('#jp-main-dock-panel').innerText)",
            60,
        )

        started = time.monotonic()
        collected = course_command(course, "collect", ASSIGNMENT)
        assert f"{student_a}, {student_b}" in collected, collected
        print(course_command(course, "autograde", ASSIGNMENT))
        times["collect + autograde 2 students"] = time.monotonic() - started
        released = course_command(course, "feedback", ASSIGNMENT, "--release")
        assert "for 2 student(s)" in released, released

        scores = gradebook.scores(gradebook.db_url(course), ASSIGNMENT)
        assert scores[student_a].score > 0 and scores[student_b].score == 0, scores

        log_in(driver, base, student_a, passwords[student_a])
        open_assignments(driver)
        click_button(driver, "Fetch Feedback")
        wait_for(
            driver,
            """return Array.from(document.querySelectorAll('#jp-main-dock-panel a'))
            .find(a => /view feedback/i.test(a.innerText)) || null;""",
            60,
        )
        screenshot(driver, "4-student-a-feedback-fetched")
        home = Path(pwd.getpwnam(student_a).pw_dir)
        pages = list((home / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
        assert len(pages) == 1, pages
        # The page as the student's server serves it (the "view feedback" link opens it in a new tab).
        driver.get(f"{base}/user/{student_a}/files/{pages[0].relative_to(home).as_posix()}")
        wait_for(driver, "return document.body && document.body.innerText.includes('Checks')", 60)
        page = driver.execute_script("return document.body.innerText")
        screenshot(driver, "5-student-a-feedback-page")

    # Each check under its exercise's name: the first answer passed; the second failed a hidden check,
    # whose message is shown (not its code); the unanswered ones failed with their first check's message.
    assert "Exercise 1 · rnn_cell_step" in page and "c07-test-cell\t2 / 2\tpassed" in page, page[:2000]
    assert "Exercise 2 · rnn_forward" in page and "c10-test-forward\t0 / 2\tfailed" in page, page[:2000]
    assert "hidden check" in page and "(rnn_forward)" in page, page[:3000]
    assert "(ElmanRNNLM): it raised NotImplementedError" in page, page[:3000]
    hidden_code = [
        line.strip()
        for cell in source_cells(course / "solutions" / ASSIGNMENT / NOTEBOOK)
        if cell.kind == "test"
        for kind, code in split_test_cell(cell.source)
        if kind == "hidden"
        for line in code.splitlines()
        if len(line.strip()) > 25
    ]
    assert hidden_code and not [line for line in hidden_code if line in page], (
        "hidden test code in the feedback"
    )
    print("seconds:", {name: round(seconds, 1) for name, seconds in times.items()})
