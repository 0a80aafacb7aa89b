"""One call that puts bounds, exact values, measurements and fits side by side, each labelled with
the release it concerns (DESIGN: "a bound below a measurement's lower confidence limit is a bug
(or a violated assumption): the library should make that comparison one call").

:func:`audit` runs coupled chains for a model, a sampler and a neighbouring pair, and returns,
per recorded step, eps(delta) from:

- **bounds** (kind "bound"): each accountant bound the caller names (a :class:`PrivacyCurve`, or
  a function of the step count returning one), and with ``bounds="auto"`` the sampler's own:
  PLD and RDP composition from its noise, sampling and clipping with the pair's adjacency
  (:mod:`dpjax.accountants.sampler_bounds`; release: the path, every iterate) and the
  last-iterate bound where the build has one and the model certifies its constants;
- **exact values** (kind "exact") where the caller supplies them;
- **certified measurements** from the chains: a lower confidence bound on the last iterate's eps
  (kind "lower bound", :func:`~dpjax.estimators.epsilon_lower_bound`) and the eps certified by a
  simultaneous band on the trade-off curve (kind "band",
  :func:`~dpjax.estimators.tradeoff_upper_bound`);
- **a fit** (kind "fit (assumes GDP)", :func:`~dpjax.estimators.gdp_lower_bound`): the eps of
  the GDP lower limit, valid only if the pair's trade-off is Gaussian; never called certified;
- **estimates** (kind "estimate"): the plug-in estimate of the last iterate with a bootstrap
  interval, and the path's eps from the recorded exact path privacy loss (release: the path
  **with its batches**, a larger object than either the last iterate or the path alone; with
  full batches, which are the same at every step, the path itself).

Releases ("released" column): "last iterate", "path (every iterate)", "path and batches", or the
bound's own words. A release contains the last iterate, so every bound is compared with the
last iterate's certified lower bound: one below it is flagged loudly (a
``PrivacyViolationWarning``, a row in ``report.violations``), and so is a bound below a supplied
exact value. ``report.ok`` is True only when every row is finite and consistent;
``report.problems`` says what failed, ``report.notes`` what limits the audit (the sample size's
ceiling, bounds that could not be computed and why).
"""
from __future__ import annotations

import dataclasses
import importlib
import math
import warnings
from pathlib import Path
from typing import Callable, Mapping, Optional, Sequence, Union

import numpy as np

from . import _display, _validate

# What an audit runs on (JAX, pandas, scipy) is imported on first use, not with this module:
# ``import dpjax.audit`` then costs what numpy does (issue 38: first answers fast). Every
# function below that reads one of these names calls _load() first; other modules reach them
# as attributes (PEP 562 __getattr__).
_LAZY = {
    "pd": ("pandas", None),
    "PrivacyCurve": (".accountants.curve", "PrivacyCurve"),
    "CoupledResult": (".coupled", "CoupledResult"),
    "DivergenceCheck": (".coupled", "DivergenceCheck"),
    "check_divergence": (".coupled", "check_divergence"),
    "run_coupled": (".coupled", "run_coupled"),
    "NeighbouringPair": (".data", "NeighbouringPair"),
    "epsilon_estimate": (".estimators", "epsilon_estimate"),
    "epsilon_lower_bound": (".estimators", "epsilon_lower_bound"),
    "gdp_lower_bound": (".estimators", "gdp_lower_bound"),
    "privacy_loss_profile": (".estimators", "privacy_loss_profile"),
    "rdp_lower_bound": (".estimators", "rdp_lower_bound"),
    "tradeoff_upper_bound": (".estimators", "tradeoff_upper_bound"),
    "FIT_MIN_PAIRS": (".estimators.gdp", "MIN_SAMPLES"),
    "Statistic": (".estimators.statistics", "Statistic"),
    "check_confidence": (".estimators.statistics", "check_confidence"),
    "Model": (".models.base", "Model"),
    "LangevinSampler": (".samplers.kernel", "LangevinSampler"),
}


