"""``course hub``: JupyterHub for the course on this machine (deploy/jupyterhub_config.py), on
127.0.0.1; ``course hub --stop`` stops it.

Starting it, as root (the hub starts each user's server as that user):
- every student of the roster without a Unix account gets one, with a home folder and a random
  password written to ``build/hub/new-passwords.csv`` (readable by root only) to hand out;
- the course folder is made private but for what students need (:mod:`.access`, as every
  ``course`` command does), and the Python environment their servers run is opened to them whole;
- the exchange folder exists, world-writable with the sticky bit as nbgrader's exchange requires.
The hub runs in the background; its log, database and process id are under ``build/hub/``.
"""
from __future__ import annotations

import contextlib
import csv
import os
import secrets
import signal
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import TextIO

from course_tools.course import CourseError

from .access import apply_access, public_entries, public_entry_of
from .roster import ROSTER, hub_logins

STATE = Path("build") / "hub"


def _pid(state: Path) -> int | None:
    try:
        pid = int((state / "hub.pid").read_text())
        # A hub that exited stays a zombie until its new parent, which may not be an init, reaps it.
        running = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ValueError, IndexError):
        return None
    return pid if running else None


def create_accounts(logins: list[str], passwords: Path) -> list[str]:
    """A Unix account for each login that has none; their initial passwords appended to ``passwords``."""
    import pwd

    new = []
    for login in logins:
        try:
            pwd.getpwnam(login)
            continue
        except KeyError:
            pass
        subprocess.run(["useradd", "--create-home", "--user-group", "--shell", "/bin/bash", login],
                       check=True, capture_output=True)
        password = secrets.token_urlsafe(12)
        subprocess.run(["chpasswd"], input=f"{login}:{password}\n", text=True, check=True,
                       capture_output=True)
        passwords.parent.mkdir(parents=True, exist_ok=True)
        fresh = not passwords.exists()
        with os.fdopen(os.open(passwords, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "w",
                       newline="") as handle:
            writer = csv.writer(handle)
            if fresh:
                writer.writerow(["id", "password"])
            writer.writerow([login, password])
        new.append(login)
    return new


def _public_or_outside(root: Path, path: Path) -> bool:
    """Whether ``path`` lies outside the course folder or inside one of its public entries."""
    try:
        return public_entry_of(root, path) is not None
    except ValueError:  # not inside the course folder
        return True


def _uid(login: str) -> int | None:
    import pwd

    try:
        return pwd.getpwnam(login).pw_uid
    except KeyError:
        return None


def reachable_by_others(path: Path) -> bool:
    """Whether any user may run ``path``: every folder on its way traversable, the file executable."""
    real = path.resolve()
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in (real, *real.parents))


def start_hub(root: Path, port: int, instructors: list[str], python: Path | None = None,
              out: TextIO | None = None) -> str:
    """Start the hub in the background and return its URL once it answers. ``python`` runs each
    user's server (default: this one, the course's environment)."""
    out = out or sys.stdout
    state = root / STATE
    running = _pid(state)
    if running:
        raise CourseError(f"the hub is already running (process {running}): `course hub --stop` first")
    if os.geteuid() != 0:
        raise CourseError("course hub must run as root: it creates the students' accounts and starts "
                          "each user's JupyterLab as that user")
    proxy = root / "build" / "vendor" / "node_modules" / ".bin" / "configurable-http-proxy"
    if not proxy.is_file():
        raise CourseError(f"{proxy} is missing: run scripts/setup_system.sh (make setup does)")
    hub = Path(sys.executable).parent / "jupyterhub"
    if not hub.is_file():
        raise CourseError(f"{hub} is missing: pip install -e '.[instructor]' (make setup does)")
    python = python or Path(sys.executable)
    if not reachable_by_others(python):
        raise CourseError(
            f"{python.resolve()} cannot be run by the students (a folder on its way is private, "
            "as with a Python under /root): give `course hub --python` one they can run that "
            "imports this course's packages")
    if not _public_or_outside(root, python):
        raise CourseError(
            f"{python} is inside the course folder, which students cannot read but for its public "
            f"entries ({', '.join(e.path for e in public_entries(root))}): give `course hub --python` "
            "the course's .venv or a Python outside the course folder")
    logins = hub_logins(root / ROSTER)
    state.mkdir(parents=True, exist_ok=True)
    os.chmod(state, 0o700)  # the hub's database and cookie secret
    new = create_accounts(logins, state / "new-passwords.csv")
    if new:
        print(f"created {len(new)} account(s): {', '.join(new)}; their passwords are in "
              f"{(state / 'new-passwords.csv').relative_to(root)}", file=out)
    access = apply_access(root, open_environment=True)
    for problem in access.problems:
        print(f"course hub: warning: {problem}", file=out)
    if not access.acl:
        print(
            "course hub: warning: this file system has no POSIX ACLs: files that other tools (git, Jupyter, "
            "nbgrader) create at the top of the course folder are readable by students until the next "
            "`course` "
            "command", file=out)
    for instructor in instructors:
        if _uid(instructor) not in (0, root.stat().st_uid):
            print(
                f"course hub: warning: {instructor} does not own the course folder, which is private to its "
                "owner: "
                "their formgrader cannot read it", file=out)

    environment = dict(os.environ, COURSE_ROOT=str(root), COURSE_HUB_STATE=str(state),
                       COURSE_HUB_PORT=str(port), COURSE_HUB_INSTRUCTORS=",".join(instructors),
                       COURSE_HUB_PYTHON=str(python))
    log = state / "jupyterhub.log"
    with log.open("ab") as handle:
        process = subprocess.Popen([str(hub), "-f", str(root / "deploy" / "jupyterhub_config.py")], cwd=state,
                                   env=environment, stdout=handle, stderr=subprocess.STDOUT,
                                   start_new_session=True)  # it outlives this command
    (state / "hub.pid").write_text(str(process.pid))
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}hub/api", timeout=5)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop_hub(root, out=open(os.devnull, "w"))
                tail = log.read_text(errors="replace").splitlines()[-15:]
                raise CourseError("the hub did not start; the end of its log:\n" + "\n".join(tail))
            time.sleep(0.5)
    print(f"the hub is running at {url} (log: {log.relative_to(root)}); stop it with `course hub --stop`",
          file=out)
    return url


def stop_hub(root: Path, out: TextIO | None = None) -> None:
    """Stop the hub, its proxy and every user's server it started."""
    out = out or sys.stdout
    state = root / STATE
    pid = _pid(state)
    if pid is None:
        print("the hub is not running", file=out)
        return
    # The hub stops its users' servers and its proxy on SIGTERM (JupyterHub.cleanup_servers/_proxy).
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while _pid(state) and time.monotonic() < deadline:
        time.sleep(0.5)
    if _pid(state):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
    (state / "hub.pid").unlink(missing_ok=True)
    print("the hub is stopped", file=out)
