"""What a class sends that ``course collect --zip`` and ``course collect`` must survive, each with the
outcome it must get (tests/test_hostile_class.py runs them all, as the instructor does: root).

Beside tests/submissions/ (what a submitted notebook may hold, for the grader): here, what may
arrive around it. Each case has an assignment of its own in one scratch course.

- :data:`DOWNLOADS`: a Canvas or Moodle download, each entry named by the "LMS" and holding what a
  student uploaded, nested archives included (:func:`archive` records the Unix mode and type of
  each member, as a hostile zipper can). Beside each case's entries, alice and chloe upload honest
  notebooks: they must be placed whatever the others did. Roster: alice (Canvas 1001, Moodle
  5001), bob (1002, 5002), chloe (1003, Participant 5003).
- :data:`INBOXES`: steps by real Unix accounts ``a`` and ``b`` (students of the roster) and ``c``
  (an account of the machine that is not) on the exchange's inbox: nbgrader's
  own ``submit``, or a few lines of Python a determined student runs as themselves (they cannot
  list the inbox, so an entry's name is known only to whoever made it, or guessed).
"""
from __future__ import annotations

import io
import stat
import struct
import zipfile
from dataclasses import dataclass, field
from typing import Callable

import nbformat

ROSTER = """student_id,name,email,canvas_id,moodle_identifier
alice,Alice Martin,alice@uni.example,1001,5001
bob,Bob Dupont,bob@uni.example,1002,5002
chloe,Chloé Lefèvre,chloe@uni.example,1003,Participant 5003
"""
HONEST = ("alice", "chloe")  # placed in every download case, with their own notebooks
# in every solutions/ notebook of the scratch course, in no release
SECRET_OF_THE_SOLUTION = "SOLUTION-ONLY-7d1e"
FUTURE = "2099-01-01 00:00:00.000000 UTC"


def notebook(marker: str) -> str:
    """A notebook whose one cell names who wrote it."""
    return nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"answer = {marker!r}")]))


# --------------------------------------------------------------------------- LMS downloads ----

@dataclass(frozen=True)
class Member:
    """One member of an archive: its name, its bytes, and the Unix mode (type and permissions) its
    header records. A link's bytes are its target, as zip stores them."""

    name: str
    data: bytes = b""
    mode: int = stat.S_IFREG | 0o644


def archive(*members: Member, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression) as handle:
        for member in members:
            info = zipfile.ZipInfo(member.name, date_time=(2024, 1, 1, 0, 0, 0))
            info.create_system = 3  # Unix: the mode below is read by extractors
            info.external_attr = member.mode << 16
            info.compress_type = compression
            handle.writestr(info, member.data)
    return buffer.getvalue()


def zeros(count: int) -> bytes:
    return bytes(count)


def lying_about_size(data: bytes, claimed: int) -> bytes:
    """An archive whose table of contents claims each member is ``claimed`` bytes long."""
    data = bytearray(data)
    at = data.find(b"PK\x01\x02")
    while at >= 0:
        data[at + 24:at + 28] = struct.pack("<I", claimed)  # central directory: uncompressed size
        at = data.find(b"PK\x01\x02", at + 4)
    return bytes(data)


@dataclass(frozen=True)
class DownloadCase:
    name: str
    description: str
    entries: Callable[[str], dict[str, bytes]]  # the notebook's file name -> the download's entries
    placed: dict[str, str] = field(default_factory=dict)  # student -> the marker their placed notebook holds
    refused: dict[str, str] = field(default_factory=dict)  # student -> text in why their upload was refused
    unplaced: tuple[str, ...] = ()  # text in the report's "could not place" lines
    status: int = 1


def honest_entries(name: str) -> dict[str, bytes]:
    return {f"martinalice_1001_777001_{name}": notebook("alice").encode(),
            f"lefevrechloe_1003_777003_{name}": notebook("chloe").encode()}