def _load() -> None:
    """Bind the names of :data:`_LAZY` in this module (once)."""
    here = globals()
    if "run_coupled" in here:
        return
    for name, (module, attribute) in _LAZY.items():
        loaded = importlib.import_module(module, __package__)
        here[name] = loaded if attribute is None else getattr(loaded, attribute)


def __getattr__(name: str):
    if name in _LAZY:
        _load()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

BoundSpec = Union["PrivacyCurve", Callable[[int], "PrivacyCurve"], str]
ExactSpec = Callable[[int], float]

COLUMNS = ["step", "quantity", "kind", "released", "epsilon", "lower", "upper", "source", "nonfinite_pairs"]

# What each release is called in the table (and figure panels).
LAST_ITERATE = "last iterate"
PATH = "path (every iterate)"
PATH_AND_BATCHES = "path and batches"
UNSTATED = "release not stated by the bound"

FIT_KIND = "fit (assumes GDP)"
BAND_KIND = "band"
# The type-I errors of the trade-off band an audit measures (log-spaced, both ends resolved).
BAND_ALPHAS = np.array([1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9])
# Orders at which the last iterate's RDP is certified (at the last recorded step).
RDP_ORDERS = (2.0, 4.0, 8.0, 16.0, 32.0)
# A certified bound above this share of the sample size's ceiling is said to be limited by it.
CEILING_SHARE = 0.8


class PrivacyViolationWarning(UserWarning):
    """A claimed bound lies below a measured lower confidence limit."""


def release_label(released: str) -> str:
    """A curve provenance's ``released`` text as one of the audit's release names."""
    text = (released or "").strip().lower()
    if not text:
        return UNSTATED
    if "batch" in text:
        return PATH_AND_BATCHES
    if text.startswith("path") or text.startswith("every iterate") or text.startswith("trajectory"):
        return PATH
    if text.startswith("last iterate"):
        return LAST_ITERATE
    return released.strip()


@dataclasses.dataclass
class AuditReport:
    """Result of :func:`audit`.

    table: one row per (step, quantity, kind) with columns ``COLUMNS``; ``kind`` is "bound",
        "exact", "lower bound" (certified), "band" (certified by the trade-off band), "fit
        (assumes GDP)" or "estimate"; ``released`` names the release the row concerns;
        ``lower``/``upper`` are interval ends where the quantity has one (NaN otherwise);
        ``nonfinite_pairs``: how many chain pairs were non-finite by that step.
    violations: the rows of ``table`` (bounds and exact values) whose eps is below the
        lower confidence limit at the same step, with that limit in ``lower_confidence_limit``.
    coupled: the :class:`~dpjax.CoupledResult` the measurements come from.
    delta, confidence: as requested.
    problems: one line per reason the report is not ``ok`` (empty when it is).
    notes: what limits the audit without making it wrong (the sample size's ceiling, bounds
        that could not be computed and why).
    fits, bands: per recorded step, the :class:`~dpjax.estimators.GDPLowerBound` and
        :class:`~dpjax.estimators.TradeoffBand` of the last iterate (where measured).
    rdp: at the last recorded step, the :class:`~dpjax.estimators.RDPLowerBound` of the last
        iterate at :data:`RDP_ORDERS` (certified, all orders together), or None.
    divergence: the :class:`~dpjax.coupled.DivergenceCheck` of every recorded step (non-finite
        pairs, positions beyond float resolution, a drift that expands); a step that diverged
        makes the report not ``ok``, and ``problems`` says what to change.
    """

    table: pd.DataFrame
    violations: pd.DataFrame
    coupled: CoupledResult
    delta: float
    confidence: float
    problems: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    fits: dict = dataclasses.field(default_factory=dict)
    bands: dict = dataclasses.field(default_factory=dict)
    rdp: object = None
    divergence: Optional[DivergenceCheck] = None

    @property
    def ok(self) -> bool:
        """True only when every row is finite and consistent (see ``problems``): no bound or
        exact value below a lower confidence limit, no bound below an exact value, no
        non-finite or diverged chain pair (see ``divergence``) or number, at least one measured
        step, and every estimate at or above the step's lower bound and inside its own interval."""
        return not self.problems and self.violations.empty

    def summary(self, full: bool = False) -> str:
        """The audit as text in 100 columns: the headline at the last step, eps per recorded
        step with each row's kind and release in ``table``'s own words (a release too long for
        the table as "release k", spelled out below it), which rows are of releases that must not
        be compared, the verdict, the notes and every number's source in full at the headline
        step. ``full=True``: every step (by default, the steps that fit one block)."""
        return _display.audit_summary(self, full=full)

    def __repr__(self) -> str:
        return self.summary()

    def save(self, path) -> "Path":
        """Write :meth:`figure` to ``path`` (PNG, PDF or SVG by the suffix); returns the path."""
        return _display.save_figure(self.figure(), path)

    def figure(self, ax=None):
        """eps(delta) against the step, one panel per release; the title carries the verdict."""
        return _display.audit_figure(self, ax=ax)


