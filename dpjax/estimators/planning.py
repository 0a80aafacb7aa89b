"""How many coupled chain pairs an audit needs before its certified bound can show a given eps.

A certified lower bound from n samples per side can never exceed the sample size's ceiling
(:func:`~dpjax.estimators.resolution_ceiling`: every held-out sample of one side inside the set,
none of the other's), and well below that ceiling it is limited by how rare the certifying event
is. :func:`pairs_needed` predicts the bound :func:`~dpjax.estimators.epsilon_lower_bound` reaches
at n pairs on the **Gaussian pair with the same eps(delta)** (mu-GDP, mu solved from the target):
the bound with the held-out counts at their expectations and the best threshold
(:func:`~dpjax.estimators.oracle_lower_bound`), and returns the smallest n at which it reaches
``fraction`` of the target. From a pilot run, the target is the pilot's GDP fit instead.

It is a plan, not a guarantee: a mechanism whose privacy loss is heavier-tailed than the
Gaussian's at the same eps(delta) (Poisson-subsampled steps, a canary that is rarely sampled)
concentrates its eps in rarer events and needs more pairs; one lighter-tailed needs fewer. A
pilot audit at the planned size tells which.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Optional

import numpy as np
from scipy import optimize

from .. import _validate
from .lower_bound import oracle_lower_bound, resolution_ceiling
from .statistics import check_confidence, check_delta

# The search range of pairs per side.
MIN_PAIRS, MAX_PAIRS = 100, 10**12


@dataclasses.dataclass(frozen=True)
class PairsPlan:
    """Outcome of :func:`pairs_needed`.

    pairs: chain pairs (samples per side) at which the certified bound is expected to reach
        ``fraction`` of ``target_epsilon`` (inf when even 1e12 pairs do not).
    target_epsilon, delta, fraction, confidence: the goal. mu: the GDP parameter of the
        Gaussian pair with that eps(delta). expected_bound: the predicted certified bound at
        ``pairs``; ceiling: the sample size's ceiling there. source: "target" or "pilot".
    """

    pairs: float
    target_epsilon: float
    delta: float
    fraction: float
    confidence: float
    mu: float
    expected_bound: float
    ceiling: float
    source: str

    def __str__(self) -> str:
        if not math.isfinite(self.pairs):
            return (f"no sample size up to {MAX_PAIRS:.0e} pairs certifies {self.fraction:.0%} of eps = {self.target_epsilon:.4g} "
                    f"at delta = {self.delta:g}")
        return (f"about {int(self.pairs):,} pairs per side certify {self.fraction:.0%} of eps = {self.target_epsilon:.4g} at "
                f"delta = {self.delta:g} ({self.confidence:.0%} confidence; expected bound {self.expected_bound:.4g}, "
                f"ceiling {self.ceiling:.4g}; planned on the Gaussian pair mu = {self.mu:.4g}, from the {self.source})")


def _gaussian_mu(epsilon: float, delta: float) -> float:
    """The mu whose Gaussian mechanism has eps(delta) = ``epsilon``."""
    from ..accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon

    hi = 1.0
    while analytic_gaussian_epsilon(hi, delta) < epsilon:
        hi *= 2.0
        if hi > 1e6:
            raise ValueError(f"target epsilon={epsilon:g} at delta={delta:g} needs mu > 1e6: out of any audit's reach")
    return float(optimize.brentq(lambda m: analytic_gaussian_epsilon(m, delta) - epsilon, 0.0, hi, xtol=1e-10))


def expected_certified_bound(mu: float, pairs: float, delta: float, confidence: float = 0.95, selection_fraction: float = 0.2) -> float:
    """The certified bound :func:`~dpjax.estimators.epsilon_lower_bound` is expected to give on
    the Gaussian pair N(0, 1) vs N(mu, 1) with ``pairs`` samples per side (held-out counts at
    their expectations, best threshold).

    ``mu`` >= 0 (finite; the pair's separation: a negative mu is not the same pair read
    backwards, and it was silently answered as |mu|), ``pairs`` >= 1 (a real count; True,
    0 or -5 were answered 0.0), ``delta`` in (0, 1), ``confidence`` in [0.5, 1),
    ``selection_fraction`` in (0, 1): each checked before any work."""
    from scipy import stats  # here, not at import: scipy.stats takes ~0.4 s to import

    mu = _validate.nonnegative("mu", mu, "mu >= 0 (finite): the GDP parameter of the Gaussian pair")
    pairs = _validate.real("pairs", pairs, "pairs >= 1 (chain pairs per side)")
    if not (pairs >= 1 and math.isfinite(pairs)):
        raise ValueError(f"pairs={_validate._fmt(pairs)} violates pairs >= 1 (finite): chain pairs per side")
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    selection_fraction = _validate.in_range("selection_fraction", selection_fraction, 0.0, 1.0, low_open=True, high_open=True)
    if pairs >= 2.0**53:  # the held-out counts are carried in float64
        raise ValueError(f"pairs={_validate._fmt(pairs)} violates pairs < 2**53 (sample counts are carried in float64)")

    held_out = max(int(round((1.0 - selection_fraction) * pairs)), 1)
    return oracle_lower_bound(stats.norm(0.0, 1.0), stats.norm(mu, 1.0), held_out, held_out, delta, confidence, grid_size=401)


def pairs_needed(
    epsilon: Optional[float] = None,
    delta: float = 1e-3,
    *,
    fraction: float = 0.9,
    confidence: float = 0.95,
    pilot: Optional[tuple] = None,
    selection_fraction: float = 0.2,
) -> PairsPlan:
    """Chain pairs per side at which an audit's certified bound is expected to reach ``fraction``
    of a target eps at ``delta``.

    Args:
        epsilon: the target eps(delta) (e.g. the accountant's bound, or what the audit should be
            able to show). Give this or ``pilot``.
        delta: in (0, 1).
        fraction: in (0, 1): the share of the target the certified bound should reach.
        confidence: of the planned certified bound, in [0.5, 1).
        pilot: (samples_p, samples_q) of a short pilot run: the target is then the eps(delta)
            of the pilot's GDP point estimate (:func:`~dpjax.estimators.gdp_lower_bound`).
        selection_fraction: the split the audit's lower bound uses (0.2 by default).

    Returns a :class:`PairsPlan` (``pairs`` is inf when no sample size up to 1e12 gets there).
    The prediction assumes the pair's trade-off is Gaussian (see the module docstring).
    """
    delta = check_delta(delta)
    confidence = check_confidence(confidence)
    fraction = _validate.in_range("fraction", fraction, 0.0, 1.0, low_open=True, high_open=True)
    selection_fraction = _validate.in_range("selection_fraction", selection_fraction, 0.0, 1.0, low_open=True, high_open=True)
    if (epsilon is None) == (pilot is None):
        raise ValueError("pass exactly one of epsilon= (a target eps at delta) and pilot= ((samples_p, samples_q) of a pilot run)")
    if pilot is not None:
        from ..accountants.mechanisms.gaussian_divergence import analytic_gaussian_epsilon
        from .gdp import gdp_lower_bound

        if not (isinstance(pilot, (tuple, list)) and len(pilot) == 2):
            raise TypeError(f"pilot={type(pilot).__name__} must be a pair (samples_p, samples_q)")
        mu = gdp_lower_bound(pilot[0], pilot[1], confidence=confidence).mu_estimate
        if not (mu > 0 and math.isfinite(mu)):
            raise ValueError(f"the pilot run's GDP estimate is mu = {mu:g}: it resolves no leak to plan for (use epsilon=)")
        target, source = float(analytic_gaussian_epsilon(mu, delta)), "pilot run's GDP estimate"
    else:
        target = _validate.positive("epsilon", epsilon)
        mu, source = _gaussian_mu(target, delta), "target"
    goal = fraction * target

    def reaches(log_n: float) -> float:
        return expected_certified_bound(mu, math.exp(log_n), delta, confidence, selection_fraction) - goal

    lo, hi = math.log(MIN_PAIRS), math.log(MAX_PAIRS)
    if reaches(hi) < 0:
        n = math.inf
    elif reaches(lo) >= 0:
        n = float(MIN_PAIRS)
    else:
        n = float(math.ceil(math.exp(optimize.brentq(reaches, lo, hi, xtol=1e-3))))
    at = n if math.isfinite(n) else float(MAX_PAIRS)
    held_out = max(int(round((1.0 - selection_fraction) * at)), 1)
    return PairsPlan(
        pairs=n, target_epsilon=target, delta=delta, fraction=fraction, confidence=confidence, mu=mu,
        expected_bound=expected_certified_bound(mu, at, delta, confidence, selection_fraction),
        ceiling=resolution_ceiling(held_out, held_out, delta, confidence), source=source,
    )
