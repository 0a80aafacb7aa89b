"""The accounting bound of the sampler an audit runs: from its step size, temperature,
parameterisation, clipping and batching, and the pair's adjacency, to the Gaussian mechanism
it composes (noise multiplier, sampling rate, number of compositions), then to RDP and PLD
curves. Nobody converts a step size to a noise multiplier by hand.

One step of a :class:`~dpjax.samplers.LangevinSampler` (see :mod:`dpjax.samplers.kernel`) is

    theta' = theta - drift_coef * (grad(-log prior) + scale * sum_j w_j mask_j clip_C(g_j)) + noise_std * z,

with (drift_coef, noise_std) = (eta / 2, sqrt(eta T)) in the Welling–Teh form (step size eta)
and (gamma, sqrt(2 gamma T)) in the Euler form (step size gamma), T the temperature, clip_C the
per-record clipping to norm C and ``scale`` the batching's (1 full batch; n / b fixed-size;
1 / q Poisson). Given the history, the differing record moves the mean of theta' by
drift_coef * scale * clip_C(g) (add/remove: the record is in D only; its slot is masked in D')
or by drift_coef * scale * (clip_C(g) - clip_C(g')) (replace-one), of norm at most
drift_coef * scale * C * m with m = 1 (add/remove) or 2 (replace-one); everything else is the same
for both datasets. So a step that uses the record's slot is the Gaussian mechanism with

    noise_multiplier = noise_std / (drift_coef * scale * C * m)

relative to the adjacency's sensitivity (the convention of :func:`~dpjax.accountants.pld_curve`:
sensitivity C for add/remove, 2C for replace-one), and releasing every iterate composes them
(the last iterate alone leaks no more: post-processing).

How often the record's slot is used, by batching (dpjax keeps the slot in both datasets, masked
under add/remove, so which slots a batch uses never depends on the data):

=======================  =================================================================
full                     every step: t Gaussian mechanisms after t steps (q = 1)
poisson (rate q)         each step independently with probability q: the Poisson-subsampled
                         Gaussian mechanism, t-fold (Mironov et al. 2019; Zhu et al. 2022)
without-replacement (b)  each step its slot is among b of n with probability b/n, independently
                         across steps (a fresh order each step), and the other b - 1 slots are
                         the same records for D and D': per step the same pair as Poisson
                         sampling at q = b/n (+2^-R: the order's deviation from uniform), t-fold
reshuffle, cyclic (b)    once per epoch of ceil(n / b) steps, at a position that is data-
                         independent: conditional on the order, ceil(t / epoch) Gaussian
                         mechanisms (no amplification claimed), at the largest block scale
uniform (with repl.)     the slot can be drawn several times in one batch: no bound here
=======================  =================================================================

The conditional-on-order argument (reshuffle, cyclic): the path's law is a mixture over orders
with the same weights under D and D', and a hockey-stick or Rényi divergence of such mixtures is
at most the largest divergence of the components (joint convexity; quasi-convexity for Rényi).

Not covered (each raises :class:`BoundUnavailable` saying why): no clipping (one record's effect
on a step is unbounded by the sampler), sampling with replacement, step-size schedules.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from ..data import NeighbouringPair
from ..samplers.batching import Cyclic, FullBatch, Poisson, Reshuffle, UniformWithReplacement, WithoutReplacement
from ..samplers.kernel import LangevinSampler
from ..samplers.permutation import swap_or_not_rounds
from .curve import PrivacyCurve, Provenance

RELEASE = "path (every iterate; the last iterate by post-processing)"


class BoundUnavailable(ValueError):
    """The sampler's configuration has no composition bound in dpjax (the message says why)."""


