"""The ``course`` command: one command per instructor step."""
from __future__ import annotations

import argparse
import sys

from .. import PROFILES
from .course import CourseError, assignments, find_root


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="course", description=(
        "Instructor tooling of Attention & Transformers, built from scratch. "
        "Run it anywhere inside the course folder."))
    steps = parser.add_subparsers(dest="step", required=True, metavar="STEP")

    release = steps.add_parser("release", help="regenerate notebooks/ from solutions/ with nbgrader")
    release.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")

    check = steps.add_parser("check", help="release in sync, solutions pass, releases fail (smoke profile)")
    check.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")

    build = steps.add_parser("build", help="release, execute every solution in a profile, print the table")
    build.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    build.add_argument("--profile", choices=PROFILES,
                       help="default: course_lib.profile() (laptop without CUDA, gpu with it)")
    build.add_argument("--cell-timeout", type=float, default=900, metavar="S",
                       help="seconds one cell may run before its notebook is stopped and reported (default: 900); "
                            "on a slow machine give more, or use --profile smoke")

    slides = steps.add_parser("slides", help="the solutions as offline reveal.js lecture decks plus an index")
    slides.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    slides.add_argument("--out", default="build/slides",
                        help="output folder, relative to the course (default: build/slides)")
    slides.add_argument("--profile", choices=PROFILES,
                        help="profile to execute in, unless build/executed/ holds a fresh copy from it "
                             "(default: course_lib.profile())")
    slides.add_argument("--pdf", action="store_true", help="also print each deck to PDF with headless Chromium")
    slides.add_argument("--cell-timeout", type=float, default=900, metavar="S",
                        help="seconds one cell may run when a notebook must be executed (default: 900)")
    _grading_steps(steps)
    from .train_cmd import add_parser as add_train_parser

    add_train_parser(steps)
    # Listed for --help only: main() hands every argument after "bench" to the benchmark runner.
    steps.add_parser("bench", help="measure the performance targets into benchmarks/results/ and the table of "
                                   "benchmarks/README.md (`course bench --help`: python -m benchmarks)")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        return _bench(argv[1:])
    arguments = _parser().parse_args(argv)
    try:
        if arguments.step == "train":  # needs no assignment: it trains a course model from the shell
            from .train_cmd import train_command

            return train_command(arguments)
        root = find_root()
        if arguments.step in ("autograde", "grades", "feedback", "sample"):
            return _grading(arguments, root)
        selected = assignments(root, arguments.assignments)
        if arguments.step == "release":
            from .release import plan_release

            changed = plan_release(selected).apply()
            for path in changed:
                print(f"wrote {path.relative_to(root)}")
            print(f"{len(selected)} assignment(s) released, {len(changed)} file(s) changed")
            return 0
        if arguments.step == "check":
            from .build import check

            return 0 if check(root, selected) else 1
        if arguments.step == "slides":
            from .. import profile
            from .slides import slides

            return 0 if slides(root, selected, arguments.profile or profile(), root / arguments.out,
                               pdf=arguments.pdf, cell_timeout=arguments.cell_timeout) else 1
        from .. import profile
        from .build import build

        return 0 if build(root, selected, arguments.profile or profile(), cell_timeout=arguments.cell_timeout) else 1
    except CourseError as error:
        print(f"course: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("course: interrupted", file=sys.stderr)
        return 130


def _bench(arguments: list[str]) -> int:
    """``course bench ARGS``: ``python -m benchmarks ARGS`` of this course (benchmarks/ is not installed)."""
    try:
        root = find_root()
        if not (root / "benchmarks" / "runner.py").is_file():
            raise CourseError(f"{root / 'benchmarks'}: this course has no benchmark runner")
    except CourseError as error:
        print(f"course: error: {error}", file=sys.stderr)
        return 2
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    from benchmarks.runner import main as run_benchmarks

    try:
        return run_benchmarks(arguments, prog="course bench")
    except KeyboardInterrupt:
        print("course: interrupted", file=sys.stderr)
        return 130


def _grading_steps(steps: argparse._SubParsersAction) -> None:
    """autograde, sample, grades and feedback: course_lib.instructor.autograde, .sample, .grades and .feedback."""
    from .sandbox import Limits

    default = Limits()
    autograde = steps.add_parser("autograde", help="grade submitted/<student>/<assignment>/, each student sandboxed")
    autograde.add_argument("assignment", metavar="ASSIGNMENT")
    autograde.add_argument("--student", action="append", metavar="ID", help="only this student (repeatable)")
    autograde.add_argument("--jobs", type=int, default=1, metavar="N", help="students graded at once (default 1)")
    autograde.add_argument("--cell-timeout", type=float, metavar="S",
                           help="seconds per cell (default: Execute.timeout of nbgrader_config.py)")
    autograde.add_argument("--timeout", type=float, default=default.wall_s, metavar="S",
                           help=f"seconds for one student's whole notebook (default {default.wall_s:g})")
    autograde.add_argument("--memory", type=float, default=default.memory_bytes / 2**30, metavar="GIB",
                           help=f"memory per student in GiB (default {default.memory_bytes / 2**30:g})")
    autograde.add_argument("--unsafe-no-sandbox", action="store_true",
                           help="without bubblewrap: resource limits only, no isolation (trusted notebooks only)")

    grades = steps.add_parser("grades", help="every student's status and score per assignment")
    grades.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    grades.add_argument("--csv", metavar="PATH", help="also write them to this CSV file")

    sample = steps.add_parser("sample", help="autograde a sample class (each solution: full marks; each release: "
                                             "none) in a scratch copy of the course")
    sample.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help="default: all")
    sample.add_argument("--out", default="build/sample",
                        help="the scratch course, relative to the course, replaced each run (default: build/sample)")
    sample.add_argument("--jobs", type=int, default=1, metavar="N", help="students graded at once (default 1)")

    feedback = steps.add_parser("feedback", help="write feedback/<student>/<assignment>/<assignment>.html")
    feedback.add_argument("assignment", metavar="ASSIGNMENT")
    feedback.add_argument("--student", action="append", metavar="ID", help="only this student (repeatable)")


def _grading(arguments: argparse.Namespace, root) -> int:
    if arguments.step == "autograde":
        from .autograde import autograde, limits_for, needs_attention

        limits = limits_for(root, cell_s=arguments.cell_timeout, wall_s=arguments.timeout,
                            memory_bytes=int(arguments.memory * 2**30))
        results = autograde(root, arguments.assignment, arguments.student, jobs=max(1, arguments.jobs),
                            limits=limits, isolated=not arguments.unsafe_no_sandbox)
        return 1 if needs_attention(results) else 0
    if arguments.step == "sample":
        from .sample import sample

        return 0 if sample(root, assignments(root, arguments.assignments), root / arguments.out,
                           jobs=max(1, arguments.jobs)) else 1
    if arguments.step == "grades":
        from .grades import export

        return export(root, assignments(root, arguments.assignments), arguments.csv)
    from .feedback import write_feedback

    return write_feedback(root, arguments.assignment, arguments.student)


if __name__ == "__main__":
    sys.exit(main())
