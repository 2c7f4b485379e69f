"""The number-provenance report: which prose numbers an executed notebook does not back."""
import nbformat

from course_tools.notebooks import dumps
from course_tools.publishing.provenance import prose_numbers, provenance, report, unbacked_numbers


def _notebook(markdown: list[str], code: str = "", printed: str = ""):
    nb = nbformat.v4.new_notebook()
    nb.metadata["course"] = {"profile": "smoke"}
    cell = nbformat.v4.new_code_cell(code)
    if printed:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed)]
    nb.cells = [cell] + [nbformat.v4.new_markdown_cell(text) for text in markdown]
    return nb


PROSE = [
    # backed by the output (as printed, rounded, or as a percentage of a printed fraction)
    "The model scored 98.62 BLEU, about 98.6, and 87.4 % of the tokens were right.",
    # not backed: nothing prints 45.5 or 1,234
    "On the long split it scored 45.5, over 1,234 sentences.",
    # ignored: small integers, years, math, inline code, headings, links
    "Train 3 models for 20 minutes (2017). Then $d = 512$ and `lr = 0.003`; see [it](http://x.org/1.5).",
    "## 9.75 · A heading",
    # labelled with a source: a citation, the paper, a recorded run
    "Vaswani et al. report 27.3 BLEU. The paper's base model has 65.2M parameters.",
    "The recorded laptop run (`benchmarks/results/05.json`): 52.1 against 43.0.",
    # a table takes the label of the paragraph before it
    "The lecture's table:\n\n| key | weight |\n|---|---|\n| a | 0.05 |\n| b | 0.80 |",
    # a table without a label, and a constant the code sets
    "| key | weight |\n|---|---|\n| a | 0.35 |\n\nWe train for 600 steps.",
    # list items are paragraphs of their own: the label of one does not cover the next
    "* the slides say 0.25;\n* we measured 0.75.",
]


def test_prose_numbers_skip_math_code_years_headings_and_small_integers():
    texts = [n.text for text in PROSE for n in prose_numbers(text)]
    assert texts == ["98.62", "98.6", "87.4 %", "45.5", "1,234", "27.3", "65.2M", "52.1", "43.0",
                     "0.05", "0.80", "0.35", "600", "0.25", "0.75"]


def test_unbacked_numbers_are_the_ones_nothing_backs():
    nb = _notebook(PROSE, code="steps = 600\n", printed="BLEU = 98.62 | accuracy 0.8741\n")
    findings = unbacked_numbers(nb)
    assert [(f.cell, f.number) for f in findings] == [(3, "45.5"), (3, "1,234"), (9, "0.35"), (10, "0.75")]
    assert "long split" in findings[0].context


def test_rich_outputs_count_too():
    nb = _notebook(["It ran 3.25 s and saved 17.5 MB."])
    nb.cells[0].outputs = [
        nbformat.v4.new_output("execute_result", data={"text/plain": "3.2512"}, execution_count=1),
        nbformat.v4.new_output("display_data", data={"text/html": "<td>17.50</td>"})
    ]
    assert unbacked_numbers(nb) == []


def test_report_and_command(tmp_path):
    class Assignment:
        id = "99_toy"
        source = tmp_path / "solutions" / "99_toy" / "99_toy.ipynb"

    executed = tmp_path / "build" / "executed" / "99_toy"
    executed.mkdir(parents=True)
    (executed / "99_toy.ipynb").write_text(dumps(_notebook(PROSE[:2], printed="98.62 0.874")))
    lines = []

    class Out:
        def write(self, text):
            lines.append(text)

    assert provenance(tmp_path, [Assignment], out=Out()) == 0
    text = "".join(lines)
    assert "99_toy" in text and "smoke" in text and "2 number(s) to review" in text and "45.5" in text
    missing = type("Missing", (), {"id": "98_none", "source": tmp_path / "98_none.ipynb"})
    lines.clear()
    assert provenance(tmp_path, [missing], out=Out()) == 0
    assert "no executed notebook" in "".join(lines)
    assert "backed" in report("x", executed / "99_toy.ipynb", [])


def test_course_provenance_step(tmp_path, monkeypatch, capsys):
    from course_tools.cli import main

    from .toy_course import make_toy_course

    make_toy_course(tmp_path)
    monkeypatch.chdir(tmp_path)
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "toy.ipynb").write_text(dumps(_notebook(PROSE[:2], printed="98.62 0.874")))
    assert main(["provenance", "toy", "--executed", str(executed)]) == 0
    out = capsys.readouterr().out
    assert "toy" in out and "2 number(s) to review" in out
