"""How result objects print and draw (dpjax._display): numbers readable in 100 columns, the key
values and their provenance in the summary, figures that return and save, readable log ticks.

Every check here compares what is printed with the object's own numbers (formatted the same
way), so the tests pin the presentation, not any chain's output."""
import math

import numpy as np
import pandas as pd
import pytest

from dpjax import _display
from dpjax.accountants import PrivacyCurve, Provenance
from dpjax.accountants.samplers.girsanov import thm54_ula_path
from dpjax.audit import COLUMNS, AuditReport
from dpjax.coupled import CoupledResult
from dpjax.estimators import epsilon_estimate, epsilon_lower_bound, privacy_loss_profile, renyi_estimate
from dpjax.estimators.contamination import ContaminationEstimate

WIDTH = _display.WIDTH


def _fits(text: str) -> bool:
    return max(len(line) for line in text.splitlines()) <= WIDTH


def _coupled(num_pairs=400, steps=(5, 10), seed=0, nonfinite=0):
    rng = np.random.default_rng(seed)
    r = len(steps)
    x = rng.normal(size=(r, num_pairs, 2))
    y = x + np.array([0.3, 0.0])
    finite = np.ones(num_pairs, bool)
    finite[:nonfinite] = False
    config = dict(seed=seed, model="gaussian_mean", dim=2, sampler=dict(name="ula", step_size=0.02, batching=dict(name="full"), clip_norm=None),
                  num_records=20, differing_index=0, adjacency="replace-one", num_pairs=num_pairs, compile_seconds=1.5, run_seconds=0.25)
    return CoupledResult(np.array(steps), x, y, rng.normal(1.0, 0.5, size=(r, num_pairs)), finite, int(nonfinite), config)


def _report(violation=False, steps=(10, 20, 30, 40, 50, 60)):
    rows = []
    for i, s in enumerate(steps):
        lb = 0.4 + 0.01 * i
        rows += [
            (s, "last iterate", "lower bound", "last iterate", lb, lb, np.nan, "Clopper-Pearson 0.95 lower bound (ceiling 8.36 at this sample size)", 0),
            (s, "last iterate", "estimate", "last iterate", 0.7 + 0.01 * i, 0.6 + 0.01 * i, 0.85 + 0.01 * i, "plug-in histogram estimate, 0.95 bootstrap interval", 0),
            (s, "path (D vs D')", "estimate", "path and batches", 1.2 * (i + 1), np.nan, 1.3 * (i + 1), "exact path privacy loss, Monte Carlo", 0),
            (s, "Thm 5.4", "bound", "path", (0.01 if violation and i == 1 else 1.5 + 0.5 * i), np.nan, np.nan, "paper 001 Theorem 5.4, mode=paper, releases path", 0),
            (s, "exact law", "exact", "last iterate", 0.654 + 0.001 * i, np.nan, np.nan, "exact law", 0),
        ]
    table = pd.DataFrame(rows, columns=COLUMNS)
    lcl = table[table["kind"] == "lower bound"].set_index("step")["epsilon"]
    claims = table[table["kind"].isin(["bound", "exact"])].copy()
    claims["lower_confidence_limit"] = claims["step"].map(lcl)
    violations = claims[claims["epsilon"] < claims["lower_confidence_limit"]].reset_index(drop=True)
    return AuditReport(table=table, violations=violations, coupled=_coupled(steps=steps), delta=1e-2, confidence=0.95)


def test_fmt_rules():
    assert _display.fmt(3.745871379) == "3.746"
    assert _display.fmt(float("inf")) == "inf" and _display.fmt(-math.inf) == "-inf"
    assert _display.fmt(float("nan")) == "nan" and _display.fmt(None) == "-" and _display.fmt(0.0) == "0"
    assert _display.fmt_interval(0.5, float("nan")) == "[0.5, -]"
    assert _display.fmt_interval(0.5, math.inf) == "[0.5, inf]"


