"""The trusted parent's side of the warm runners (:mod:`course_tools.grading.sandboxed.zygote`): one
per slot, in a sandbox built like any other, forking each run; the course_lib copy it mounts is
updated in place between runs while the zygote has not imported what changed.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import select
import shutil
import socket
import subprocess
from pathlib import Path

from course_tools.untrusted import ENTRY_BYTES, tree_bytes

from .isolation import INBOX, OUTBOX, SCRATCH
from .processes import Usage, host_pid, kill, tree_usage

ZYGOTE = "course_tools.grading.sandboxed.zygote"
ZYGOTE_START_S = 300.0  # a zygote that is not ready by then is given up; the run starts a new Python


class Library:
    """The folder a zygote's sandbox mounts (read-only) as course_lib, and the copy it holds now.

    The main runs of a batch use the assignment's redacted course_lib and its cascade runs other
    copies (with the references of some dependencies kept); they differ in a few modules the
    zygote never imported. Between two runs, the files that differ are replaced in place, so one
    zygote serves them all; a copy that differs in a module the zygote imported needs a new one.
    """

    def __init__(self, folder: Path, source: Path):
        shutil.copytree(source, folder, ignore=shutil.ignore_patterns("__pycache__"))
        os.chmod(folder, 0o755)
        self.folder, self.source = folder, source

    def differences(self, source: Path) -> set[str]:
        """The files (relative paths) in which ``source`` differs from the copy held now."""
        mine, theirs = _digests(self.source), _digests(source)
        return {path for path in mine.keys() | theirs.keys() if mine.get(path) != theirs.get(path)}

    def hold(self, source: Path, changed: set[str]) -> None:
        for relative in changed:
            target, new = self.folder / relative, source / relative
            if new.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                staged = target.with_name(target.name + ".new")
                shutil.copyfile(new, staged)
                os.chmod(staged, 0o644)
                os.replace(staged, target)
            else:
                target.unlink(missing_ok=True)
        self.source = source


@functools.lru_cache(maxsize=64)  # a redacted copy never changes once built (it is named by its content)
def _digests(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*.py")) if "__pycache__" not in path.parts}


class ZygoteHandle:
    """The parent's end of one warm runner (:mod:`.sandboxed.zygote`): its bwrap process, the control socket,
    ``folder``, the one host folder its sandbox sees (as the parent of INBOX and OUTBOX), and the
    ``library`` it mounts as course_lib."""

    def __init__(self, key: tuple, command: list[str], env: dict[str, str], folder: Path, library: Library,
                 filter_fd: int | None):
        self.key, self.folder, self.library = key, folder, library
        self.imported: set[str] = set()  # course_lib files the zygote imported: they must not change
        self.inbox_bytes = 0  # what the run's inbox held when it was moved in
        self.control, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.log = open(folder.with_suffix(".log"), "wb")  # the zygote's own output (an import error)
        passed = (theirs.fileno(),) + ((filter_fd,) if filter_fd is not None else ())
        self.process = subprocess.Popen(command + [str(theirs.fileno())], pass_fds=passed,
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                        env=env, cwd="/", start_new_session=True)
        theirs.close()
        self.reply: dict | None = None
        self.host_pid: int | None = None
        if self.answered(ZYGOTE_START_S) and isinstance(self.reply.get("ready"), int):
            self.host_pid = host_pid(self.process.pid, self.reply["ready"])
            self.imported = set(self.reply.get("imported", []))
        self.reply = None

    def serve(self, source: Path) -> bool:
        """Hold ``source`` as course_lib for the next run; False when a module the zygote imported differs."""
        if source == self.library.source:
            return True
        changed = self.library.differences(source)
        if changed & self.imported:
            return False
        self.library.hold(source, changed)
        return True

    def alive(self) -> bool:
        return self.host_pid is not None and self.process.poll() is None

    def answered(self, timeout: float) -> bool:
        """Whether the zygote has answered (or died), waiting up to ``timeout`` seconds."""
        if self.reply is None:
            if select.select([self.control], [], [], timeout)[0]:
                message = self.control.recv(1 << 16)
                self.reply = json.loads(message) if message else {}
            elif self.process.poll() is not None:
                self.reply = {}
        return self.reply is not None

    def send(self, inbox: str, outbox: str, drop_to: int | None, output: int, channel: int | None) -> None:
        """Fork a run of the runner on ``inbox`` and ``outbox`` (as the sandbox sees them), dropping to
        ``drop_to``, its output on ``output``; the zygote adds ``channel`` to its command line as the
        number that descriptor has there (:func:`.sandboxed.protocol.runner_arguments`)."""
        self.reply = None
        request = {"inbox": inbox, "outbox": outbox, "drop_to": drop_to}
        socket.send_fds(self.control, [json.dumps(request).encode()],
                        [output] + ([channel] if channel is not None else []))

    def returncode(self) -> int | None:
        """The run's exit status; None when the zygote died or could not clear the sandbox after it."""
        code = (self.reply or {}).get("returncode")
        return code if isinstance(code, int) and self.reply.get("clean") is True else None

    def usage(self) -> "Usage":
        """CPU seconds of the whole sandbox so far (a run's own: the difference from its start), and the
        resident memory of the run's processes: the sandbox's, less the zygote's own."""
        return tree_usage(self.process.pid, skip=self.host_pid)

    def written_bytes(self, stop_above: int) -> int:
        """What the run has written in the folder: its outbox, and anything beside it where the
        sandbox's user may write (unprivileged, the folder and the inbox are its own), less what the
        inbox held when the run started; the scratch tmpfs's mount point aside."""
        total, most = 0, stop_above + self.inbox_bytes
        try:
            for entry in os.scandir(self.folder):
                if entry.name == Path(SCRATCH).name or total > most:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    total += ENTRY_BYTES + tree_bytes(Path(entry.path), most - total)
                else:
                    info = entry.stat(follow_symlinks=False)
                    total += ENTRY_BYTES + max(info.st_size, info.st_blocks * 512)
        except OSError:  # the folder went with a zygote that died: nothing more was written
            pass
        return total - self.inbox_bytes

    def take(self, inbox: Path, outbox: Path) -> None:
        self.inbox_bytes = ENTRY_BYTES + tree_bytes(inbox)
        os.rename(inbox, self.folder / Path(INBOX).name)
        os.rename(outbox, self.folder / Path(OUTBOX).name)

    def give_back(self, inbox: Path, outbox: Path) -> None:
        """The run's inbox and outbox back where they were; whatever else the run left in the folder
        goes. An outbox the run replaced (by a link, a file) comes back as an empty folder."""
        for name, target in ((Path(INBOX).name, inbox), (Path(OUTBOX).name, outbox)):
            moved = self.folder / name
            if moved.is_dir() and not moved.is_symlink():
                os.rename(moved, target)
            else:
                target.mkdir(exist_ok=True)
        for entry in os.scandir(self.folder):
            if entry.name != Path(SCRATCH).name:
                remove(Path(entry.path))

    def stop(self) -> None:
        """Kill the sandbox: the zygote, the run and everything it started."""
        kill(self.process)
        self.process.wait()

    def close(self) -> None:
        self.stop()
        self.control.close()
        self.log.close()
        remove(self.folder)
        self.folder.with_suffix(".log").unlink(missing_ok=True)
        remove(self.library.folder)


def remove(path: Path) -> None:
    """Remove a file or a tree the run may have made unreadable to its owner (a folder of mode 000)."""
    if path.is_dir() and not path.is_symlink():
        for folder, subfolders, _ in os.walk(path):
            for name in subfolders:
                try:
                    os.chmod(os.path.join(folder, name), 0o700, follow_symlinks=False)
                except OSError:
                    pass
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
