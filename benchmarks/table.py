"""The table of benchmarks/README.md: every target of the course, what was measured, met or GAP.

    rows = table.rows(Path("benchmarks/results"))      # one Row per target, from the JSON files there
    text = table.readme(results, readme_folder, sections)

Each row says where its number comes from (machine, torch, device, date and commit of its JSON file). A
target whose measurement misses it is a **GAP** with the measured value, never left out; a target
without a result file is "not measured", a GPU target measured on a run without CUDA
"not measured (no GPU)", and a number from a ``--smoke`` run is marked as such, not as a result.
"""
from __future__ import annotations

import os
from pathlib import Path

from benchmarks.table_quality import quality_rows
from benchmarks.table_row import GAP, MET, REPORTED, UNREADABLE, Row, unreadable
from benchmarks.table_speed import (attention_rows, bleu_rows, ci_rows, decoding_rows, gpu_rows, length_rows,
                                    load_rows, throughput_rows)
from benchmarks.table_tooling import (agreement_rows, autograde_class_rows, autograde_rows, report_rows,
                                      similarity_rows)

# What callers use: the rows, the table and the README, and the statuses a row has
__all__ = ["GAP", "MET", "REPORTED", "Row", "markdown", "readme", "rows"]

# In the table's order
SECTION_ROWS = (attention_rows, throughput_rows, quality_rows, load_rows, bleu_rows, decoding_rows,
                autograde_rows, autograde_class_rows, agreement_rows, similarity_rows, report_rows,
                length_rows, ci_rows, gpu_rows)


def rows(folder: Path) -> list[Row]:
    """Every target's row, from the JSON files in ``folder``; a file that cannot be read says so in its
    rows."""
    found = []
    for section_rows in SECTION_ROWS:
        try:
            found += section_rows(folder)
        except UNREADABLE as error:
            section = section_rows.__name__.removesuffix("_rows")
            found.append(unreadable(section, "(every target of this section)", error))
    return found


def markdown(table_rows: list[Row], relative_to: Path) -> str:
    """The rows as a markdown table, each section linked to its JSON file (relative to ``relative_to``)."""
    lines = ["| section | target | measured | status | machine | torch | device | date | commit |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in table_rows:
        section = row.section if row.source is None else \
            f"[{row.section}]({Path(os.path.relpath(row.source, relative_to)).as_posix()})"
        cells = (section, row.target, row.measured, row.status, row.machine, row.torch, row.device, row.date,
                 row.commit)
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


def readme(folder: Path, readme_folder: Path, sections: dict[str, str]) -> str:
    """The whole README: how to run the harness, its sections, and the table of ``folder``'s results."""
    table_rows = rows(folder)
    count = {
        status: sum(r.status.startswith(status) for r in table_rows)
        for status in (MET, GAP, "not measured")
    }
    section_list = "\n".join(f"- `{name}`: {text}" for name, text in sections.items())
    return f"""# Benchmarks

<!-- Generated from results/*.json by `python -m benchmarks` \
(text and targets: benchmarks/table.py); do not edit. -->

Every performance and quality target of the course, measured by one harness. Each comparison runs
its contenders in one process, in alternating rounds, and reports the medians and their ratio: on a
shared machine every absolute time moves with the load (each JSON file records the load average),
a ratio far less. A target that is not met is listed as **GAP** with what was measured. Each row names
the date and the commit it was measured on ("not recorded": measured before results named commits).

```bash
python -m benchmarks                  # the fast sections: attention throughput bleu decoding gpu
python -m benchmarks attention bleu   # only these sections
python -m benchmarks all              # every section, with quality, load, autograde and ci (hours)
python -m benchmarks --smoke          # tiny sizes, seconds: checks the harness, measures nothing
python -m benchmarks --table          # run nothing: regenerate this file from results/*.json
course bench [the same arguments]     # the same, from anywhere inside the course
```

Sections (each writes its JSON files into `results/`):

{section_list}

## Targets

{count[MET]} met, {count[GAP]} GAP, {count["not measured"]} not measured; "reported": a number the course asks
for, without a bar to pass.

{markdown(table_rows, readme_folder)}
"""