@dataclasses.dataclass(frozen=True)
class SamplerMechanism:
    """The Gaussian mechanism one step of the sampler applies to the differing record.

    noise_std, drift_coef, scale: of the step (largest scale for blocked batchings).
    sensitivity: drift_coef * scale * clip_norm * m, the largest mean shift the record causes.
    noise_multiplier: noise_std / sensitivity. sampling_rate: probability a step uses the
    record's slot (Poisson, or b/n + 2^-R for fixed-size batches; 1 otherwise).
    adjacency: "add-remove" or "replace-one". per_epoch: the record is used once per epoch of
    ``steps_per_epoch`` steps (reshuffle, cyclic) rather than independently each step.
    how: the mapping in words (for provenance).
    """

    noise_std: float
    drift_coef: float
    scale: float
    clip_norm: float
    sensitivity: float
    noise_multiplier: float
    sampling_rate: float
    adjacency: str
    per_epoch: bool
    steps_per_epoch: int
    how: str

    def compositions(self, num_steps: int) -> int:
        """How many Gaussian mechanisms ``num_steps`` steps compose (t, or ceil(t / epoch))."""
        if num_steps < 0:
            raise ValueError(f"num_steps={num_steps} violates num_steps >= 0")
        return -(-int(num_steps) // self.steps_per_epoch) if self.per_epoch else int(num_steps)


def _coefficients(sampler: LangevinSampler) -> tuple[float, float]:
    """(drift_coef, noise_std) of a constant step size, by the sampler's own definition, in float64."""
    import jax
    import jax.numpy as jnp

    with jax.enable_x64(True):
        drift, noise = sampler.coefficients(jnp.asarray(0), dtype=jnp.float64)
        return float(drift), float(noise)


def sampler_mechanism(sampler: LangevinSampler, pair: NeighbouringPair) -> SamplerMechanism:
    """The per-step Gaussian mechanism of ``sampler`` on ``pair`` (see the module docstring)."""
    if not isinstance(sampler, LangevinSampler):
        raise TypeError(f"sampler={type(sampler).__name__} must be a dpjax.samplers.LangevinSampler")
    if not isinstance(pair, NeighbouringPair):
        raise TypeError(f"pair={type(pair).__name__} must be a dpjax.NeighbouringPair")
    if callable(sampler.step_size):
        raise BoundUnavailable(
            "the step size is a schedule: the per-step noise multipliers vary and dpjax's auto bound composes one value; "
            "pass the curve yourself (pld_sequence_curve of the per-stage noise multipliers) through bounds="
        )
    if sampler.clip_norm is None:
        raise BoundUnavailable(
            "the sampler does not clip per-record gradients (clip_norm=None): one record's effect on a step is not bounded "
            "by the sampler, so no composition bound follows from its noise (clip, or pass a model-specific bound)"
        )
    n = pair.dataset.num_slots
    batching = sampler.batching
    batching.validate(n)
    drift, noise = _coefficients(sampler)
    m = 1.0 if pair.adjacency == "add-remove" else 2.0
    per_epoch, epoch = False, 1
    if isinstance(batching, FullBatch):
        scale, q, kind = 1.0, 1.0, "full batch: the record in every step"
    elif isinstance(batching, Poisson):
        scale, q, kind = 1.0 / batching.rate, float(batching.rate), f"Poisson batches at q = {batching.rate:g}"
    elif isinstance(batching, WithoutReplacement):
        b = batching.batch_size_
        rounds = swap_or_not_rounds(n)
        scale, q = n / b, min(1.0, b / n + 2.0**-rounds)
        kind = f"fixed batches of b = {b} of n = {n} slots without replacement: per step the Poisson pair at q = b/n + 2^-{rounds}"
    elif isinstance(batching, (Reshuffle, Cyclic)):
        b = batching.batch_size_
        epoch = batching.steps_per_epoch(n)
        smallest = n - b * (epoch - 1)  # the last block of an epoch is short when b does not divide n
        scale, q, per_epoch = n / smallest, 1.0, True
        kind = (f"{batching.name} order: the record once per epoch of {epoch} steps (conditional on the order; no amplification), "
                f"block scale n/{smallest}")
    elif isinstance(batching, UniformWithReplacement):
        raise BoundUnavailable(
            "batching='uniform' draws with replacement: the record can enter one batch several times, and dpjax has no "
            "amplification bound for that (use batching='poisson' or 'without-replacement' for an auto bound)"
        )
    else:  # pragma: no cover - a new scheme must say how it uses the record
        raise BoundUnavailable(f"batching {batching.name!r} has no composition bound in dpjax")
    sensitivity = drift * scale * float(sampler.clip_norm) * m
    form = ("Welling-Teh: drift eta/2, noise sqrt(eta T)" if sampler.parameterisation == "welling-teh"
            else "Euler: drift gamma, noise sqrt(2 gamma T)")
    how = (f"{sampler.name} ({form}; step size {sampler.step_size:g}, T = {sampler.temperature:g}, C = {sampler.clip_norm:g}), "
           f"{kind}, {pair.adjacency}: noise multiplier {noise:.6g} / ({drift:.6g} x {scale:.6g} x {sampler.clip_norm:g} x {m:g}) "
           f"= {noise / sensitivity:.6g}")
    return SamplerMechanism(
        noise_std=noise, drift_coef=drift, scale=scale, clip_norm=float(sampler.clip_norm), sensitivity=sensitivity,
        noise_multiplier=noise / sensitivity, sampling_rate=q, adjacency=pair.adjacency, per_epoch=per_epoch,
        steps_per_epoch=epoch, how=how,
    )


# Discretisation intervals tried in turn: a coarser grid keeps the pessimistic bound valid (only
# looser) where the fine one needs an FFT beyond the accountant's limit (a small noise multiplier).
PLD_INTERVALS = (1e-4, 1e-3, 1e-2, 1e-1)


def _pld_with_a_feasible_grid(sigma: float, q: float, counts: np.ndarray, adjacency: str):
    """pld_curve at the finest interval of PLD_INTERVALS whose FFT fits; (curve, interval)."""
    from .composition.pld_accountant import pld_curve

    last = None
    for interval in PLD_INTERVALS:
        try:
            return pld_curve(sigma, q, counts, adjacency=adjacency, sampling="poisson", value_discretization_interval=interval), interval
        except ValueError as why:
            if "too fine" not in str(why):
                raise
            last = why
    raise BoundUnavailable(f"the PLD accountant cannot compose these steps even at interval {PLD_INTERVALS[-1]:g}: {last}")


def composition_epsilons(mechanism: SamplerMechanism, steps: Sequence[int], delta: float, accountant: str) -> tuple[np.ndarray, Provenance]:
    """eps(delta) of the path after each of ``steps`` steps by the RDP or PLD accountant, and the
    provenance (one PLD call for all step counts). Raises :class:`BoundUnavailable` where the
    accountant does not cover the configuration (RDP: Poisson sampling with replace-one)."""
    from .composition.rdp import noisy_sgd_curve

    counts = [mechanism.compositions(t) for t in steps]
    sigma, q = mechanism.noise_multiplier, mechanism.sampling_rate
    assumptions = (mechanism.how, "per-record gradients clipped to norm C; the prior is data-independent")
    if accountant == "rdp":
        if q < 1 and mechanism.adjacency != "add-remove":
            raise BoundUnavailable("the RDP accountant's subsampled Gaussian bound is for add/remove adjacency; the PLD row covers replace-one")
        eps = np.array([float(noisy_sgd_curve(sigma, q, k, adjacency=mechanism.adjacency).epsilon(delta)) if k > 0 else 0.0 for k in counts])
        result = "RDP accountant (noisy_sgd_curve): " + ("Poisson-subsampled " if q < 1 else "") + "Gaussian mechanism"
    elif accountant == "pld":
        positive = np.array([k for k in counts if k > 0], dtype=np.int64)
        eps = np.zeros(len(counts))
        interval = PLD_INTERVALS[0]
        if positive.size:
            curve, interval = _pld_with_a_feasible_grid(sigma, q, positive, mechanism.adjacency)
            values = np.atleast_1d(np.asarray(curve.epsilon(delta), dtype=np.float64))
            eps[[i for i, k in enumerate(counts) if k > 0]] = values
        result = (f"PLD accountant (pld_curve, pessimistic, grid {interval:g}): " + ("Poisson-subsampled " if q < 1 else "")
                  + "Gaussian mechanism")
    else:
        raise ValueError(f"accountant={accountant!r} is not one of ['pld', 'rdp']")
    what = "epochs" if mechanism.per_epoch else "steps"
    prov = Provenance(
        result=f"{result}, noise multiplier {sigma:.4g}, q = {q:.4g}, composed once per {'epoch' if mechanism.per_epoch else 'step'} "
               f"(at step t: {'ceil(t / ' + str(mechanism.steps_per_epoch) + ')' if mechanism.per_epoch else 't'} {what})",
        mode="bound",
        assumptions=assumptions,
        released=RELEASE,
    )
    return eps, prov


def sampler_composition_curve(sampler: LangevinSampler, pair: NeighbouringPair, num_steps: int, accountant: str = "pld") -> PrivacyCurve:
    """The path's privacy curve after ``num_steps`` steps of ``sampler`` on ``pair`` (RDP or PLD)."""
    from .composition.rdp import noisy_sgd_curve
    from .composition.pld_accountant import pld_curve

    mech = sampler_mechanism(sampler, pair)
    k = mech.compositions(num_steps)
    if k < 1:
        raise ValueError(f"num_steps={num_steps} composes no mechanism (nothing released yet)")
    if accountant == "rdp":
        if mech.sampling_rate < 1 and mech.adjacency != "add-remove":
            raise BoundUnavailable("the RDP accountant's subsampled Gaussian bound is for add/remove adjacency; use accountant='pld'")
        curve = noisy_sgd_curve(mech.noise_multiplier, mech.sampling_rate, k, adjacency=mech.adjacency)
    elif accountant == "pld":
        curve = pld_curve(mech.noise_multiplier, mech.sampling_rate, k, adjacency=mech.adjacency, sampling="poisson")
    else:
        raise ValueError(f"accountant={accountant!r} is not one of ['pld', 'rdp']")
    prov = dataclasses.replace(curve.provenance, assumptions=curve.provenance.assumptions + (mech.how,), released=RELEASE)
    return dataclasses.replace(curve, provenance=prov)


__all__ = ["BoundUnavailable", "SamplerMechanism", "composition_epsilons", "sampler_composition_curve", "sampler_mechanism"]
