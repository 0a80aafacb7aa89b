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
``PrivacyViolationWarning`` is issued and the row is marked in ``report.violations``; so is a
bound below a supplied exact value. ``report.ok`` is True only when every row is finite and
consistent: no violation, no non-finite chain pair, no non-finite number, at least one
measured step, every estimate at or above the lower bound and inside its own interval;
``report.problems`` says what failed.
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

COLUMNS = ["step", "quantity", "kind", "released", "epsilon", "lower", "upper", "source", "nonfinite_pairs"]


class PrivacyViolationWarning(UserWarning):
    """A claimed bound lies below a measured lower confidence limit."""


@dataclasses.dataclass
class AuditReport:
    """Result of :func:`audit`.

    table: one row per (step, quantity) with columns ``COLUMNS``; ``kind`` is "bound",
        "exact", "lower bound" or "estimate"; ``lower``/``upper`` are interval ends where the
        quantity has one (NaN otherwise); ``nonfinite_pairs``: how many chain pairs were
        non-finite by that step (left out of that step's measurements).
    violations: the rows of ``table`` (bounds and exact values) whose eps is below the
        lower confidence limit at the same step, with that limit in ``lower_confidence_limit``.
    coupled: the :class:`~dpjax.CoupledResult` the measurements come from.
    delta, confidence: as requested.
    problems: one line per reason the report is not ``ok`` (empty when it is).
    """

    table: pd.DataFrame
    violations: pd.DataFrame
    coupled: CoupledResult
    delta: float
    confidence: float
    problems: list = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True only when every row is finite and consistent (see ``problems``): no bound or
        exact value below a lower confidence limit, no bound below an exact value, no
        non-finite chain pair or number, at least one measured step, and every estimate at or
        above the step's lower bound and inside its own interval."""
        return not self.problems and self.violations.empty

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

    Returns an :class:`AuditReport`. A chain pair non-finite at a recorded step (or before
    it) is left out of that step's measurements and counted in the table's
    ``nonfinite_pairs`` column; if any are present a ``RuntimeWarning`` says so and the report
    is not ``ok``. ``model.check_dataset`` is applied to both datasets, and every bound and
    exact value is evaluated at the recorded steps, before any chain runs.
    """
    delta = _validate.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    confidence = _validate.in_range("confidence", confidence, 0.0, 1.0, low_open=True, high_open=True)
    seed = _validate.seed("seed", seed)
    if not isinstance(path_loss, (bool, np.bool_)):
        raise TypeError(f"path_loss={path_loss!r} violates path_loss a bool")
    if not isinstance(model, Model):
        raise TypeError(f"model={type(model).__name__} must be a dpjax.Model")
    if not isinstance(pair, NeighbouringPair):
        raise TypeError(f"pair={type(pair).__name__} must be a dpjax.NeighbouringPair (see replace_one / add_remove / make_pair)")
    for which, dataset in (("pair.dataset", pair.dataset), ("pair.neighbour", pair.neighbour)):
        try:
            model.check_dataset(dataset)
        except (ValueError, TypeError) as err:
            raise type(err)(f"{which} does not fit the model: {err}") from None
    for label, given in (("bounds", bounds), ("exact", exact)):
        if given is not None and not isinstance(given, Mapping):
            raise TypeError(f"{label}={type(given).__name__} must be a mapping name -> spec (e.g. a dict)")
    bounds = dict(bounds or {})
    exact = dict(exact or {})
    for name, spec in bounds.items():
        if not (isinstance(spec, PrivacyCurve) or callable(spec)):
            raise TypeError(f"bounds[{name!r}] must be a PrivacyCurve or a function step -> PrivacyCurve")
    for name, spec in exact.items():
        if not callable(spec):
            raise TypeError(f"exact[{name!r}] must be a function step -> epsilon")
    # Bounds and exact values are functions of the step only: evaluate them before the chains
    # run, so a spec that fails (or returns the wrong type) fails in seconds, not after them.
    num_steps_checked = _validate.positive_int("num_steps", num_steps)
    try:
        steps_checked = [num_steps_checked] if record_steps is None else [int(t) for t in np.atleast_1d(np.asarray(record_steps))]
    except (TypeError, ValueError):
        steps_checked = []  # run_coupled rejects them with its own message
    claimed: dict = {}

    def claim(step: int, kind: str, name: str):
        key = (step, kind, name)
        if key not in claimed:
            if kind == "bound":
                curve = _bound_curve(bounds[name], step)
                claimed[key] = (curve, float(curve.epsilon(delta)))
            else:
                value = exact[name](step)
                try:
                    claimed[key] = (None, float(np.asarray(value, dtype=np.float64).reshape(())))
                except (TypeError, ValueError):
                    raise TypeError(f"exact[{name!r}]({step}) returned {value!r}; it must return one number (eps at delta={delta:g})") from None
        return claimed[key]

    for step in sorted({t for t in steps_checked if 0 < t <= num_steps_checked}):
        for name in bounds:
            claim(step, "bound", name)
        for name in exact:
            claim(step, "exact", name)

    result = run_coupled(
        seed, model, pair, sampler, num_pairs=num_pairs, num_steps=num_steps,
        record_steps=record_steps, init=init, progress=progress,
    )
    return _report(result, delta=delta, confidence=confidence, seed=seed, bound_names=list(bounds), exact_names=list(exact), claim=claim, path_loss=path_loss)


def _report(result: CoupledResult, *, delta: float, confidence: float, seed: int, bound_names, exact_names, claim, path_loss: bool) -> AuditReport:
    """The audit's table, violations and problems from recorded chains; ``claim(step, kind,
    name)`` returns (curve or None, eps) of a bound or an exact value."""
    if result.num_nonfinite:
        warnings.warn(
            f"{result.num_nonfinite} of {len(result.finite)} chain pairs went non-finite; each step's measurements use the pairs "
            "still finite at that step (counted in the table's nonfinite_pairs column)",
            RuntimeWarning,
            stacklevel=3,
        )
    finite_by_step = _finite_by_step(result)
    problems: list[str] = []
    recorded_bad = int(np.count_nonzero(~finite_by_step[-1])) if finite_by_step.size else 0
    if result.num_nonfinite > recorded_bad:
        problems.append(
            f"{result.num_nonfinite} of {len(result.finite)} chain pairs went non-finite during the run "
            f"({result.num_nonfinite - recorded_bad} of them after the last recorded step)"
        )

    rows = []
    for r, step in enumerate(result.steps):
        step = int(step)
        if step == 0:
            continue
        keep = finite_by_step[r]
        bad = int(np.count_nonzero(~keep))
        if bad:
            problems.append(f"step {step}: {bad} of {keep.size} chain pairs were non-finite; the measurements use the other {keep.size - bad}")
        p, q, loss = result.positions[r][keep], result.neighbour_positions[r][keep], result.path_loss[r][keep]
        if keep.sum() < 4:
            why = f"not measured: only {int(keep.sum())} finite chain pairs at this step (4 needed)"
            rows.append((step, "last iterate", "lower bound", "last iterate", np.nan, np.nan, np.nan, why, bad))
            rows.append((step, "last iterate", "estimate", "last iterate", np.nan, np.nan, np.nan, why, bad))
        else:
            lb = epsilon_lower_bound(p, q, delta, confidence, seed=seed + step)
            rows.append((step, "last iterate", "lower bound", "last iterate", lb.epsilon, lb.epsilon, np.nan,
                         f"Clopper-Pearson {confidence:g} lower bound (ceiling {lb.resolution_ceiling:.3g} at this sample size)", bad))
            est = epsilon_estimate(p, q, delta, confidence=confidence, seed=seed + step)
            source = f"plug-in histogram estimate, {confidence:g} bootstrap interval"
            if not est.resolved:
                source += f"; UNRESOLVED (a floor, upper end inf): {est.note}"
            rows.append((step, "last iterate", "estimate", "last iterate", est.epsilon, est.interval[0], est.interval[1], source, bad))
        if path_loss:
            if keep.sum() < 2:
                rows.append((step, "path (D vs D')", "estimate", "path and batches", np.nan, np.nan, np.nan,
                             f"not measured: only {int(keep.sum())} finite chain pairs at this step (2 needed)", bad))
            else:
                grid = np.linspace(0.0, max(1.0, 4.0 * float(np.quantile(loss, 0.999))), 400)
                prof = privacy_loss_profile(loss, grid, confidence=confidence, seed=seed + step)
                eps_point = float(prof.curve().epsilon(delta))
                eps_upper = float(prof.upper_curve().epsilon(delta))
                rows.append((step, "path (D vs D')", "estimate", "path and batches", eps_point, np.nan, eps_upper,
                             "exact path privacy loss, Monte Carlo; upper end: simultaneous empirical-Bernstein", bad))
        for name in bound_names:
            curve, value = claim(step, "bound", name)
            rows.append((step, name, "bound", curve.provenance.released or "unspecified", value, np.nan, np.nan, curve.provenance.describe(), bad))
        for name in exact_names:
            rows.append((step, name, "exact", "last iterate", claim(step, "exact", name)[1], np.nan, np.nan, "exact law", bad))
    table = pd.DataFrame(rows, columns=COLUMNS)

    lcl = table[table["kind"] == "lower bound"].set_index("step")["epsilon"]
    claims = table[table["kind"].isin(["bound", "exact"])].copy()
    claims["lower_confidence_limit"] = claims["step"].map(lcl)
    violations = claims[claims["epsilon"] < claims["lower_confidence_limit"]]
    lines = [
        f"step {int(v.step)}: {v.quantity} ({v.kind}: {v.source}) eps={v.epsilon:.4g} < measured lower confidence limit {v.lower_confidence_limit:.4g}"
        for v in violations.itertuples()
    ]
    lines += _bounds_below_exact(table)
    if lines:
        warnings.warn(
            f"PRIVACY VIOLATION: a claimed value lies below what the chains certify at confidence {confidence:g} or below an exact "
            f"value (a wrong bound or a violated assumption): {'; '.join(lines)}",
            PrivacyViolationWarning,
            stacklevel=3,
        )
    problems += [f"violation: {line}" for line in lines]
    problems += _table_problems(table)
    return AuditReport(table=table, violations=violations.reset_index(drop=True), coupled=result, delta=delta, confidence=confidence, problems=problems)


def _finite_by_step(result: CoupledResult) -> np.ndarray:
    """(R, K): pair k finite at recorded step r and at every earlier recorded step."""
    now = (
        np.all(np.isfinite(result.positions), axis=-1)
        & np.all(np.isfinite(result.neighbour_positions), axis=-1)
        & np.isfinite(result.path_loss)
    )
    return np.logical_and.accumulate(now, axis=0)


def _bounds_below_exact(table: pd.DataFrame, rel: float = 1e-9) -> list:
    """A bound below an exact value of the same step (beyond rounding) is wrong outright."""
    out = []
    for step, rows in table.groupby("step"):
        exacts = rows[(rows["kind"] == "exact") & np.isfinite(rows["epsilon"])]
        if exacts.empty:
            continue
        for b in rows[rows["kind"] == "bound"].itertuples():
            for e in exacts.itertuples():
                if b.epsilon < e.epsilon - rel * max(1.0, abs(e.epsilon)):
                    out.append(f"step {int(step)}: {b.quantity} (bound: {b.source}) eps={b.epsilon:.4g} < exact {e.quantity} {e.epsilon:.4g}")
    return out


def _table_problems(table: pd.DataFrame) -> list:
    """Empty table, non-finite numbers, estimates below the lower bound or outside their interval."""
    if table.empty:
        return ["the table is empty: no recorded step > 0, so nothing was measured (record_steps must include a step > 0)"]
    out = []
    for row in table.itertuples():
        if not np.isfinite(row.epsilon):
            out.append(f"step {int(row.step)}: {row.quantity} ({row.kind}) eps={row.epsilon} is not finite: {row.source}")
    lcl = table[table["kind"] == "lower bound"].set_index("step")["epsilon"]
    for row in table[(table["kind"] == "estimate") & (table["quantity"] == "last iterate")].itertuples():
        floor = lcl.get(row.step, np.nan)
        if np.isfinite(row.epsilon) and np.isfinite(floor) and row.epsilon < floor:
            out.append(f"step {int(row.step)}: the estimate {row.epsilon:.4g} is below the lower bound {floor:.4g} of the same samples")
        if np.isfinite(row.epsilon) and not (row.lower <= row.epsilon <= row.upper) and not (np.isnan(row.lower) and np.isnan(row.upper)):
            out.append(f"step {int(row.step)}: the estimate {row.epsilon:.4g} lies outside its own interval [{row.lower:.4g}, {row.upper:.4g}]")
    return out