def test_audit_summary_shows_every_number_within_100_columns():
    report = _report()
    text = repr(report)
    assert text == report.summary() and _fits(text)
    t = report.table
    last = t["step"].max()
    # the headline: certified lower bound, exact value and tightest bound at the last step
    at = t[t["step"] == last].set_index("kind")
    assert f"at least {_display.fmt(at.loc['lower bound', 'epsilon'])}" in text
    assert f"exactly {_display.fmt(at.loc['exact', 'epsilon'])}" in text
    assert f"at most {_display.fmt(at.loc['bound', 'epsilon'])}" in text
    assert "verdict: ok" in text and "sources:" in text and "Clopper-Pearson" in text
    # the compact view keeps the first and the last steps, and says how to see the rest
    assert "step 10" in text and f"step {last}" in text and "summary(full=True)" in text
    full = report.summary(full=True)
    assert _fits(full)
    for _, row in t.iterrows():  # every value of the table appears in the full view
        value = _display.fmt(row["epsilon"], 3 if row["kind"] == "estimate" else 4)
        assert value in full, (row["step"], row["quantity"], value)
    # claims (bounds, exact values) come before measurements in the table
    table = full[full.index("quantity"):]
    assert table.index("Thm 5.4") < table.index("exact law") < table.index("certified")


def test_audit_summary_flags_a_violation():
    report = _report(violation=True)
    assert not report.ok
    text = report.summary()
    assert "PRIVACY VIOLATION" in text and "step 20: Thm 5.4 (bound) 0.01 < certified 0.41" in text


def test_audit_summary_with_nothing_recorded():
    report = _report(steps=(10,))
    empty = AuditReport(table=report.table.iloc[:0], violations=report.violations.iloc[:0], coupled=report.coupled, delta=0.01, confidence=0.95)
    assert "nothing is released yet" in empty.summary()


def test_audit_figure_returns_and_saves_with_readable_axis(tmp_path):
    report = _report()
    fig = report.figure()
    ax = fig.axes[0]
    assert ax.get_yscale() == "linear" and ax.get_ylim()[0] == 0.0  # eps from 0.4 to 7.2: a linear axis from 0
    path = report.save(tmp_path / "sub" / "audit.png")
    assert path.exists() and path.stat().st_size > 10_000
    with pytest.raises(ValueError, match="has no suffix"):
        report.save(tmp_path / "audit")


def test_epsilon_axis_uses_symlog_with_labels_over_decades():
    fig, (ax,) = _display.new_figure()
    values = [0.003, 0.05, 2.0, 40.0]
    ax.plot(range(4), values)
    _display.epsilon_axis(ax, values)
    assert ax.get_yscale() == "symlog"
    fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert len(labels) >= 4 and "0" in labels