def _bound_curve(spec, step: int) -> PrivacyCurve:
    _load()
    curve = spec(step) if callable(spec) else spec
    if not isinstance(curve, PrivacyCurve):
        raise TypeError(f"a bound must be a PrivacyCurve or a function step -> PrivacyCurve; got {type(curve).__name__}")
    return curve


@dataclasses.dataclass(frozen=True)
class _Claim:
    """A bound or exact value at one step: eps, its release and where it comes from."""

    epsilon: float
    released: str
    source: str


def _auto_bounds(model: Model, pair: NeighbouringPair, sampler: LangevinSampler, steps: Sequence[int], delta: float):
    """The sampler's own bounds at ``steps``: {name: {step: _Claim}} and notes on what is missing."""
    _load()
    from .accountants.sampler_bounds import BoundUnavailable, composition_epsilons, sampler_mechanism

    claims: dict = {}
    notes: list = []
    try:
        mech = sampler_mechanism(sampler, pair)
    except BoundUnavailable as why:
        notes.append(f"no composition bound for this sampler (bounds='auto'): {why}")
        mech = None
    if mech is not None:
        for name, accountant in (("PLD (sampler)", "pld"), ("RDP (sampler)", "rdp")):
            try:
                eps, prov = composition_epsilons(mech, steps, delta, accountant)
            except (BoundUnavailable, ValueError, IndexError, FloatingPointError) as why:
                # an accountant that cannot answer says why; the audit goes on without that row
                notes.append(f"{name}: not computed: {why}")
                continue
            claims[name] = {int(t): _Claim(float(e), PATH, prov.describe()) for t, e in zip(steps, eps)}
    try:
        # by name: the last-iterate accountant is optional in a build (a module that may be absent
        # is not an import the package's import graph can require)
        last_iterate = importlib.import_module("dpjax.accountants.samplers.last_iterate")
        ConstantsUnavailable, sampler_last_iterate_curve = last_iterate.ConstantsUnavailable, last_iterate.sampler_last_iterate_curve
    except (ImportError, AttributeError):
        notes.append("last-iterate bound: no last-iterate accountant in this build (composition bounds only)")
        return claims, notes
    rows = {}
    for t in steps:
        try:
            curve = sampler_last_iterate_curve(model, pair, sampler, int(t), method="auto")
        except ConstantsUnavailable as why:
            notes.append(f"last-iterate bound: {why} (composition bounds only)")
            rows = {}
            break
        # the release the curve states: the accountant falls back to composition (the path, which
        # covers the last iterate by post-processing) where the model's constants are uncertified
        released = release_label(curve.provenance.released)
        rows[int(t)] = _Claim(float(curve.epsilon(delta)), released, curve.provenance.describe())
    if rows:
        claims["last iterate (sampler)"] = rows
    return claims, notes


