"""Metropolis-type kernels for chain pairs on neighbouring datasets: MALA and the exact AR(1) kernel.

Paper 001 §3 (Propositions 3.2, 3.4, Corollary 3.3) is about samplers that leave the posterior
pi_D invariant, so that the law of the n-th state converges to pi_D (asymptotically exact,
r = 0 in Assumption 3.1), against biased ones such as ULA. Two pi_D-invariant kernels:

* **MALA** (Metropolis-adjusted Langevin): propose y = x - h grad U_D(x) + sqrt(2h) z and
  accept with probability min(1, exp(-U_D(y) + U_D(x)) q(y, x)/q(x, y)), where
  q(x, y) ∝ exp(-|y - x + h grad U_D(x)|^2 / (4h)). Any potential U_D (the model's).
* **exact AR(1)** for a Gaussian target N(m_D, S_D): x' = m_D + rho (x - m_D) + sqrt(1 - rho^2)
  S_D^{1/2} z. It is reversible with respect to pi_D for every |rho| < 1; with rho = 1 - gamma h
  it contracts the mean exactly like ULA with step gamma on a target of precision h, so the two
  differ only in ULA's inflated stationary variance (ULA's bias).

:func:`run_metropolis_pair` runs K pairs (one chain on D, one on D') that share their start, the
proposal noise z and the acceptance uniform u at every step (synchronous coupling), and records
the positions at the requested steps. The coupling does not matter for the lower bounds built
from these samples (:func:`dpjax.estimators.epsilon_lower_bound` allows any dependence between
the two sides); it makes the pair's difference small where the kernels agree.

Randomness: pair k's step t uses ``fold_in(fold_in(key(seed), k), t)``; its start (for a
callable ``init``) uses ``fold_in(fold_in(key(seed), k), INIT)`` with INIT = 2**31 - 1.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Callable, NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np

from ... import _validate
from ...data import NeighbouringPair
from ...models.base import Model

__all__ = ["MALA", "ExactAR1", "mala", "exact_ar1", "MetropolisPairResult", "run_metropolis_pair", "mala_step", "ar1_step"]

_INIT_STREAM = 2**31 - 1


@dataclasses.dataclass(frozen=True)
class MALA:
    """Metropolis-adjusted Langevin with step size h (proposal x - h grad U + sqrt(2h) z)."""

    step_size: float
    name: str = "mala"

    def __post_init__(self):
        _validate.positive("step_size", self.step_size)

    def describe(self) -> dict:
        return {"kernel": self.name, "step_size": float(self.step_size)}


@dataclasses.dataclass(frozen=True)
class ExactAR1:
    """x' = m_D + rho (x - m_D) + sqrt(1 - rho^2) S_D^{1/2} z: leaves N(m_D, S_D) invariant.

    Needs a Gaussian posterior: the model must be a :class:`~dpjax.models.quadratic.QuadraticModel`.
    """

    rho: float
    name: str = "exact-ar1"

    def __post_init__(self):
        r = float(self.rho)
        if not (-1.0 < r < 1.0):
            raise ValueError(f"rho={self.rho!r} violates -1 < rho < 1 (the AR(1) kernel must mix)")

    def describe(self) -> dict:
        return {"kernel": self.name, "rho": float(self.rho)}


def mala(step_size: float) -> MALA:
    """A MALA kernel (pi_D-invariant for every step size)."""
    return MALA(step_size)


def exact_ar1(rho: float) -> ExactAR1:
    """The exact AR(1) kernel for a Gaussian posterior (pi_D-invariant for every |rho| < 1)."""
    return ExactAR1(rho)


def mala_step(potential: Callable, step_size, x, z, u):
    """One MALA step from x with proposal noise z (d,) and uniform u; returns (x', accepted)."""
    h = step_size
    value_and_grad = jax.value_and_grad(potential)
    ux, gx = value_and_grad(x)
    y = x - h * gx + jnp.sqrt(2.0 * h) * z
    uy, gy = value_and_grad(y)
    log_q_forward = -jnp.sum((y - x + h * gx) ** 2) / (4.0 * h)
    log_q_backward = -jnp.sum((x - y + h * gy) ** 2) / (4.0 * h)
    log_alpha = ux - uy + log_q_backward - log_q_forward
    accept = jnp.log(u) < log_alpha  # u in (0, 1): log u is finite
    return jnp.where(accept, y, x), accept


def ar1_step(mean, chol, rho, x, z):
    """One exact AR(1) step toward N(mean, chol chol^T)."""
    return mean + rho * (x - mean) + jnp.sqrt(1.0 - rho * rho) * (chol @ z)


class MetropolisPairResult(NamedTuple):
    """What :func:`run_metropolis_pair` records (host numpy float64 arrays).

    steps: (R,) recorded step counts (0 = the shared start).
    positions / neighbour_positions: (R, K, d) the chains on D / D' after t steps.
    acceptance / neighbour_acceptance: (K,) each chain's acceptance rate over the run (1 for AR(1)).
    path_mean / neighbour_path_mean: (K, d) each chain's average (1/N) sum_{n=1}^N x_n over the
        whole run (the Monte Carlo estimator of paper 001 eq. 7 with f(x) = x; zeros if N = 0).
    finite: (K,) True where both chains stayed finite; num_nonfinite: pairs where not.
    config: the run's description and timing.
    """

    steps: np.ndarray
    positions: np.ndarray
    neighbour_positions: np.ndarray
    acceptance: np.ndarray
    neighbour_acceptance: np.ndarray
    path_mean: np.ndarray
    neighbour_path_mean: np.ndarray
    finite: np.ndarray
    num_nonfinite: int
    config: dict


def _gaussian_target(model: Model, dataset):
    from ...models.quadratic import QuadraticModel, gaussian_posterior

    if not isinstance(model, QuadraticModel):
        raise ValueError(f"the exact AR(1) kernel needs a Gaussian posterior: model={type(model).__name__} is not a QuadraticModel")
    mean, cov = gaussian_posterior(model, dataset)
    return np.asarray(mean, np.float64), np.linalg.cholesky(np.asarray(cov, np.float64))


def run_metropolis_pair(
    seed: int,
    model: Model,
    pair: NeighbouringPair,
    kernel: Union[MALA, ExactAR1],
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Optional[Sequence[int]] = None,
    init: Union[None, np.ndarray, Callable[[jax.Array], jax.Array]] = None,
) -> MetropolisPairResult:
    """Run ``num_pairs`` synchronously coupled pairs of a pi-invariant kernel on (D, D').

    The targets are the model's posteriors pi_D ∝ exp(-U_D), pi_D' ∝ exp(-U_D')
    (``model.potential``). ``init``: None (zeros), a position (d,), or a callable
    ``key -> (d,)`` (e.g. a prior draw); the start is shared by the pair. Runs in float64.
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed={seed!r} must be an integer")
    if not isinstance(kernel, (MALA, ExactAR1)):
        raise TypeError(f"kernel={type(kernel).__name__} must be dpjax.samplers.mala.MALA or ExactAR1")
    if not isinstance(pair, NeighbouringPair):
        raise TypeError(f"pair={type(pair).__name__} must be a dpjax.NeighbouringPair")
    num_pairs = _validate.positive_int("num_pairs", num_pairs)
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps={num_steps!r} violates num_steps a non-negative integer")
    num_steps = int(num_steps)
    steps = _validate.record_steps(record_steps, num_steps)
    dim = model.dim
    if init is not None and not callable(init):
        x0 = _validate.finite_array("init", np.asarray(init, dtype=np.float64))
        if x0.shape != (dim,):
            raise ValueError(f"init has shape {x0.shape}; it must be ({dim},), a callable key -> ({dim},), or None")
    with jax.enable_x64(True):
        return _run(int(seed), model, pair, kernel, num_pairs, num_steps, steps, init)


def _run(seed, model, pair, kernel, num_pairs, num_steps, steps, init):
    dim = model.dim
    dataset, neighbour = pair.dataset, pair.neighbour
    if callable(init):
        shape = jax.eval_shape(init, jax.random.key(0)).shape
        if shape != (dim,):
            raise ValueError(f"init(key) returned shape {shape}; it must return a position of shape ({dim},)")

    @jax.jit
    def setup(ids):
        # one compiled call for the keys and the starts (each eager op would compile on its own)
        pair_keys = jax.vmap(lambda k: jax.random.fold_in(jax.random.key(seed), k))(ids)
        if callable(init):
            x0 = jax.vmap(lambda k: jnp.asarray(init(jax.random.fold_in(k, _INIT_STREAM)), jnp.float64))(pair_keys)
        elif init is None:
            x0 = jnp.zeros((ids.shape[0], dim))
        else:
            x0 = jnp.broadcast_to(jnp.asarray(init, jnp.float64), (ids.shape[0], dim))
        zeros = jnp.zeros(ids.shape[0])
        return pair_keys, (x0, x0, zeros, zeros, jnp.zeros((ids.shape[0], dim)), jnp.zeros((ids.shape[0], dim)))

    pair_keys, state = setup(jnp.arange(num_pairs, dtype=jnp.uint32))

    if isinstance(kernel, MALA):
        h = float(kernel.step_size)
        u_d = lambda x: model.potential(x, dataset)
        u_n = lambda x: model.potential(x, neighbour)

        def step_pair(x, xp, z, u):
            nx, a = mala_step(u_d, h, x, z, u)
            nxp, ap = mala_step(u_n, h, xp, z, u)
            return nx, nxp, a, ap
    else:
        m_d, l_d = _gaussian_target(model, dataset)
        m_n, l_n = _gaussian_target(model, neighbour)
        rho = float(kernel.rho)

        def step_pair(x, xp, z, u):
            true = jnp.asarray(True)
            return ar1_step(m_d, l_d, rho, x, z), ar1_step(m_n, l_n, rho, xp, z), true, true

    def one_pair(key, x, xp, acc, accp, total, totalp, t):
        k = jax.random.fold_in(key, t)
        kz, ku = jax.random.split(k)
        z = jax.random.normal(kz, (dim,), jnp.float64)
        u = jax.random.uniform(ku, (), jnp.float64, minval=jnp.finfo(jnp.float64).tiny, maxval=1.0)
        nx, nxp, a, ap = step_pair(x, xp, z, u)
        return nx, nxp, acc + a, accp + ap, total + nx, totalp + nxp

    batched = jax.vmap(one_pair, in_axes=(0, 0, 0, 0, 0, 0, 0, None))

    @jax.jit
    def advance(state, start, stop):
        def body(t, s):
            return batched(pair_keys, *s, t)

        return jax.lax.fori_loop(start, stop, body, state)

    t0 = time.perf_counter()
    positions = np.empty((len(steps), num_pairs, dim))
    neighbour_positions = np.empty_like(positions)
    current = 0
    for r, target in enumerate(steps):
        if target > current:
            state = advance(state, current, int(target))
            current = int(target)
        positions[r] = np.asarray(state[0])
        neighbour_positions[r] = np.asarray(state[1])
    if current < num_steps:
        state = advance(state, current, num_steps)
    x, xp, acc, accp, total, totalp = (np.asarray(s) for s in state)
    finite = np.all(np.isfinite(x), axis=1) & np.all(np.isfinite(xp), axis=1)
    denom = max(num_steps, 1)
    config = {
        "seed": seed,
        "model": getattr(model, "name", "model"),
        "dim": dim,
        "kernel": kernel.describe(),
        "num_pairs": num_pairs,
        "num_steps": num_steps,
        "differing_index": pair.index,
        "run_seconds": time.perf_counter() - t0,
    }
    return MetropolisPairResult(
        steps, positions, neighbour_positions, acc / denom, accp / denom, total / denom, totalp / denom, finite, int(num_pairs - finite.sum()), config
    )