ELF = b"\x7fELF\x02\x01\x01" + bytes(9)  # the start of a program, not a notebook

DOWNLOADS = [
    DownloadCase(
        "setuid_program_as_notebook", "a program under the notebook's name, mode 4755 in the zip entry",
        lambda nb:
        {"dupontbob_1002_777002_work.zip": archive(Member(nb, ELF + b"bob", stat.S_IFREG | 0o4755))}, placed={
            "bob": "bob"
        }, status=0),  # placed as data: a regular file, no setuid or exec bit
    DownloadCase(
        "symlink_member", "the notebook as a symbolic link to the solutions", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(nb, f"../../../solutions/{nb[:-6]}/{nb}".encode(), stat.S_IFLNK | 0o777))
        }, refused={"bob": "is a symbolic link"}),
    DownloadCase(
        "nested_download_name_of_another_student",
        "bob's zip holds a file named like alice's Canvas download entry", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(f"martinalice_1001_777001_{nb}",
                       notebook("bob as alice").encode()))
        }, unplaced=("bob's file 'martinalice_1001_777001_", )),
    DownloadCase(
        "download_name_inside_an_entry_name", "bob's own file named like alice's download entry",
        lambda nb: {f"dupontbob_1002_777002_martinalice_1001_777001_{nb}": notebook("bob as alice").encode()},
        unplaced=("bob's file 'martinalice_1001_777001_", )),
    DownloadCase(
        "canvas_and_moodle_in_one_name", "a Canvas entry whose file name carries alice's Moodle id",
        lambda nb: {f"dupontbob_1002_777002_x_5001_assignsubmission_file_{nb}": notebook("bob").encode()},
        unplaced=("Canvas's and Moodle's patterns", )),
    DownloadCase(
        "moodle_name_twice", "a Moodle full name that carries alice's participant id", lambda nb: {
            f"Bob_5001_assignsubmission_file__5002_assignsubmission_file_{nb}": notebook("bob as alice").
            encode()
        }, unplaced=("Moodle's twice", )),
    DownloadCase(
        "moodle_folder_name_twice", "the same in Moodle's folder layout", lambda nb: {
            f"Bob_5001_assignsubmission_file__5002_assignsubmission_file_/{nb}": notebook("bob as alice").
            encode()
        }, unplaced=("Moodle's pattern twice", )),
    DownloadCase(
        "dotdot_member", "a ../ member beside the notebook (stopped nbgrader's whole import)", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(nb,
                       notebook("bob").encode()), Member("../notes.txt", b"escaped"))
        }, refused={"bob": "leaves its folder"}),
    DownloadCase(
        "backslash_dotdot_member", "a Windows-style ..\\ member", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(nb,
                       notebook("bob").encode()), Member("..\\notes.txt", b"escaped"))
        }, refused={"bob": "leaves its folder"}),
    DownloadCase(
        "absolute_member", "a member with an absolute path",
        lambda nb: {"dupontbob_1002_777002_work.zip": archive(Member("/etc/cron.d/course", b"* * * * *"))},
        refused={"bob": "an absolute path"}),
    DownloadCase(
        "fifo_member", "the notebook as a FIFO",
        lambda nb: {"dupontbob_1002_777002_work.zip": archive(Member(nb, b"", stat.S_IFIFO | 0o644))},
        refused={"bob": "is a FIFO"}),
    DownloadCase(
        "device_member", "a character device",
        lambda nb: {"dupontbob_1002_777002_work.zip": archive(Member(nb, b"", stat.S_IFCHR | 0o666))},
        refused={"bob": "is a device"}),
    DownloadCase(
        "nested_bomb", "32 MiB of zeros in a few KiB, inside bob's zip",
        lambda nb: {"dupontbob_1002_777002_work.zip": archive(Member(nb, zeros(32 << 20)))},
        refused={"bob": "decompresses over 100 times"}),
    DownloadCase(
        "bomb_as_the_download_entry", "the same as bob's uploaded notebook itself",
        lambda nb: {f"dupontbob_1002_777002_{nb}": zeros(32 << 20)},
        refused={"bob": "decompresses over 100 times"}),
    DownloadCase(
        "bomb_two_archives_deep", "the same in a zip in bob's zip", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member("inner.zip", archive(Member(nb, zeros(32 << 20)))))
        }, refused={"bob": "decompresses over 100 times"}),
    DownloadCase(
        "too_large_notebook", "a 40 MiB notebook, stored without compression", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(nb, zeros(40 << 20)), compression=zipfile.ZIP_STORED)
        }, refused={"bob": "is over 32 MiB"}),
    DownloadCase(
        "nested_too_deep", "a zip in a zip in bob's zip", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member("a.zip", archive(Member("b.zip", archive(Member(nb,
                                                                       notebook("bob").encode()))))))
        }, refused={"bob": "archives nested over 3 deep"}),
    DownloadCase(
        "too_many_members", "1500 empty files",
        lambda nb: {"dupontbob_1002_777002_work.zip": archive(*[Member(f"f{i}.txt") for i in range(1500)])},
        refused={"bob": "over 1000 files"}),
    DownloadCase(
        "lying_header", "a table of contents that says the notebook is 10 bytes long", lambda nb: {
            "dupontbob_1002_777002_work.zip": lying_about_size(
                archive(Member(nb,
                               notebook("bob").encode())), 10)
        }, refused={"bob": "cannot be read"}),
    DownloadCase(
        "honest_zip_of_a_folder",
        "correct but different: the notebook in a folder, with Jupyter's checkpoints", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(f"work/{nb}",
                       notebook("bob").encode()),
                Member(f"work/.ipynb_checkpoints/{nb[:-6]}-checkpoint.ipynb",
                       notebook("old").encode()))
        }, placed={"bob": "bob"}, unplaced=("-checkpoint.ipynb' is not the assignment's notebook", )),
    DownloadCase(
        "two_copies", "the notebook twice in one zip: the first by name kept, the second named", lambda nb: {
            "dupontbob_1002_777002_work.zip": archive(
                Member(nb,
                       notebook("bob").encode()), Member(f"old/{nb}",
                                                         notebook("old").encode()))
        }, placed={"bob": "bob"}, unplaced=("a second", )),
    DownloadCase(
        "reupload", "correct but different: a late re-upload, which Canvas names with -1",
        lambda nb: {f"dupontbob_LATE_1002_777002_{nb[:-6]}-1.ipynb": notebook("bob").encode()},
        placed={"bob": "bob"}, status=0),
    DownloadCase(
        "unknown_id_with_a_roster_name", "bob's name, another Canvas id: the name is never a match",
        lambda nb: {f"dupontbob_9999_777002_{nb}": notebook("not bob").encode()},
        unplaced=("no student of the roster has canvas_id 9999", )),
    DownloadCase(
        "moodle_online_text", "Moodle's online text beside a file submission", lambda nb: {
            "Bob Dupont_5002_assignsubmission_onlinetext_/onlinetext.html": b"<p>hi</p>",
            f"Bob Dupont_5002_assignsubmission_file_/{nb}": notebook("bob").encode()
        }, placed={"bob": "bob"}, unplaced=("onlinetext submission, not an uploaded file", )),
]


