"""One row of the table of benchmarks/README.md (:mod:`benchmarks.table`), and how a result file
becomes one: where its numbers come from, met or GAP against its target, or why there is none.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# REPORTED: a number the spec asks for, without a bar to pass
MET, GAP, REPORTED = "met", "**GAP**", "reported"


@dataclass
class Row:
    section: str
    target: str
    measured: str
    status: str  # MET, GAP, REPORTED, "not measured (...)", or a smoke run's mark
    source: Path | None = None  # the JSON file the numbers come from
    machine: str = ""
    torch: str = ""
    device: str = ""
    date: str = ""
    commit: str = ""  # the commit measured; older results did not record it


def load_result(folder: Path, name: str) -> tuple[dict | None, Path]:
    path = folder / f"{name}.json"
    return (json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None), path


def provenance(report: dict) -> dict:
    """Row fields saying where a report's numbers come from: machine, torch, device, date."""
    machine = report.get("machine") or {}
    device = str(machine.get("device") or report.get("device") or "cpu")
    where = (machine.get("cuda") if device.startswith("cuda")
             else f"{machine.get('cpu', '?')}, {machine.get('cpu_count', '?')} cores")
    return dict(machine=str(where), torch=str(machine.get("torch", "?")), device=device,
                date=str(report.get("date", "?"))[:10],
                commit=str(report.get("commit") or machine.get("commit") or "not recorded"))


def measured_row(section: str, target: str, report: dict, path: Path, measured: str, met: bool | None) -> Row:
    """A measured row: ``met`` True / False against the target, None for a number without one."""
    if report.get("smoke") or report.get("profile") == "smoke":
        status = "smoke run, not a measurement"
    else:
        status = REPORTED if met is None else MET if met else GAP
    return Row(section, target, measured, status, path, **provenance(report))


def not_measured(section: str, target: str, command: str, why: str = "not measured", where: str = "") -> Row:
    return Row(section, target, f"run `{command}`{where}", why)


# What reading a result file of another layout (an older version of its benchmark) raises
UNREADABLE = (KeyError, TypeError, IndexError, ValueError)


def unreadable(section: str, target: str, error: Exception, path: Path | None = None) -> Row:
    return Row(section, target, f"{path.name if path else 'result file'} unreadable: {error!r}",
               "not measured (rerun the section)", path)
