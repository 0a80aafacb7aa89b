"""One call that puts bounds, exact values and measurements side by side (DESIGN: "a bound
below a measurement's lower confidence limit is a bug (or a violated assumption): the library
should make that comparison one call").

:func:`audit` runs coupled chains for a model, a sampler and a neighbouring pair, and returns,
per recorded step, eps(delta) from:

- each accountant bound the caller names (a :class:`PrivacyCurve`, or a function of the step
  count returning one),
- the exact value where the caller supplies it (a function of the step count returning eps),
- the chains: a valid lower confidence bound on the last iterate's eps
  (:func:`~dpjax.estimators.epsilon_lower_bound`), a plug-in estimate with a bootstrap
  interval (:func:`~dpjax.estimators.epsilon_estimate`), and the path's eps(delta) from the
  recorded exact path privacy loss (:func:`~dpjax.estimators.privacy_loss_profile`; this
  releases the whole path with its batches, a larger object than the last iterate).

A bound (or an exact value) below the lower confidence limit is flagged loudly: a
``PrivacyViolationWarning`` is issued and the row is marked in ``report.violations``.
"""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from . import _display, _validate
from .accountants.curve import PrivacyCurve
from .coupled import CoupledResult, run_coupled
from .data import NeighbouringPair
from .estimators import epsilon_estimate, epsilon_lower_bound, privacy_loss_profile
from .models.base import Model
from .samplers.kernel import LangevinSampler

BoundSpec = Union[PrivacyCurve, Callable[[int], PrivacyCurve]]
ExactSpec = Callable[[int], float]

COLUMNS = ["step", "quantity", "kind", "released", "epsilon", "lower", "upper", "source"]


class PrivacyViolationWarning(UserWarning):
    """A claimed bound lies below a measured lower confidence limit."""


@dataclasses.dataclass
class AuditReport:
    """Result of :func:`audit`.

    table: one row per (step, quantity) with columns ``COLUMNS``; ``kind`` is "bound",
        "exact", "lower bound" or "estimate"; ``lower``/``upper`` are interval ends where the
        quantity has one (NaN otherwise).
    violations: the rows of ``table`` (bounds and exact values) whose eps is below the
        lower confidence limit at the same step, with that limit in ``lower_confidence_limit``.
    coupled: the :class:`~dpjax.CoupledResult` the measurements come from.
    delta, confidence: as requested.
    """

    table: pd.DataFrame
    violations: pd.DataFrame
    coupled: CoupledResult
    delta: float
    confidence: float

    @property
    def ok(self) -> bool:
        """True when no bound or exact value fell below a lower confidence limit."""
        return self.violations.empty

    def summary(self, full: bool = False) -> str:
        """The audit as text in 100 columns: the headline at the last step, eps per recorded
        step (bounds, exact values, the chains' certified lower bound and estimates), the
        verdict and every number's source. ``full=True``: every step and full sources."""
        return _display.audit_summary(self, full=full)

    def __repr__(self) -> str:
        return self.summary()

    def save(self, path) -> "Path":
        """Write :meth:`figure` to ``path`` (PNG, PDF or SVG by the suffix); returns the path."""
        return _display.save_figure(self.figure(), path)

    def figure(self, ax=None):
        """eps(delta) against the step: bounds and exact values as lines, the lower
        confidence bound and the plug-in estimate as markers with their intervals."""
        import matplotlib.figure

        _display.enable_notebook_display()
        if ax is None:
            fig = matplotlib.figure.Figure(figsize=(7, 4.2))
            ax = fig.add_subplot()
        else:
            fig = ax.figure
        t = self.table
        for (quantity, kind), rows in t.groupby(["quantity", "kind"], sort=False):
            rows = rows.sort_values("step")
            if kind in ("bound", "exact"):
                style = "-" if kind == "exact" else "--"
                ax.plot(rows["step"], rows["epsilon"], style, marker=".", label=f"{quantity} ({kind})")
            else:
                lo = np.nan_to_num(rows["epsilon"] - rows["lower"], nan=0.0, posinf=0.0, neginf=0.0)
                hi = np.nan_to_num(rows["upper"] - rows["epsilon"], nan=0.0, posinf=0.0, neginf=0.0)  # an infinite end is not drawn
                marker = "^" if kind == "lower bound" else "o"
                yerr = None if kind == "lower bound" else np.vstack([np.maximum(lo, 0), np.maximum(hi, 0)])
                what = f"certified {self.confidence:.0%} lower bound" if kind == "lower bound" else f"{kind}, {self.confidence:.0%} interval"
                ax.errorbar(rows["step"], rows["epsilon"], yerr=yerr, fmt=marker, capsize=3, label=f"{quantity} ({what})")
        if not self.violations.empty:
            v = self.violations
            ax.scatter(v["step"], v["epsilon"], s=120, facecolors="none", edgecolors="red", linewidths=2, label="VIOLATION", zorder=5)
        ax.set_xlabel("step")
        ax.set_ylabel(f"epsilon at delta = {self.delta:g}")
        _display.epsilon_axis(ax, np.concatenate([t["epsilon"], t["upper"]]))
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        ax.set_title(f"audit: {len(self.coupled.finite):,} coupled chain pairs, {self.coupled.num_nonfinite:,} non-finite")
        return fig


