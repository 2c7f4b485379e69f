"""What a sandbox sees: the bubblewrap command line (namespaces, read-only mounts of the Python
installation, of course_lib and of :mod:`course_tools.grading.sandboxed` only, the inbox, the outbox
and the tmpfs folders), the seccomp filter handed to it, and the clean environment of a run.
"""
from __future__ import annotations

import os
import shutil
import stat
import sys
from pathlib import Path

from course_tools.course import CourseError

from . import seccomp
from .limits import Limits

INBOX, OUTBOX, SCRATCH = "/sandbox/in", "/sandbox/out", "/sandbox/work"
SHM = "/dev/shm"


def bwrap_or_refuse(root: bool) -> str:
    """bubblewrap's path, once this installation can be sandboxed: bwrap is installed and, for a root
    grader (whose runs drop to a slot user), what the sandbox mounts is readable by other accounts."""
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise CourseError(
            "bubblewrap (bwrap) is needed to grade untrusted submissions in isolation: install it "
            "(apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap), or pass "
            "--unsafe-no-sandbox to grade trusted notebooks with resource limits but no isolation")
    unreadable = unreadable_mounts() if root else []
    if unreadable:
        path, mode = unreadable[0]
        more = f" and {len(unreadable) - 1} more" if len(unreadable) > 1 else ""
        raise CourseError(
            f"the sandbox runs student code as an account of its own, which cannot read {path} (mode "
            f"{mode:o}){more}: it was checked out or installed under umask 077. Make it readable "
            f"(chmod -R a+rX {path}) or install again under umask 022; nothing was graded")
    return bwrap


def unreadable_mounts() -> list[tuple[str, int]]:
    """(path, mode) of what the sandbox mounts that another account cannot read: every file and folder
    of course_lib and of the sandboxed tooling, and each other mounted folder itself (a checkout or a
    virtual environment made under umask 077 has files 0600 and folders 0700)."""
    walked = {installed_course_lib(), *_sandboxed_tooling()}
    found = []
    for top in _python_paths():
        paths = [top]
        if top in walked:
            for folder, folders, files in os.walk(top):
                folders[:] = [f for f in folders if f != "__pycache__"]
                paths += [os.path.join(folder, name) for name in folders + files if not name.endswith(".pyc")]
        for path in paths:
            mode = os.stat(path).st_mode
            needed = stat.S_IROTH | (stat.S_IXOTH if stat.S_ISDIR(mode) else 0)
            if mode & needed != needed:
                found.append((path, stat.S_IMODE(mode)))
    return found


def seccomp_fd() -> int | None:
    """A pipe's read end holding the seccomp filter, for bwrap's ``--seccomp`` (None where there is none)."""
    program = seccomp.program()
    if program is None:
        return None
    reading, writing = os.pipe()
    try:
        os.write(writing, program)  # a few hundred bytes: the pipe holds them until bwrap reads
    finally:
        os.close(writing)
    return reading