# ---------------------------------------------------------------------------- the inbox ----

# Python a student runs as themselves: an entry made by hand as nbgrader's submit makes it (a folder
# named <login>+<assignment>+<time>+<random>, timestamp.txt and submission_secret.txt beside the
# notebook, then the folder opened to everyone).
ENTRY = '''
import os
def entry(name, files, mode=0o777):
    path = os.path.join(inbound, name)
    os.mkdir(path)
    for file, data in files.items():
        with open(os.path.join(path, file), "w") as handle:
            handle.write(data)
    os.chmod(path, mode)
    return path
'''


@dataclass(frozen=True)
class Act:
    """A step of an inbox case: ``who`` ("a", "b" or "c") submits ``marker`` with nbgrader's submit, or runs
    ``code``."""

    who: str
    marker: str = ""
    code: str = ""


@dataclass(frozen=True)
class InboxCase:
    name: str
    description: str
    acts: Callable[[dict[str, str], str], list[Act]]  # (logins by role, assignment) -> the steps, in order
    collected: dict[str,
                    str] = field(default_factory=dict)  # role -> the marker their collected notebook holds
    refused: tuple[str, ...] = ()  # text in the refused lines; {a}, {b} and {c} stand for the logins
    notes: tuple[str, ...] = ()
    status: int = 1


