"""The ``course`` command: one command per instructor step."""
from __future__ import annotations

import argparse
import subprocess
import sys

from course_lib import PROFILES
from course_tools.classroom.access import private_by_default

from .course import CourseError, assignments, find_root


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course", description=(
        "Instructor tooling of Attention & Transformers, built from scratch. "
        "Run it anywhere inside the course folder."))
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")

    release = steps.add_parser("release", help="regenerate notebooks/ from solutions/ with nbgrader")
    release.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    release.add_argument("--exchange", action="store_true",
                         help="also publish them to nbgrader's exchange, for the hub's Assignments tab")

    check = steps.add_parser("check", help="release in sync, solutions pass, releases fail (smoke profile)")
    check.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")

    build = steps.add_parser("build", help="release, execute every solution in a profile, print the table")
    build.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    build.add_argument("--profile", choices=PROFILES,
                       help="default: course_lib.profile() (laptop without CUDA, gpu with it)")
    build.add_argument(
        "--cell-timeout", type=float, default=900, metavar="S",
        help="seconds one cell may run before its notebook is stopped and reported (default: 900); "
        "on a slow machine give more, or use --profile smoke")

    slides = steps.add_parser("slides", help="the solutions as offline reveal.js lecture decks plus an index")
    slides.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    slides.add_argument("--out", default="build/slides",
                        help="output folder, relative to the course (default: build/slides)")
    slides.add_argument("--profile", choices=PROFILES,
                        help="profile to execute in, unless build/executed/ holds a fresh copy from it "
                             "(default: course_lib.profile())")
    slides.add_argument("--pdf", action="store_true",
                        help="also print each deck to PDF with headless Chromium")
    slides.add_argument("--cell-timeout", type=float, default=900, metavar="S",
                        help="seconds one cell may run when a notebook must be executed (default: 900)")
    provenance = steps.add_parser(
        "provenance", help="numbers in the prose of executed notebooks that no output, "
        "code or source label backs (a report for a person)")
    provenance.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    provenance.add_argument(
        "--executed", metavar="DIR",
        help="folder of executed notebooks (default: build/executed, written by `course build`)")
    _grading_steps(steps)
    from course_tools.classroom.late import add_parsers as add_late_parsers

    add_late_parsers(steps)
    explain = steps.add_parser(
        "explain", help="every check of one student's grading, hidden inputs and values "
        "included: for the instructor, from the grading record")
    explain.add_argument("student", metavar="STUDENT")
    explain.add_argument("assignment", metavar="ASSIGNMENT")
    explain.add_argument("--html", metavar="PATH",
                         help="the page (default build/explain/ASSIGNMENT/STUDENT.html)")
    report = steps.add_parser(
        "report", help="where the class struggled: per exercise and per check, with charts (a private "
        "page under build/report/, CSV files beside it)")
    report.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    report.add_argument("--out", metavar="FOLDER", help="relative to the course (default build/report)")
    _hub_steps(steps)
    from course_tools.publishing.train_cmd import add_parser as add_train_parser

    add_train_parser(steps)
    # Listed for --help only: main() hands every argument after "bench" to the benchmark runner.
    steps.add_parser(
        "bench", help="measure the performance targets into benchmarks/results/ and the table of "
        "benchmarks/README.md (`course bench --help`: python -m benchmarks)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    arguments = _parser().parse_args(argv)
    try:
        if arguments.step == "train":  # needs no assignment: it trains a course model from the shell
            from course_tools.publishing.train_cmd import train_command

            return train_command(arguments)
        root = find_root()
        with private_by_default(
                root):  # access.py: the course folder stays private but for its public entries
            return _step(arguments, root)
    except CourseError as error:
        print(f"course: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("course: interrupted", file=sys.stderr)
        return 130


def _step(arguments: argparse.Namespace, root) -> int:
    if arguments.step in ("hub", "collect"):
        return _hub(arguments, root)
    if arguments.step in ("autograde", "grades", "feedback", "sample", "similarity"):
        return _grading(arguments, root)
    if arguments.step == "explain":
        from pathlib import Path

        from course_tools.grading.explain import explain

        return explain(root, arguments.assignment, arguments.student,
                       Path(arguments.html) if arguments.html else None)
    if arguments.step == "report":
        from course_tools.classroom.report import report_command

        return report_command(root, assignments(root, arguments.assignments),
                              root / (arguments.out or "build/report"))
    if arguments.step in ("due", "extend"):
        from course_tools.classroom.late import run_step

        return run_step(arguments, root)
    selected = assignments(root, arguments.assignments)
    if arguments.step == "release":
        from course_tools.publishing.release import plan_release

        changed = plan_release(selected).apply()
        for path in changed:
            print(f"wrote {path.relative_to(root)}")
        print(f"{len(selected)} assignment(s) released, {len(changed)} file(s) changed")
        if arguments.exchange:
            from course_tools.classroom.exchange import release_to_exchange

            for assignment in selected:
                release_to_exchange(assignment)
        return 0
    if arguments.step == "check":
        from course_tools.publishing.build import check

        return 0 if check(root, selected) else 1
    if arguments.step == "provenance":
        from course_tools.publishing.provenance import provenance

        return provenance(root, selected, arguments.executed)
    if arguments.step == "slides":
        from course_lib import profile
        from course_tools.publishing.slides import slides

        return 0 if slides(root, selected, arguments.profile or profile(), root / arguments.out,
                           pdf=arguments.pdf, cell_timeout=arguments.cell_timeout) else 1
    from course_lib import profile
    from course_tools.publishing.build import build

    return 0 if build(root, selected, arguments.profile or profile(),
                      cell_timeout=arguments.cell_timeout) else 1


def _bench(arguments: list[str]) -> int:
    """``course bench ARGS``: ``python -m benchmarks ARGS`` in this course's folder.

    benchmarks/ belongs to the course's repository, not to the installed package, so it runs as a
    process of its own started there rather than being imported from here.
    """
    try:
        root = find_root()
        if not (root / "benchmarks" / "runner.py").is_file():
            raise CourseError(f"{root / 'benchmarks'}: this course has no benchmark runner")
    except CourseError as error:
        print(f"course: error: {error}", file=sys.stderr)
        return 2
    try:
        with private_by_default(root):
            return subprocess.run([sys.executable, "-m", "benchmarks", *arguments], cwd=root).returncode
    except KeyboardInterrupt:
        print("course: interrupted", file=sys.stderr)
        return 130


def _grading_steps(steps: argparse._SubParsersAction) -> None:
    """autograde, sample, grades and feedback: course_tools.grading.autograde, .sample, .grades and
    .feedback."""
    from course_tools.grading.limits import Limits

    default = Limits()
    autograde = steps.add_parser("autograde",
                                 help="grade submitted/<student>/<assignment>/, each student sandboxed")
    autograde.add_argument("assignment", metavar="ASSIGNMENT")
    autograde.add_argument("--student", action="append", metavar="ID", help="only this student (repeatable)")
    autograde.add_argument("--jobs", type=int, default=1, metavar="N",
                           help="sandboxes run at once (default 1; the grader compares results meanwhile)")
    autograde.add_argument(
        "--regrade", action="store_true",
        help="grade every student again; by default a rerun (say, after an interruption) keeps "
        "the grades of submissions unchanged since they were graded by the same tests")
    autograde.add_argument(
        "--cell-timeout", type=float, metavar="S",
        help="CPU seconds per cell or check (default: Execute.timeout of nbgrader_config.py)")
    autograde.add_argument(
        "--timeout", type=float, default=default.student_s, metavar="S",
        help="CPU seconds for all of one student's runs together, the re-runs of checks with "
        f"corrected dependencies included (default {default.student_s:g}); wall-clock time "
        "is only a backstop, at three times a limit and 10 s")
    autograde.add_argument("--memory", type=float, default=default.memory_bytes / 2**30, metavar="GIB",
                           help=f"memory per student in GiB (default {default.memory_bytes / 2**30:g})")
    autograde.add_argument(
        "--unsafe-no-sandbox", action="store_true",
        help="without bubblewrap: resource limits only, no isolation (trusted notebooks only)")

    grades = steps.add_parser("grades", help="every student's status and score per assignment")
    grades.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    grades.add_argument("--csv", metavar="PATH", help="also write them to this CSV file")
    grades.add_argument(
        "--format", choices=("csv", "canvas", "moodle"), default="csv",
        help="csv: the table (default); canvas: Canvas's gradebook import CSV; moodle: Moodle's "
        "offline grading worksheet, one per assignment")
    grades.add_argument(
        "--out", metavar="PATH", help="canvas: the CSV file (default build/grades/canvas.csv); "
        "moodle: the folder (default build/grades/moodle)")
    grades.add_argument("--per-exercise", action="store_true",
                        help="canvas, moodle: one more column per exercise")
    grades.add_argument(
        "--roster", metavar="FILE", help="columns student_id, name, email, canvas_id, sis_user_id, "
        "sis_login_id, section, moodle_identifier (default: the "
        "course's students.csv, when there is one)")
    grades.add_argument("--lms-file", metavar="FILE", help="a sheet exported from Canvas or Moodle to fill: "
                                                           "its rows and columns are kept")

    similarity = steps.add_parser(
        "similarity", help="pairs of submissions whose answer cells are suspiciously "
        "alike, with an HTML report")
    similarity.add_argument("assignment", metavar="ASSIGNMENT")
    similarity.add_argument("--threshold", type=float, default=None, metavar="T",
                            help="flag pairs scoring at least T, between 0 and 1 (default 0.5)")
    similarity.add_argument(
        "--out", metavar="FOLDER",
        help="report folder, relative to the course (default build/similarity/ASSIGNMENT)")

    sample = steps.add_parser(
        "sample", help="autograde a sample class (each solution: full marks; each release: "
        "none) in a scratch copy of the course")
    sample.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    sample.add_argument(
        "--out", default="build/sample",
        help="the scratch course, relative to the course, replaced each run (default: build/sample)")
    sample.add_argument("--jobs", type=int, default=1, metavar="N", help="sandboxes run at once (default 1)")

    feedback = steps.add_parser("feedback", help="write feedback/<student>/<assignment>/<assignment>.html")
    feedback.add_argument("assignment", metavar="ASSIGNMENT")
    feedback.add_argument("--student", action="append", metavar="ID", help="only this student (repeatable)")
    feedback.add_argument(
        "--release", action="store_true",
        help="also release the pages to nbgrader's exchange: students fetch them in the hub's "
        "Assignments tab")


def _grading(arguments: argparse.Namespace, root) -> int:
    if arguments.step == "autograde":
        from course_tools.grading.autograde import autograde, limits_for, needs_attention

        limits = limits_for(root, cell_s=arguments.cell_timeout, student_s=arguments.timeout,
                            memory_bytes=int(arguments.memory * 2**30))
        results = autograde(root, arguments.assignment, arguments.student, jobs=max(1, arguments.jobs),
                            limits=limits, isolated=not arguments.unsafe_no_sandbox,
                            regrade=arguments.regrade)
        return 1 if needs_attention(results) else 0
    if arguments.step == "sample":
        from course_tools.publishing.sample import sample

        return 0 if sample(root, assignments(root, arguments.assignments), root / arguments.out,
                           jobs=max(1, arguments.jobs)) else 1
    if arguments.step == "grades" and arguments.format != "csv":
        from pathlib import Path

        from course_tools.classroom.lms import export_lms
        from course_tools.classroom.roster import ROSTER

        roster = Path(arguments.roster) if arguments.roster else root / ROSTER
        return export_lms(root, assignments(root, arguments.assignments), arguments.format,
                          root / arguments.out if arguments.out else None,
                          per_exercise=arguments.per_exercise,
                          roster=roster if arguments.roster or roster.is_file() else None,
                          lms_file=Path(arguments.lms_file) if arguments.lms_file else None)
    if arguments.step == "grades":
        from course_tools.classroom.grades import export

        return export(root, assignments(root, arguments.assignments), arguments.csv)
    if arguments.step == "similarity":
        from course_tools.classroom.similarity import DEFAULT_THRESHOLD, report_folder, similarity_report

        return similarity_report(root, assignments(root, [arguments.assignment])[0],
                                 DEFAULT_THRESHOLD if arguments.threshold is None else arguments.threshold,
                                 root / arguments.out if arguments.out
                                 else report_folder(root, arguments.assignment))
    from course_tools.classroom.late import late_notes
    from course_tools.grading.feedback import write_feedback

    assignment = assignments(root, [arguments.assignment])[0]
    status = write_feedback(root, assignment.id, arguments.student, late=late_notes(root, assignment.id))
    if arguments.release:
        from course_tools.classroom.exchange import release_feedback_to_exchange

        status |= release_feedback_to_exchange(assignment, arguments.student)
    return status


def _hub_steps(steps: argparse._SubParsersAction) -> None:
    """hub and collect: course_tools.classroom.hub, .exchange and .zip_collect."""
    hub = steps.add_parser(
        "hub", help="start the course's JupyterHub on 127.0.0.1 (deploy/jupyterhub_config.py; "
        "as root: it creates the roster's accounts)")
    hub.add_argument("--stop", action="store_true", help="stop it, and every user's server")
    hub.add_argument("--port", type=int, default=8000,
                     help="its port; it also uses the next two (default 8000)")
    hub.add_argument("--instructor", action="append", default=[], metavar="USER",
                     help="a Unix user who opens the course folder with the formgrader (repeatable)")
    hub.add_argument(
        "--python", metavar="PATH", help="the Python that runs each user's JupyterLab; it must import "
        "this course's packages and be runnable by the students "
        "(default: the one running course)")

    collect = steps.add_parser("collect",
                               help="the latest submissions from nbgrader's exchange into submitted/")
    collect.add_argument("assignment", metavar="ASSIGNMENT")
    collect.add_argument(
        "--zip", metavar="FILE", help="instead, a submissions archive downloaded from Canvas or "
        "Moodle, placed by students.csv; unplaced files are listed")


def _hub(arguments: argparse.Namespace, root) -> int:
    if arguments.step == "hub":
        from course_tools.classroom.hub import start_hub, stop_hub

        if arguments.stop:
            stop_hub(root)
        else:
            from pathlib import Path

            start_hub(root, arguments.port, arguments.instructor,
                      Path(arguments.python) if arguments.python else None)
        return 0
    if arguments.zip:
        from pathlib import Path

        from course_tools.classroom.zip_collect import collect_zip

        return collect_zip(root, arguments.assignment, Path(arguments.zip))
    from course_tools.classroom.exchange import collect_from_exchange

    return collect_from_exchange(assignments(root, [arguments.assignment])[0]).status


if __name__ == "__main__":
    sys.exit(main())
