"""Reports that never mislead (issue 38, item 4): sources print in full (never cut mid-word),
the printed kinds and releases are report.table's own words, and rows of releases a bound does
not cover are said to be not comparable (the issue's case: a path estimate 6.51 of the path
with its batches beside a path bound 1.18). Built on hand-made tables: no chains run."""
from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dpjax.audit import COLUMNS, AuditReport, CoupledResult

LONG = ("paper 001 Theorem 5.4, mode=paper, releases path, assumes |grad U_D(x) - grad U_D'(x)| <= c = 2 for all x "
        "(Assumption 5.3); common start, beta = 1, and every other assumption a reader must see before trusting it: "
        "a lower bound ONLY IF the pair's trade-off is Gaussian")
STEPS = (10, 20)


def _coupled(num_pairs=400):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(len(STEPS), num_pairs, 1))
    config = dict(seed=0, model="m", dim=1, sampler=dict(name="sgld", step_size=0.1, batching=dict(name="poisson")), num_pairs=num_pairs)
    return CoupledResult(np.array(STEPS), x, x + 0.3, rng.normal(size=(len(STEPS), num_pairs)), np.ones(num_pairs, bool), 0, config)


def _report(extra_bound_release="path (every iterate)"):
    rows = []
    for s in STEPS:
        rows += [
            (s, "PLD (sampler)", "bound", extra_bound_release, 1.18, np.nan, np.nan, LONG, 0),
            (s, "last iterate (sampler)", "bound", "last iterate", 0.9, np.nan, np.nan, "shifted interpolation, " + LONG, 0),
            (s, "user bound", "bound", "the released model after a calibrated noisy fine-tuning step", 2.0, np.nan, np.nan, "given", 0),
            (s, "last iterate", "lower bound", "last iterate", 0.4, 0.4, np.nan, "Clopper-Pearson 0.95 lower bound (ceiling 8.36 at this sample size)", 0),
            (s, "last iterate", "band", "last iterate", 0.35, 0.35, np.nan, "band", 0),
            (s, "last iterate", "estimate", "last iterate", 0.7, 0.6, 0.85, "plug-in histogram estimate, 0.95 bootstrap interval", 0),
            (s, "path (D vs D')", "estimate", "path and batches", 6.51, np.nan, 6.9, "exact path privacy loss, Monte Carlo", 0),
        ]
    table = pd.DataFrame(rows, columns=COLUMNS)
    return AuditReport(table=table, violations=table.iloc[:0].assign(lower_confidence_limit=[]), coupled=_coupled(), delta=1e-2,
                       confidence=0.95)


def _words(text: str) -> str:
    return " ".join(text.split())


def test_sources_print_in_full_never_cut():
    text = _report().summary()
    assert "..." not in text
    sources = _words(text[text.index("sources:"):])
    for source in set(_report().table["source"]):
        assert _words(source) in sources
    assert max(len(line) for line in text.splitlines()) <= 100


def test_printed_labels_are_the_tables():
    report = _report()
    text = report.summary()
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("quantity"))
    assert re.split(r"\s{2,}", lines[top])[:3] == ["quantity", "kind", "release"]
    # the label columns are separated by two or more spaces (labels hold single spaces only)
    table_rows = [re.split(r"\s{2,}", line) for line in lines[top + 1:top + 1 + len(report.table) // len(STEPS)]]
    printed_kinds = {row[1] for row in table_rows}
    printed_releases = {row[2] for row in table_rows}
    assert printed_kinds == set(report.table["kind"])  # "lower bound", not "certified"
    # every release in the table's words; one too long for a column as "release k", spelled out below
    spelled = dict(re.findall(r"^(release \d+): (.*)$", text.replace("\n  ", " "), flags=re.M))
    assert {spelled.get(r, r) for r in printed_releases} == set(report.table["released"])
    assert "path+batches" not in text


def test_rows_of_a_release_no_bound_covers_are_said_not_comparable():
    text = _words(_report().summary())
    # the case: the path-with-batches estimate 6.51 beside a path bound 1.18 (and a
    # last-iterate bound 0.9, and a bound of a release dpjax does not know)
    assert "releases differ (step 20):" in text
    sentence = text[text.index("path (D vs D') (estimate, 6.51) is of the path and batches"):]
    for bound in ("PLD (sampler) (1.18, path (every iterate))", "last iterate (sampler) (0.9, last iterate)",
                  "user bound (2, the released model after a calibrated noisy fine-tuning step)"):
        assert bound in sentence
    assert "not comparable" in sentence
    # the last iterate's rows are of a release every bound contains: never listed
    section = text.split("releases differ")[1].split("verdict:")[0]
    assert "last iterate (estimate" not in section and "last iterate (lower bound" not in section


def test_a_bound_of_the_larger_release_makes_the_rows_comparable():
    text = _words(_report(extra_bound_release="path and batches").summary())
    assert "PLD (sampler) (1.18" not in text.split("releases differ")[1].split("verdict")[0]