def audit(
    model: Model,
    pair: NeighbouringPair,
    sampler: LangevinSampler,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Optional[Sequence[int]] = None,
    delta: float = 1e-2,
    bounds: Union[None, str, Mapping[str, BoundSpec]] = None,
    exact: Optional[Mapping[str, ExactSpec]] = None,
    confidence: float = 0.95,
    seed: int = 0,
    init=None,
    path_loss: bool = True,
    statistic: Statistic = "auto",
    fits: bool = True,
    progress: bool = False,
) -> AuditReport:
    """Run coupled chains and compare accountant bounds, exact values, measurements and fits.

    Args:
        model, pair, sampler: as for :func:`dpjax.run_coupled`.
        num_pairs, num_steps, record_steps, seed, init, progress: passed to ``run_coupled``
            (steps 0 are skipped: nothing is released yet).
        delta: the delta at which every eps is reported, in (0, 1).
        bounds: name -> PrivacyCurve, or name -> function(step) -> PrivacyCurve; or ``"auto"``
            for the sampler's own bounds (see the module docstring); a mapping may hold the
            value ``"auto"`` under any name to add them beside the caller's.
        exact: name -> function(step) -> exact eps(delta) of the last iterate.
        confidence: of every certified bound, the fit and the intervals, in [0.5, 1).
        path_loss: also estimate eps(delta) of the released path (with its batches) from the
            recorded path privacy loss.
        statistic: the 1-D statistic of the last iterate every measurement thresholds
            ("auto": the iterate itself in 1-D, a fitted linear score otherwise; for a gradient
            canary, :attr:`dpjax.canaries.Canary.statistic`).
        fits: also measure the trade-off band and the GDP fit (from 1,000 pairs).

    Returns an :class:`AuditReport`. A chain pair non-finite at a recorded step (or before
    it) is left out of that step's measurements and counted in the table's
    ``nonfinite_pairs`` column; if any are present a ``RuntimeWarning`` says so and the report
    is not ``ok``. ``model.check_dataset`` is applied to both datasets, and every bound and
    exact value is evaluated at the recorded steps, before any chain runs.
    """
    _load()
    delta = _validate.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    confidence = check_confidence(confidence)
    seed = _validate.seed("seed", seed)
    for name, flag in (("path_loss", path_loss), ("fits", fits)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name}={flag!r} violates {name} a bool")
    if not isinstance(model, Model):
        raise TypeError(f"model={type(model).__name__} must be a dpjax.Model")
    if not isinstance(pair, NeighbouringPair):
        raise TypeError(f"pair={type(pair).__name__} must be a dpjax.NeighbouringPair (see replace_one / add_remove / make_pair)")
    for which, dataset in (("pair.dataset", pair.dataset), ("pair.neighbour", pair.neighbour)):
        try:
            model.check_dataset(dataset)
        except (ValueError, TypeError) as err:
            raise type(err)(f"{which} does not fit the model: {err}") from None
    if isinstance(bounds, str):
        if bounds != "auto":
            raise ValueError(f"bounds={bounds!r} violates bounds 'auto', a mapping name -> bound, or None")
        bounds = {"auto": "auto"}
    for label, given in (("bounds", bounds), ("exact", exact)):
        if given is not None and not isinstance(given, Mapping):
            raise TypeError(f"{label}={type(given).__name__} must be a mapping name -> spec (e.g. a dict)")
    bounds = dict(bounds or {})
    exact = dict(exact or {})
    want_auto = False
    for name, spec in list(bounds.items()):
        if isinstance(spec, str):
            if spec != "auto":
                raise ValueError(f"bounds[{name!r}]={spec!r} violates a PrivacyCurve, a function step -> PrivacyCurve, or 'auto'")
            want_auto = True
            del bounds[name]
        elif not (isinstance(spec, PrivacyCurve) or callable(spec)):
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
    released_steps = sorted({t for t in steps_checked if 0 < t <= num_steps_checked})
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

    for step in released_steps:
        for name in bounds:
            claim(step, "bound", name)
        for name in exact:
            claim(step, "exact", name)
    auto_claims, notes = _auto_bounds(model, pair, sampler, released_steps, delta) if want_auto else ({}, [])

    result = run_coupled(
        seed, model, pair, sampler, num_pairs=num_pairs, num_steps=num_steps,
        record_steps=record_steps, init=init, progress=progress,
    )
    return _report(
        result, delta=delta, confidence=confidence, seed=seed, bound_names=list(bounds), exact_names=list(exact), claim=claim,
        path_loss=path_loss, statistic=statistic, fits=fits, auto_claims=auto_claims, notes=notes,
        divergence=check_divergence(result, model, pair, sampler),
    )