def _bound_curve(spec: BoundSpec, step: int) -> PrivacyCurve:
    curve = spec(step) if callable(spec) else spec
    if not isinstance(curve, PrivacyCurve):
        raise TypeError(f"a bound must be a PrivacyCurve or a function step -> PrivacyCurve; got {type(curve).__name__}")
    return curve


def audit(
    model: Model,
    pair: NeighbouringPair,
    sampler: LangevinSampler,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Optional[Sequence[int]] = None,
    delta: float = 1e-2,
    bounds: Optional[Mapping[str, BoundSpec]] = None,
    exact: Optional[Mapping[str, ExactSpec]] = None,
    confidence: float = 0.95,
    seed: int = 0,
    init=None,
    path_loss: bool = True,
    progress: bool = False,
) -> AuditReport:
    """Run coupled chains and compare accountant bounds, exact values and measurements.

    Args:
        model, pair, sampler: as for :func:`dpjax.run_coupled`.
        num_pairs, num_steps, record_steps, seed, init, progress: passed to ``run_coupled``
            (steps 0 are skipped: nothing is released yet).
        delta: the delta at which every eps is reported, in (0, 1).
        bounds: name -> PrivacyCurve, or name -> function(step) -> PrivacyCurve.
        exact: name -> function(step) -> exact eps(delta) of the last iterate.
        confidence: of the lower bound, the estimate's bootstrap interval and the path-loss
            interval, in (0, 1).
        path_loss: also estimate eps(delta) of the released path from the recorded path loss.

    Returns an :class:`AuditReport`. Non-finite chain pairs are excluded from every
    measurement and counted in the report's title and ``coupled.num_nonfinite``; if any are
    present a ``RuntimeWarning`` says so.
    """
    _validate.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    _validate.in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    bounds = dict(bounds or {})
    exact = dict(exact or {})
    for name, spec in bounds.items():
        if not (isinstance(spec, PrivacyCurve) or callable(spec)):
            raise TypeError(f"bounds[{name!r}] must be a PrivacyCurve or a function step -> PrivacyCurve")
    for name, spec in exact.items():
        if not callable(spec):
            raise TypeError(f"exact[{name!r}] must be a function step -> epsilon")

    result = run_coupled(
        seed, model, pair, sampler, num_pairs=num_pairs, num_steps=num_steps,
        record_steps=record_steps, init=init, progress=progress,
    )
    if result.num_nonfinite:
        warnings.warn(
            f"{result.num_nonfinite} of {len(result.finite)} chain pairs went non-finite; they are excluded from every measurement",
            RuntimeWarning,
            stacklevel=2,
        )
    finite = result.finite_only()

    rows = []
    for r, step in enumerate(result.steps):
        step = int(step)
        if step == 0:
            continue
        p, q = finite.positions[r], finite.neighbour_positions[r]
        lb = epsilon_lower_bound(p, q, delta, confidence, seed=seed + step)
        rows.append((step, "last iterate", "lower bound", "last iterate", lb.epsilon, lb.epsilon, np.nan,
                     f"Clopper-Pearson {confidence:g} lower bound (ceiling {lb.resolution_ceiling:.3g} at this sample size)"))
        est = epsilon_estimate(p, q, delta, confidence=confidence, seed=seed + step)
        rows.append((step, "last iterate", "estimate", "last iterate", est.epsilon, est.interval[0], est.interval[1],
                     f"plug-in histogram estimate, {confidence:g} bootstrap interval"))
        if path_loss:
            grid = np.linspace(0.0, max(1.0, 4.0 * float(np.quantile(finite.path_loss[r], 0.999))), 400)
            prof = privacy_loss_profile(finite.path_loss[r], grid, confidence=confidence, seed=seed + step)
            eps_point = float(prof.curve().epsilon(delta))
            eps_upper = float(prof.upper_curve().epsilon(delta))
            rows.append((step, "path (D vs D')", "estimate", "path and batches", eps_point, np.nan, eps_upper,
                         "exact path privacy loss, Monte Carlo; upper end: simultaneous empirical-Bernstein"))
        for name, spec in bounds.items():
            curve = _bound_curve(spec, step)
            rows.append((step, name, "bound", curve.provenance.released or "unspecified", float(curve.epsilon(delta)),
                         np.nan, np.nan, curve.provenance.describe()))
        for name, fn in exact.items():
            rows.append((step, name, "exact", "last iterate", float(fn(step)), np.nan, np.nan, "exact law"))
    table = pd.DataFrame(rows, columns=COLUMNS)

    lcl = table[table["kind"] == "lower bound"].set_index("step")["epsilon"]
    claims = table[table["kind"].isin(["bound", "exact"])].copy()
    claims["lower_confidence_limit"] = claims["step"].map(lcl)
    violations = claims[claims["epsilon"] < claims["lower_confidence_limit"]]
    if not violations.empty:
        lines = "; ".join(
            f"step {int(v.step)}: {v.quantity} ({v.kind}: {v.source}) eps={v.epsilon:.4g} < measured lower confidence limit {v.lower_confidence_limit:.4g}"
            for v in violations.itertuples()
        )
        warnings.warn(
            f"PRIVACY VIOLATION: a claimed value lies below what the chains certify at confidence {confidence:g} "
            f"(a wrong bound or a violated assumption): {lines}",
            PrivacyViolationWarning,
            stacklevel=2,
        )
    return AuditReport(table=table, violations=violations.reset_index(drop=True), coupled=result, delta=delta, confidence=confidence)
