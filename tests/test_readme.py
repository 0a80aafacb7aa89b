"""The README's tour runs as printed, prints its numbers readably, and its heading is true."""
import pathlib
import re

import numpy as np
import pytest

from dpjax import _display

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
NUMBER_WORDS = {"fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "twenty-one": 21}


def _tour() -> tuple[str, str]:
    text = README.read_text(encoding="utf-8")
    match = re.search(r"^## (A tour[^\n]*)\n.*?```python\n(.*?)```", text, re.S | re.M)
    assert match, "README.md has no '## A tour ...' section with a python block"
    return match.group(1), match.group(2)


def test_tour_heading_counts_its_lines():
    heading, code = _tour()
    lines = len(code.rstrip("\n").splitlines())
    words = re.findall(r"\b(\d+|[a-z]+(?:-[a-z]+)?)\s+lines\b", heading)
    assert words, f"heading {heading!r} names no number of lines"
    claimed = int(words[0]) if words[0].isdigit() else NUMBER_WORDS[words[0]]
    assert claimed == lines, f"heading says {claimed} lines, the block has {lines}"


# README.md's tour still imports two old module paths (dpjax.accountants.exact, .girsanov), which
# work with a DeprecationWarning; the README rewrite of issue 25 moves them, then drop this mark
@pytest.mark.filterwarnings(r"ignore:dpjax\.accountants\.(exact|girsanov) moved to:DeprecationWarning")
def test_tour_runs_as_printed_and_prints_its_numbers(tmp_path, monkeypatch, capsys):
    _, code = _tour()
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme_tour"}
    exec(compile(code, str(README) + ":tour", "exec"), namespace)
    out = capsys.readouterr().out
    report = namespace["report"]
    table = report.table
    assert max(len(line) for line in out.splitlines()) <= _display.WIDTH
    assert "..." not in out.split("sources:")[0]  # no number hidden behind an ellipsis
    # every eps of the table is printed (the tour records three steps: all fit one screen)
    for _, row in table.iterrows():
        value = _display.fmt(row["epsilon"], 3 if row["kind"] == "estimate" else 4)
        assert value in out, (int(row["step"]), row["quantity"], row["kind"], value)
    # the first screen answers how much, by whose account and how sure
    head = "\n".join(out.splitlines()[:4])
    assert "at least" in head and "exactly" in head and "at most" in head and "95%" in head
    assert "verdict: ok" in out and "Girsanov bound" in out and "Clopper-Pearson" in out
    # consistency the audit itself must show: lower bound <= exact <= bound at every step
    for step in table["step"].unique():
        at = table[table["step"] == step].set_index("kind")["epsilon"]
        assert at["lower bound"] <= at["exact"] <= at["bound"]
    assert (tmp_path / "audit.png").stat().st_size > 10_000


def test_readme_commands_are_what_ci_runs():
    text = README.read_text(encoding="utf-8")
    commands = re.findall(r"^\$ (.*)$", text, re.M)
    assert commands[:2] == ['pip install -e . && dpjax demo', 'pip install -e ".[test]" && pytest -n 2']


def test_readme_is_a_newcomers_page():
    """Under 200 lines; no reference a reader without the project's notes can't follow."""
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 200
    assert "NOTES" not in text
    authors = {"000": "Heller", "001": "Bertazzi", "002": "Minami", "003": "Hu,", "004": "Geumlek"}
    for number in set(re.findall(r"\bpaper (00[0-4])\b", text)):
        assert authors[number] in text, f"README cites paper {number} without naming it ({authors[number]}...)"
    for page in ("docs/guide/getting_started.md", "docs/references.md", "docs/api/index.md"):
        assert f"]({page})" in text, f"README does not link {page}"