def _measure_last_iterate(p, q, step, bad, *, delta, confidence, seed, statistic, fits, fitted, banded):
    """The last iterate's certified bound, band, fit and estimate at one step: table rows."""
    _load()
    rows = []
    keep = p.shape[0]
    if keep < 4:
        why = f"not measured: only {keep} finite chain pairs at this step (4 needed)"
        rows.append((step, "last iterate", "lower bound", LAST_ITERATE, np.nan, np.nan, np.nan, why, bad))
        rows.append((step, "last iterate", "estimate", LAST_ITERATE, np.nan, np.nan, np.nan, why, bad))
        return rows
    lb = epsilon_lower_bound(p, q, delta, confidence, statistic=statistic, seed=seed + step)
    rows.append((step, "last iterate", "lower bound", LAST_ITERATE, lb.epsilon, lb.epsilon, np.nan,
                 f"Clopper-Pearson {confidence:g} lower bound (ceiling {lb.resolution_ceiling:.3g} at this sample size)", bad))
    if fits:
        band = tradeoff_upper_bound(p, q, BAND_ALPHAS, confidence=confidence, statistic=statistic, seed=seed + step)
        banded[step] = band
        eps_band = band.epsilon_lower_bound(delta)
        rows.append((step, "last iterate", BAND_KIND, LAST_ITERATE, eps_band, eps_band, np.nan,
                     f"eps certified by a {confidence:g} simultaneous band on the trade-off curve ({len(BAND_ALPHAS)} tests, Clopper-Pearson "
                     "with Bonferroni)", bad))
        if keep >= FIT_MIN_PAIRS:
            fit = gdp_lower_bound(p, q, confidence=confidence, statistic=statistic, seed=seed + step)
            fitted[step] = fit
            rows.append((step, "last iterate", FIT_KIND, LAST_ITERATE, fit.epsilon(delta), fit.epsilon(delta), np.nan,
                         f"GDP fit: mu >= {fit.mu:.4g} ({confidence:g}, {fit.method}); eps of the Gaussian mechanism at that mu: a lower "
                         "bound ONLY IF the pair's trade-off is Gaussian (not certified)", bad))
    est = epsilon_estimate(p, q, delta, confidence=confidence, statistic=statistic, seed=seed + step)
    source = f"plug-in histogram estimate, {confidence:g} bootstrap interval"
    if not est.resolved:
        source += f"; UNRESOLVED (a floor, upper end inf): {est.note}"
    rows.append((step, "last iterate", "estimate", LAST_ITERATE, est.epsilon, est.interval[0], est.interval[1], source, bad))
    return rows


