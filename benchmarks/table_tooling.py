"""The rows of the table (:mod:`benchmarks.table`) about the course's tooling: autograde on the
whole course and on a class, Validate's agreement with the grade, similarity and the class report.
"""
from __future__ import annotations

from pathlib import Path

from benchmarks.table_row import Row, load_result, measured_row, not_measured
from course_tools.course import assignments

ROOT = Path(__file__).resolve().parents[1]
AUTOGRADE_SECONDS = 15.0  # course autograde, the whole course for one student with --jobs 1 on 2 cores
REPORT_TARGET_S = 10.0  # "a class of 500 students is reported in seconds" (issue 44)


def autograde_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "autograde_batch")
    target = (
        f"course autograde: the whole course for one student in ≤ {AUTOGRADE_SECONDS:g} s with --jobs 1 "
        "(--jobs 2 reported), every grade as expected")
    if report is None:
        return [not_measured("autograde", target, "python -m benchmarks autograde")]
    runs = report["runs"]
    unexpected = sum(run["unexpected"] for run in runs.values())
    load = report.get("load")  # the grades again beside CPU-bound processes: none may differ (issue 28)
    unexpected += load["differ"] + load["alternatives_not_full"] if load else 0
    measured = (
        ", ".join(f"--jobs {name[4:]}: {run['seconds_per_student']:.1f} s" for name, run in runs.items()) +
        f" ({len(report['assignments'])} assignments, {report['students']} students each)" +
        (f"; beside {load['hogs']} CPU-bound processes, with the alternatives: {load['differ']} grades "
         f"differ" if load else "") + (f"; {unexpected} unexpected grades" if unexpected else "") +
        _variants(report))
    whole_course = set(report["assignments"]) == {a.id for a in assignments(ROOT)} and "jobs1" in runs
    met = None if not whole_course else \
        not unexpected and runs["jobs1"]["seconds_per_student"] <= AUTOGRADE_SECONDS
    return [measured_row("autograde", target, report, path, measured, False if unexpected else met)]


def _variants(report: dict) -> str:
    """The variants of the hidden inputs a batch was spread over, and what each variant after the
    first adds to the course's references (all variants are built in one record run)."""
    added = report.get("reference_seconds_per_variant", {})
    if report.get("variants", 1) <= 1 or not added:
        return ""
    return (f"; {report['variants']} variants of the hidden inputs, each after the first adding "
            f"{sum(added.values()):.0f} s to the course's references")


def autograde_class_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "autograde_class")
    target = ("course autograde on a class of one assignment: seconds per student, --jobs 1 vs 2 (every "
              "grade "
              "as expected)")
    if report is None:
        return [not_measured("autograde", target, "python -m benchmarks class")]
    (assignment,) = report["assignments"]
    runs = report["runs"]
    unexpected = sum(run["unexpected"] for run in runs.values())
    measured = (", ".join(f"--jobs {name[4:]}: {run['seconds_per_student']:.2f} s"
                          for name, run in runs.items()) +
                f" ({report['students']} students of {assignment})" +
                (f"; {unexpected} unexpected grades" if unexpected else ""))
    return [measured_row("autograde", target, report, path, measured, False if unexpected else None)]


def agreement_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "validate_agreement")
    target = (
        "Validate and the grade fail the same test cells on every catalogued bug and alternative; every bug "
        "fails its own exercise in both, no alternative fails")
    if report is None:
        return [not_measured("grading", target, "python -m benchmarks agreement")]
    found = report["assignments"]
    counts = {key: sum(len(a[key]) for a in found.values())
              for key in ("disagreements", "validate_misses", "grade_misses")}
    fixtures = sum(a["fixtures"] for a in found.values())
    missing = [a.id for a in assignments(ROOT) if a.id not in found]
    dates = sorted({a["date"][:10] for a in found.values()})
    measured = (
        f"{fixtures} fixtures of {len(found)} assignments: {counts['disagreements']} disagree, Validate "
        f"misses {counts['validate_misses']}, the grade misses {counts['grade_misses']}" +
        (f" (run {dates[0]} to {dates[-1]})" if len(dates) > 1 else "") +
        (f" (not run: {', '.join(missing)})" if missing else ""))
    commits = sorted({a.get("commit") or "not recorded" for a in found.values()})  # each assignment's run
    return [measured_row("grading", target, {**report, "commit": ", ".join(commits)}, path, measured,
                         not any(counts.values()) and not missing)]


def similarity_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "similarity_class")
    target = (
        "course similarity on a class: every disguised copy of the solution flagged, no pair of independent "
        "solutions flagged")
    if report is None:
        return [not_measured("similarity", target, "python -m benchmarks similarity")]
    flags = report["flags"]["canonical"]
    copies, copies_total = map(int, flags["copies_flagged"].split("/"))
    independent = int(flags["independent_pairs_flagged"].split("/")[0])
    median = report["median_seconds"]
    measured = (
        f"{flags['copies_flagged']} copies, {flags['independent_pairs_flagged']} independent pairs flagged; "
        f"{report['students']} students of {report['assignment']} in {median['canonical']:.1f} s "
        f"(copydetect on the raw cells {median['copydetect']:.1f} s, flags "
        f"{report['flags']['copydetect']['copies_flagged']} copies)")
    met = copies == copies_total and independent == 0
    return [measured_row("similarity", target, report, path, measured, met)]


def report_rows(folder: Path) -> list[Row]:
    report, path = load_result(folder, "report")
    target = f"course report: a class of 500 students in ≤ {REPORT_TARGET_S:g} s"
    if report is None:
        return [not_measured("report", target, "python -m benchmarks report")]
    load = report["machine"]["load_average"][0]
    measured = (f"{report['median_seconds']:.1f} s for {report['students']} students (median of "
                f"{report['rounds']} rounds, load {load:.1f}; commit {report['commit']})")
    return [measured_row("report", target, report, path, measured,
                         report["students"] >= 500 and report["median_seconds"] <= REPORT_TARGET_S)]
