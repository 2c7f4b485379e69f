"""The ``course`` command: one command per instructor step."""
from __future__ import annotations

import argparse
import sys

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
    build.add_argument("--profile", choices=("smoke", "laptop", "gpu"),
                       help="default: course_lib.profile() (laptop without CUDA, gpu with it)")
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = _parser().parse_args(argv)
    try:
        root = find_root()
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
        from .. import profile
        from .build import build

        return 0 if build(root, selected, arguments.profile or profile()) else 1
    except CourseError as error:
        print(f"course: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("course: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