def _report(result: CoupledResult, *, delta: float, confidence: float, seed: int, bound_names, exact_names, claim, path_loss: bool,
            statistic: Statistic = "auto", fits: bool = False, auto_claims: Optional[dict] = None, notes: Optional[list] = None,
            divergence: Optional[DivergenceCheck] = None) -> AuditReport:
    """The audit's table, violations, problems and notes from recorded chains; ``claim(step,
    kind, name)`` returns (curve or None, eps) of a bound or an exact value; ``auto_claims``:
    name -> {step: _Claim} of the sampler's own bounds; ``divergence``: the chains' check
    (:func:`~dpjax.coupled.check_divergence`; None: non-finite pairs only)."""
    _load()
    if result.num_nonfinite:
        warnings.warn(
            f"{result.num_nonfinite} of {len(result.finite)} chain pairs went non-finite; each step's measurements use the pairs "
            "still finite at that step (counted in the table's nonfinite_pairs column)",
            RuntimeWarning,
            stacklevel=3,
        )
    auto_claims = auto_claims or {}
    notes = list(notes or [])
    finite_by_step = _finite_by_step(result)
    problems: list[str] = []
    recorded_bad = int(np.count_nonzero(~finite_by_step[-1])) if finite_by_step.size else 0
    if divergence is not None:
        # growth (the non-finite pairs have their own line per step below)
        problems += divergence.problems(nonfinite=False)
        if divergence.advice and divergence.diverged()[np.asarray(divergence.steps) > 0].any():
            problems.append(f"what to change: {divergence.advice}")
    if result.num_nonfinite > recorded_bad:
        problems.append(
            f"{result.num_nonfinite} of {len(result.finite)} chain pairs went non-finite during the run "
            f"({result.num_nonfinite - recorded_bad} of them after the last recorded step)"
        )

    rows = []
    fitted, banded = {}, {}
    # The path loss is conditional on the batches, so it measures the path released with them;
    # full batches are the same every step (no randomness to release), so there it is the path's.
    batching = (result.config.get("sampler") or {}).get("batching") if isinstance(result.config, dict) else None
    full_batch = isinstance(batching, dict) and batching.get("name") == "full"
    path_release = PATH if full_batch else PATH_AND_BATCHES
    for r, step in enumerate(result.steps):
        step = int(step)
        if step == 0:
            continue
        keep = finite_by_step[r]
        bad = int(np.count_nonzero(~keep))
        if bad:
            problems.append(f"step {step}: {bad} of {keep.size} chain pairs were non-finite; the measurements use the other {keep.size - bad}")
        p, q, loss = result.positions[r][keep], result.neighbour_positions[r][keep], result.path_loss[r][keep]
        rows += _measure_last_iterate(p, q, step, bad, delta=delta, confidence=confidence, seed=seed, statistic=statistic, fits=fits,
                                      fitted=fitted, banded=banded)
        if path_loss:
            if keep.sum() < 2:
                rows.append((step, "path (D vs D')", "estimate", path_release, np.nan, np.nan, np.nan,
                             f"not measured: only {int(keep.sum())} finite chain pairs at this step (2 needed)", bad))
            else:
                grid = np.linspace(0.0, max(1.0, 4.0 * float(np.quantile(loss, 0.999))), 400)
                prof = privacy_loss_profile(loss, grid, confidence=confidence, seed=seed + step)
                eps_point = float(prof.curve().epsilon(delta))
                eps_upper = float(prof.upper_curve().epsilon(delta))
                rows.append((step, "path (D vs D')", "estimate", path_release, eps_point, np.nan, eps_upper,
                             "exact path privacy loss, Monte Carlo; upper end: simultaneous empirical-Bernstein", bad))
        for name in bound_names:
            curve, value = claim(step, "bound", name)
            rows.append((step, name, "bound", release_label(curve.provenance.released), value, np.nan, np.nan, curve.provenance.describe(), bad))
        for name, per_step in auto_claims.items():
            if step in per_step:
                c = per_step[step]
                rows.append((step, name, "bound", c.released, c.epsilon, np.nan, np.nan, c.source, bad))
        for name in exact_names:
            rows.append((step, name, "exact", LAST_ITERATE, claim(step, "exact", name)[1], np.nan, np.nan, "exact law", bad))
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
    notes += _limits_notes(table, result, delta, confidence, fits)
    rdp = None
    if fits and finite_by_step.size and int(result.steps[-1]) > 0 and finite_by_step[-1].sum() >= 4:
        keep = finite_by_step[-1]
        rdp = rdp_lower_bound(result.positions[-1][keep], result.neighbour_positions[-1][keep], RDP_ORDERS, confidence=confidence,
                              statistic=statistic, seed=seed + int(result.steps[-1]))
        below = _rdp_below_certified(rdp, int(result.steps[-1]), bound_names, claim)
        if below:
            warnings.warn(f"PRIVACY VIOLATION: a bound's RDP lies below what the chains certify: {'; '.join(below)}",
                          PrivacyViolationWarning, stacklevel=3)
            problems += [f"violation: {line}" for line in below]
    return AuditReport(table=table, violations=violations.reset_index(drop=True), coupled=result, delta=delta, confidence=confidence,
                       problems=problems, notes=notes, fits=fitted, bands=banded, rdp=rdp, divergence=divergence)