def _made(name: str, files: dict[str, str], mode: int = 0o777, extra: str = "") -> str:
    return ENTRY + f"path = entry({name!r}, {files!r}, {mode:#o})\n" + extra


def _files(marker: str, assignment: str, when: str) -> dict[str, str]:
    return {f"{assignment}.ipynb": notebook(marker), "timestamp.txt": when, "submission_secret.txt": "s" * 32}


INBOXES = [
    InboxCase(
        "submit_as_another", "b makes an entry named for a, dated 2099 (a's real ones never superseded it)",
        lambda who, asg: [
            Act("a", "a"),
            Act("b", code=_made(f"{who['a']}+{asg}+{FUTURE}+AAAAAAAAAAAA", _files("b as a", asg, FUTURE)))
        ], collected={"a": "a"}, refused=("named for {a} but made by {b}", )),
    InboxCase("not_on_the_roster", "an account of the machine that is not a student of the course submits",
              lambda who, asg: [Act("c", "c"), Act("a", "a")], collected={"a": "a"},
              refused=("made by {c}, who is not a student of the roster", )),
    InboxCase(
        "entry_for_nobody", "b makes an entry named for an account that does not exist", lambda who, asg: [
            Act("b", code=_made(f"nosuchstudent+{asg}+2024-01-01 00:00:00.000000 UTC+x",
                                _files("b", asg, "2024")))
        ], refused=("named for nosuchstudent but made by {b}", )),
    InboxCase(
        "link_to_the_solution", "b's later entry holds a link to the solution; b's earlier one is collected",
        lambda who, asg: [
            Act("b", "b honest"),
            Act(
                "b", code=_made(
                    f"{who['b']}+{asg}+2030-01-01 00:00:00.000000 UTC+BBBBBBBBBBBB", {
                        "timestamp.txt": "2030", "submission_secret.txt": "s"
                    }, extra=f"os.symlink(os.path.join(course, 'solutions', {asg!r}, '{asg}.ipynb'), "
                    f"os.path.join(path, '{asg}.ipynb'))\n"))
        ], collected={"b": "b honest"}, refused=("is a symbolic link: links are not followed", )),
    InboxCase(
        "link_as_the_secret", "the submission secret as a link to a file only root may read",
        lambda who, asg: [
            Act(
                "b", code=_made(
                    f"{who['b']}+{asg}+2024-01-01 00:00:00.000000 UTC+x", {
                        f"{asg}.ipynb": notebook("b"), "timestamp.txt": "2024"
                    }, extra="os.symlink('/etc/shadow', "
                    "os.path.join(path, 'submission_secret.txt'))\n"))
        ], refused=("submission_secret.txt is a symbolic link", )),
    InboxCase(
        "entry_is_a_link", "the entry itself a link to the solutions' folder", lambda who, asg: [
            Act(
                "b", code=f"import os\nos.symlink(os.path.join(course, 'solutions', {asg!r}), "
                f"os.path.join(inbound, '{who['b']}+{asg}+2024-01-01 00:00:00.000000 UTC+x'))\n")
        ], refused=("a symbolic link made by {b}, not a submission folder", )),
    InboxCase(
        "entry_is_a_file", "the entry a plain file", lambda who, asg: [
            Act(
                "b", code=f"open(inbound + '/{who['b']}+{asg}+2024-01-01 00:00:00.000000 UTC+x', "
                f"'w').write('hello')\n")
        ], refused=("a file made by {b}, not a submission folder", )),
    InboxCase(
        "fifo_notebook", "the notebook a FIFO, which would block whoever opens it", lambda who, asg: [
            Act(
                "b", code=_made(f"{who['b']}+{asg}+2024-01-01 00:00:00.000000 UTC+x", {
                    "timestamp.txt": "2024", "submission_secret.txt": "s"
                }, extra=f"os.mkfifo(os.path.join(path, '{asg}.ipynb'))\n"))
        ], refused=("a FIFO, not a regular file", )),
    InboxCase(
        "huge_sparse_notebook", "a 3 GiB notebook that takes no disk space", lambda who, asg: [
            Act(
                "b", code=_made(
                    f"{who['b']}+{asg}+2024-01-01 00:00:00.000000 UTC+x", {
                        "timestamp.txt": "2024", "submission_secret.txt": "s"
                    }, extra=f"os.truncate(os.open(os.path.join(path, '{asg}.ipynb'), "
                    f"os.O_CREAT | os.O_WRONLY, 0o644), 3 << 30)\n"))
        ], refused=("over the 32 MiB limit", )),
    InboxCase(
        "a_file_of_another_account", "b replaces the notebook inside a's entry (its folder is 0777)",
        lambda who, asg: [
            Act(
                "a", code=_made(f"{who['a']}+{asg}+2024-01-01 00:00:00.000000 UTC+KNOWN",
                                _files("a", asg, "2024"))),
            Act(
                "b", code=f"import os\np = os.path.join(inbound, '{who['a']}+{asg}+2024-01-01 "
                f"00:00:00.000000 UTC+KNOWN', '{asg}.ipynb')\nos.unlink(p)\n"
                f"open(p, 'w').write({notebook('b in a')!r})\n")
        ], refused=(".ipynb was made by {b}, not by {a}", )),
    InboxCase(
        "future_timestamp_of_ones_own",
        "a's own entry dated 2099, then a real submission, which is collected", lambda who, asg: [
            Act("a", code=_made(f"{who['a']}+{asg}+{FUTURE}+CCCCCCCCCCCC", _files("a 2099", asg, FUTURE))),
            Act("a", "a real")
        ], collected={"a": "a real"},
        notes=("claims 2099-01-01 00:00:00 UTC, later than the exchange received it", ), status=0),
    InboxCase(
        "backdated",
        "a's entry dated 2000: the time its files last changed is used, and the difference is said",
        lambda who, asg: [
            Act("a", code=_made(f"{who['a']}+{asg}+2000-01-01 00:00:00.000000 UTC+x", _files(
                "a", asg, "2000")))
        ], collected={"a": "a"}, notes=("claims 2000-01-01 00:00:00 UTC, but its files last changed at", ),
        status=0),
    InboxCase("no_time_in_the_name", "a's entry whose name holds no time: the exchange's is used",
              lambda who, asg: [Act("a", code=_made(f"{who['a']}+{asg}+soon+x", _files("a", asg, "soon")))],
              collected={"a": "a"}, notes=("no time in its name", ), status=0),
    InboxCase(
        "unfinished", "an entry whose folder nbgrader's submit has not opened yet: left for the next collect",
        lambda who, asg: [
            Act(
                "b", code=_made(f"{who['b']}+{asg}+2024-01-01 00:00:00.000000 UTC+x", _files(
                    "b", asg, "2024"), mode=0o755))
        ], notes=("has not finished with it", ), status=0),
    InboxCase("honest_twice", "correct: a submits twice, the second is collected",
              lambda who, asg: [Act("a", "first"), Act("a", "second"),
                                Act("b", "b")], collected={"a": "second", "b": "b"}, status=0),
]