def test_log_ticks_label_a_narrow_range():
    """The tour's old figure: a log axis over 0.3..4 showed one label (10^0)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig, (ax,) = _display.new_figure()
    FigureCanvasAgg(fig)
    ax.plot([1, 2, 3], [0.3, 1.5, 4.0])
    ax.set_yscale("log")
    _display.readable_log_ticks(ax, "y")
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    labels = [t.get_text() for t, v in zip(ax.get_yticklabels(), ax.get_yticks()) if lo <= v <= hi and t.get_text()]
    assert len(labels) >= 3 and all("^" not in s for s in labels)
    assert "0.5" in labels and "1" in labels and "2" in labels


def test_privacy_curve_prints_eps_at_a_ladder_of_deltas(tmp_path):
    curve = thm54_ula_path(2.0, 0.02, 40)
    text = repr(curve)
    assert _fits(text) and text.startswith("PrivacyCurve (paper): paper 001 Theorem 5.4; releases path")
    for d in _display.DELTAS:
        assert f"{_display.fmt(curve.epsilon(d))} at {_display.fmt(d)}" in text
    assert f"{curve.orders.size} orders" in text and "assumes:" in text
    orders = np.array([2.0, 4.0, 8.0])
    batched = PrivacyCurve.from_rdp(orders, np.outer([0.1, 1.0], orders), Provenance("toy zCDP", mode="bound"))
    text = repr(batched)
    assert "a batch of 2 curves" in text and _display.fmt(batched.epsilon(1e-5)[1]) in text
    profile = PrivacyCurve.from_profile([0.0, 1.0, 2.0], [0.5, 0.1, 0.001], Provenance("toy profile", mode="estimate"))
    assert "inf at 1e-05" in repr(profile)  # the profile certifies nothing at delta = 1e-5: inf, not a number
    fig = curve.figure()
    assert len(fig.axes) == 2 and fig.axes[0].get_xscale() == "log"
    assert curve.save(tmp_path / "curve.png").stat().st_size > 10_000


def test_estimator_results_print_their_numbers(tmp_path):
    rng = np.random.default_rng(0)
    p, q = rng.normal(0.0, 1.0, 4000), rng.normal(1.0, 1.0, 4000)
    lb = epsilon_lower_bound(p, q, 1e-2)
    text = repr(lb)
    assert _fits(text) and f"eps >= {_display.fmt(lb.epsilon)}" in text and _display.fmt(lb.resolution_ceiling, 3) in text
    assert f"{lb.holdout_p:,} + {lb.holdout_q:,} held-out" in text
    est = epsilon_estimate(p, q, 1e-2, num_bootstrap=50)
    text = repr(est)
    assert _fits(text) and _display.fmt(est.epsilon) in text and _display.fmt_interval(*est.interval) in text
    ren = renyi_estimate(p, q, [2.0, 4.0, 8.0], num_bootstrap=50)
    text = repr(ren)
    assert _fits(text) and all(_display.fmt(v) in text for v in ren.rdp)
    assert ren.save(tmp_path / "renyi.png").exists()
    loss = rng.normal(0.5, 1.0, 5000)
    prof = privacy_loss_profile(loss, np.linspace(0, 6, 120), orders=[2.0])
    text = repr(prof)
    assert _fits(text) and f"{_display.fmt(prof.curve().epsilon(0.01))} (<= {_display.fmt(prof.upper_curve().epsilon(0.01))}) at 0.01" in text
    assert prof.save(tmp_path / "profile.png").exists()


def test_contamination_estimate_prints_and_warns_on_unresolved_tails(tmp_path):
    eps = np.linspace(0.1, 1.0, 50)
    est = ContaminationEstimate(epsilon=0.99, quantile=0.99, delta=1e-3, contamination_rate=0.5, num_records=100, epsilons=eps,
                                interval=(0.9, math.inf), interval_confidence=0.95, bootstrap_se=0.02, num_failed=0,
                                num_unresolved_tail=3, details={}, seconds=1.0)
    text = repr(est)
    assert _fits(text) and "eps_hat = 0.99" in text and "[0.9, inf]" in text and "3 had no particle outside the box" in text
    assert est.save(tmp_path / "c.png").exists()


def test_coupled_result_prints_a_summary_not_arrays(tmp_path):
    res = _coupled(nonfinite=3)
    text = repr(res)
    assert _fits(text) and "400 chain pairs" in text and "(3 non-finite)" in text and "array(" not in text
    fin = res.finite_only()
    gap = np.linalg.norm(fin.neighbour_positions[-1].mean(0) - fin.positions[-1].mean(0))
    assert _display.fmt(gap, 3) in text
    fig = res.figure()
    assert len(fig.axes) == 2
    assert res.save(tmp_path / "c.png").exists()


def test_figures_display_in_a_notebook_without_pyplot():
    """A pyplot-free figure is drawn as PNG when it is a cell's value (no '<Figure size ...>')."""
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        fig = _report().figure()
        data, _ = shell.display_formatter.format(fig)
        assert data.get("image/png", b"")[:8] == b"\x89PNG\r\n\x1a\n"
    finally:
        InteractiveShell.clear_instance()