def bwrap_command(bwrap: str, root: bool, argv: list[str], inbox: Path, outbox: Path, limits: Limits,
                  course_lib: Path | None = None, shared: Path | None = None,
                  filter_fd: int | None = None) -> list[str]:
    """The command line that runs ``argv`` under ``bwrap`` (``root``: the grader runs as root);
    ``shared``: a zygote's folder, mounted as the parent of INBOX and OUTBOX (each run's own are moved
    into it) instead of one run's inbox and outbox;
    ``filter_fd``: the seccomp filter (:mod:`.seccomp`) to load."""
    command = [bwrap, "--die-with-parent", "--new-session", "--unshare-pid", "--unshare-net",
               "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if not root:
        command += ["--unshare-user", "--disable-userns", "--cap-drop", "ALL"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            command += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            command += ["--ro-bind", top, top]
    command += ["--ro-bind", "/usr", "/usr"]
    for name in ("passwd", "group", "nsswitch.conf", "hosts", "localtime", "ld.so.cache", "ld.so.conf",
                 "ld.so.conf.d", "alternatives", "fonts", "ssl/certs"):
        command += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    made = {"/", "/usr", "/etc"}
    for path in _python_paths():
        command += _dirs(path, made) + ["--ro-bind", path, path]
    if course_lib is not None:  # bound after the Python paths, so it hides the real package
        command += ["--ro-bind", str(course_lib), installed_course_lib()]
    if shared is not None:
        (shared / Path(SCRATCH).name).mkdir(exist_ok=True)  # the tmpfs's mount point
        command += _dirs(INBOX, made) + ["--bind", str(shared), str(Path(INBOX).parent)]
    command += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(limits.shm_bytes),
                "--tmpfs", SHM, "--perms", "1777", "--size", str(limits.scratch_bytes), "--tmpfs", SCRATCH]
    if shared is None:
        command += _dirs(INBOX, made) + ["--ro-bind", str(inbox), INBOX, "--bind", str(outbox), OUTBOX]
    # Read-only from here: the sandbox's own root and /dev (both tmpfs of bwrap's, writable by the
    # sandbox's user when bwrap runs unprivileged); only the mounts above stay writable.
    command += ["--remount-ro", "/dev", "--remount-ro", "/"]
    if filter_fd is not None:
        command += ["--seccomp", str(filter_fd)]
    return command + ["--chdir", SCRATCH, "--"] + argv


def environment(limits: Limits, scratch: str) -> dict[str, str]:
    """A clean environment: nothing of the instructor's leaks in; smoke profile as under nbgrader."""
    threads = str(limits.threads)
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch, "TMPDIR": f"{scratch}/tmp", "MPLCONFIGDIR": f"{scratch}/.matplotlib",
        "COURSE_RUNS_DIR": f"{scratch}/runs", "NBGRADER_EXECUTION": "autograde", "COURSE_PROFILE": "smoke",
        "MPLBACKEND": "Agg", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
        "OPENBLAS_NUM_THREADS": threads, "MALLOC_ARENA_MAX": "2", "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8", "TERM": "dumb",
    }


def _python_paths() -> list[str]:
    """The interpreter, its standard library, its site-packages (and the site folders their ``.pth``
    files add, as a virtual environment of the system's Python built on another one has), course_lib
    and of course_tools only what runs in the sandbox (:mod:`course_tools.grading.sandboxed` and the
    ``__init__.py`` of its parents): nothing of the course folder, nothing of the trusted grader."""
    import site

    import course_lib

    wanted = {
        sys.base_prefix, sys.prefix,
        str(Path(course_lib.__file__).resolve().parent), *_sandboxed_tooling(),
        str(Path(os.path.realpath(sys.executable)).parent), *site.getsitepackages(),
        *(p for p in sys.path if Path(p).name in ("site-packages", "dist-packages"))
    }
    kept: list[str] = []
    for path in sorted({os.path.realpath(p) for p in wanted} | wanted):
        if _under(path, "/usr") or any(_under(path, k) for k in kept) or not os.path.exists(path):
            continue
        kept.append(path)
    return kept


def _sandboxed_tooling() -> list[str]:
    """The runner's package folder and the ``__init__.py`` files of the packages above it."""
    from . import sandboxed

    folder = Path(sandboxed.__file__).resolve().parent
    return [str(folder), *(str(package / "__init__.py") for package in folder.parents[:2])]


def installed_course_lib() -> str:
    import course_lib

    return str(Path(course_lib.__file__).resolve().parent)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _dirs(path: str, made: set[str]) -> list[str]:
    """bwrap creates missing parents with mode 0700; create them world-readable ourselves."""
    out = []
    for parent in reversed(Path(path).parents):
        if str(parent) not in made:
            made.add(str(parent))
            out += ["--perms", "0755", "--dir", str(parent)]
    return out
