"""From a dpjax run (model, neighbouring pair, sampler) to the last-iterate accountants' constants.

A dpjax Langevin step is theta' = theta - drift * grad U_hat_B(theta) + noise_std * z with
grad U_hat_B = grad(-log prior) + scale * sum_{j in B} clip_C(g_j), g_j the gradient of
-w log p(x_j | theta) (:mod:`dpjax.samplers.kernel`). It is the update of
:func:`~dpjax.accountants.last_iterate_curve`, theta' = theta - eta (grad F_B + Z), with

* eta = drift (Welling–Teh: step / 2; Euler: gamma), sigma = noise_std / drift
  (Welling–Teh: 2 sqrt(T / step); Euler: sqrt(2 T / gamma); T = the sampler's temperature);
* F_B = (1/b) sum_{j in B} f_j, f_j = -log prior + n l_j, l_j the (clipped) per-record loss,
  b = n / scale (the batch size; Poisson: the expected size q n), so that
  gradient_sensitivity = n * the per-record gradient gap, smoothness = prior precision +
  n * max curvature of l, strong convexity = prior precision + n * min curvature of l
  (times (b - 1)/b under add/remove: the removed slot carries only the prior);
* batching: full -> "full", cyclic -> "cyclic" with a given order, "cyclic-random" with each
  chain's own random order (averaged over the record's position), reshuffle -> "shuffled",
  poisson -> "poisson"
  (smoothness of the fullest batch, (n / q) max curvature, and strong convexity of the empty one),
  without-replacement -> every step may hold the record (no amplification claimed),
  uniform with replacement -> not covered (a batch may hold the record b times).
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional

import numpy as np

from ... import _validate


class RunConstants(NamedTuple):
    step_size: float
    noise_std: float
    dataset_size: int
    batching: str
    batch_size: Optional[float]
    gradient_sensitivity: float
    smoothness: float
    strong_convexity: float
    constants_certified: bool
    adjacency: str
    gradient_bound: float
    assumptions: tuple


def _unavailable(message):
    from ...models.constants import ConstantsUnavailable

    return ConstantsUnavailable(message)


def _batching(sampler, n: int):
    from ...samplers import batching as bt

    scheme = sampler.batching
    if isinstance(scheme, bt.FullBatch):
        return "full", None
    if isinstance(scheme, bt.Cyclic):
        # a chain's own keyed order (order=None) is secret and uniform: averaged over positions
        return ("cyclic" if scheme.order is not None else "cyclic-random"), scheme.batch_size(n)
    if isinstance(scheme, bt.Reshuffle):
        return "shuffled", scheme.batch_size(n)
    if isinstance(scheme, bt.Poisson):
        return "poisson", float(scheme.rate) * n
    if isinstance(scheme, bt.WithoutReplacement):
        return "sampled", scheme.batch_size(n)
    raise _unavailable(f"batching {getattr(scheme, 'name', type(scheme).__name__)!r} is not covered by the last-iterate or "
                       "composition accountants: with replacement a batch may hold the differing record up to b times "
                       "(use 'without-replacement', 'reshuffle', 'cyclic', 'poisson' or 'full')")


def describe_run(model, pair, sampler, num_steps: int, need_constants: bool = True) -> RunConstants:
    """The constants of ``sampler`` run ``num_steps`` steps on ``model`` and ``pair`` (module
    docstring). With ``need_constants=False`` a model without certified constants still gets
    the step, noise, batching and (from the clip norm) the gradient gap composition needs."""
    from ...models import constants as mc

    if callable(sampler.step_size):
        raise _unavailable("the sampler has a step-size schedule; the last-iterate and composition accountants here need a "
                           "constant step size")
    n = int(pair.dataset.num_slots)
    step = _validate.positive("step_size", sampler.step_size)
    temp = float(sampler.temperature)
    if sampler.parameterisation == "welling-teh":
        eta, noise = step / 2.0, math.sqrt(step * temp)
    else:
        eta, noise = step, math.sqrt(2.0 * step * temp)
    sigma = noise / eta
    batching, b = _batching(sampler, n)
    b_eff = n if b is None else b
    clip = sampler.clip_norm
    assumptions = [f"sampler {sampler.name} ({sampler.parameterisation}): eta = {eta:.6g}, sigma = {sigma:.6g} "
                   f"(temperature {temp:g}), batching {batching}" + ("" if b is None else f", b = {b:g}"),
                   f"{pair.adjacency} pair differing in record {pair.index}"]
    try:
        rc = mc.certify(model, pair, clip)
        certified = True
    except Exception as err:  # noqa: BLE001 - re-raised below unless composition can go on without
        if type(err).__name__ != "ConstantsUnavailable" or need_constants or clip is None:
            raise
        certified = False
        gap = (2.0 if pair.adjacency == "replace-one" else 1.0) * float(clip)
        assumptions.append(f"composition only: {err}; gradient gap from clipping at C = {float(clip):g}")
        return RunConstants(eta, sigma, n, batching, b, n * gap, 0.0, 0.0, False, pair.adjacency, n * float(clip), tuple(assumptions))
    frac = (b_eff - 1.0) / b_eff if pair.adjacency == "add-remove" else 1.0
    if batching == "poisson":
        smooth = rc.prior_precision + (n * n / b_eff) * rc.record_smoothness  # all n records at scale 1/q = n/b
        strong = rc.prior_precision
    else:
        smooth = rc.prior_precision + n * rc.record_smoothness
        strong = rc.prior_precision + n * rc.record_strong_convexity * frac
    assumptions.extend(rc.derivation)
    return RunConstants(eta, sigma, n, batching, b, n * rc.gradient_difference, smooth, strong, certified, pair.adjacency,
                        n * rc.gradient_bound, tuple(assumptions))


__all__ = ["RunConstants", "describe_run"]