def _rdp_below_certified(rdp, step: int, bound_names, claim) -> list:
    """Bounds whose RDP (at the certified orders) lies below the chains' certified RDP."""
    _load()
    out = []
    for name in bound_names:
        curve, _ = claim(step, "bound", name)
        if not getattr(curve, "has_rdp", False) or np.ndim(curve.rdp) != 1:
            continue
        for order, value, ok in zip(rdp.orders, rdp.rdp, rdp.certified):
            at = np.flatnonzero(np.isclose(curve.orders, order, rtol=0, atol=1e-12))
            if ok and at.size and float(curve.rdp[at[0]]) < value:
                out.append(f"step {step}: {name} (bound: {curve.provenance.describe()}) RDP at order {order:g} is "
                           f"{float(curve.rdp[at[0]]):.4g} < certified {value:.4g}")
    return out


def _limits_notes(table: pd.DataFrame, result: CoupledResult, delta: float, confidence: float, fits: bool) -> list:
    """What limits the audit at its last step: the sample size's ceiling (with the pairs a
    planned audit needs), a fit above the tightest bound, fits left out for want of pairs."""
    _load()
    from .estimators import pairs_needed

    if table.empty:
        return []
    last = int(table["step"].max())
    at = table[table["step"] == last]
    out = []
    lb = at[at["kind"] == "lower bound"]
    if lb.empty or not np.isfinite(lb["epsilon"].iloc[0]):
        return out
    import re

    match = re.search(r"ceiling ([0-9.eE+-]+)", lb["source"].iloc[0])
    ceiling = float(match.group(1)) if match else math.nan
    certified = float(lb["epsilon"].iloc[0])
    bounds = at[(at["kind"] == "bound") & np.isfinite(at["epsilon"].astype(float))]
    tightest = float(bounds["epsilon"].min()) if not bounds.empty else math.nan
    pairs = int(result.finite.size - at["nonfinite_pairs"].iloc[0])
    if np.isfinite(ceiling) and np.isfinite(tightest) and tightest > ceiling:
        try:
            plan = pairs_needed(tightest, delta, fraction=0.9, confidence=confidence)
            need = (f"about {int(plan.pairs):,} pairs would be needed to certify 90% of it if the pair were Gaussian "
                    "(dpjax.estimators.pairs_needed)") if math.isfinite(plan.pairs) else "no feasible number of pairs certifies it"
        except ValueError as why:
            need = f"pairs_needed: {why}"
        out.append(
            f"step {last}: the sample size, not the mechanism, limits the certified bound: with {pairs:,} pairs no eps above the "
            f"ceiling {ceiling:.3g} can be certified, and the tightest bound is {tightest:.4g}; {need}"
        )
    elif np.isfinite(ceiling) and ceiling > 0 and certified >= CEILING_SHARE * ceiling:
        out.append(
            f"step {last}: the certified bound {certified:.4g} is at {certified / ceiling:.0%} of the sample size's ceiling "
            f"{ceiling:.3g}: more pairs may certify more"
        )
    fit = at[at["kind"] == FIT_KIND]
    if not fit.empty and np.isfinite(tightest) and float(fit["epsilon"].iloc[0]) > tightest:
        out.append(
            f"step {last}: the GDP fit ({float(fit['epsilon'].iloc[0]):.4g}) exceeds the tightest bound ({tightest:.4g}): the pair's "
            "trade-off is not Gaussian (the fit's assumption fails), or the bound is wrong; the certified rows decide"
        )
    if fits and fit.empty and pairs < FIT_MIN_PAIRS:
        out.append(f"the GDP fit needs at least {FIT_MIN_PAIRS:,} finite pairs ({pairs:,} here): not fitted")
    return out


def _finite_by_step(result: CoupledResult) -> np.ndarray:
    """(R, K): pair k finite at recorded step r and at every earlier recorded step."""
    _load()
    now = (
        np.all(np.isfinite(result.positions), axis=-1)
        & np.all(np.isfinite(result.neighbour_positions), axis=-1)
        & np.isfinite(result.path_loss)
    )
    return np.logical_and.accumulate(now, axis=0)


def _bounds_below_exact(table: pd.DataFrame, rel: float = 1e-9) -> list:
    """A bound below an exact value of the same step (beyond rounding) is wrong outright."""
    _load()
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
    _load()
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
