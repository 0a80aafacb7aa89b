"""Preconditioned MALA for many posteriors at once, with convergence diagnostics.

Used to draw the posterior samples that paper 004's GLM mechanisms release (one sample of a
tempered or sharpened posterior): the utility experiments need thousands of draws from dozens
of log-concave posteriors, so the chains are vmapped over chains and over targets.

Metropolis-adjusted Langevin (Roberts & Tweedie 1996) with a fixed preconditioner A = L L^T:

    y = x + (h/2) A grad log pi(x) + sqrt(h) L xi,     accept with prob min(1, r),
    log r = log pi(y) - log pi(x) + log q(x | y) - log q(y | x),  q(. | x) = N(x + (h/2) A g_x, h A).

With u = L^-1 (y - x) = sqrt(h) xi + (h/2) L^T g_x, the proposal terms need no triangular solve:
log q(y|x) = -h |xi|^2 / (2h) and log q(x|y) = -|u + (h/2) L^T g_y|^2 / (2h) (common constants
cancel). The log density may be -inf (a truncated target: proposals outside are rejected).
The step size is tuned during warm-up by dual averaging (Hoffman & Gelman 2014, §3.2) on the
mean acceptance probability of a target's chains, then frozen, so the sampling phase is an
exact MH chain whatever the warm-up did.

Diagnostics (:func:`chain_diagnostics`) are numpyro's split R-hat and effective sample size on
the retained draws, per coordinate and for any scalar summaries the caller adds.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ... import _validate as V

__all__ = ["MalaResult", "mala_sample", "chain_diagnostics", "ChainDiagnostics"]

TARGET_ACCEPTANCE = 0.574  # optimal for MALA in high dimension (Roberts & Rosenthal 1998)


class MalaResult(NamedTuple):
    """draws: (P, K, S, d) retained draws (every ``thin``-th step after warm-up);
    step_size: (P,) the frozen step sizes; acceptance: (P,) mean acceptance probability in the
    sampling phase; warmup_acceptance: (P,) the same over the second half of the last warm-up
    window; preconditioner_chol: (P, d, d) the factor used in the sampling phase."""

    draws: np.ndarray
    step_size: np.ndarray
    acceptance: np.ndarray
    warmup_acceptance: np.ndarray
    preconditioner_chol: np.ndarray


def _mala_step(log_density, params, chol, x, lp, grad, key, h):
    """One preconditioned MALA step for K chains of one target (x: (K, d)); ``log_density``
    takes (theta, params)."""
    xi = jax.random.normal(key[0], x.shape, x.dtype)
    lt_g = grad @ chol  # rows: L^T g
    u = jnp.sqrt(h) * xi + 0.5 * h * lt_g
    y = x + u @ chol.T
    lp_y, grad_y = jax.vmap(jax.value_and_grad(log_density), in_axes=(0, None))(y, params)
    back = u + 0.5 * h * (grad_y @ chol)
    log_q_fwd = -0.5 * jnp.sum(xi * xi, axis=-1)
    log_q_bwd = -0.5 * jnp.sum(back * back, axis=-1) / h
    log_r = lp_y - lp + log_q_bwd - log_q_fwd
    log_r = jnp.where(jnp.isfinite(lp_y), log_r, -jnp.inf)
    accept_prob = jnp.exp(jnp.minimum(log_r, 0.0))
    accept = jax.random.uniform(key[1], lp.shape, x.dtype) < accept_prob
    x = jnp.where(accept[:, None], y, x)
    lp = jnp.where(accept, lp_y, lp)
    grad = jnp.where(accept[:, None], grad_y, grad)
    return x, lp, grad, accept_prob


_DA_GAMMA, _DA_T0, _DA_KAPPA = 0.05, 10.0, 0.75  # dual averaging constants (Hoffman & Gelman 2014, §3.2.1)


class _Carry(NamedTuple):
    x: jax.Array  # (K, d)
    lp: jax.Array  # (K,)
    grad: jax.Array  # (K, d)
    chol: jax.Array  # (d, d)
    log_h: jax.Array  # current log step (warm-up)
    log_h_bar: jax.Array  # averaged log step: used after warm-up
    mu: jax.Array  # dual-averaging shrinkage point
    h_stat: jax.Array  # dual-averaging statistic
    da_iter: jax.Array  # dual-averaging iteration within the current window
    sum_x: jax.Array  # (d,) positions pooled over chains, for the covariance adaptation
    sum_xx: jax.Array  # (d, d)
    count: jax.Array
    acc_warm: jax.Array
    acc_sample: jax.Array


def _one_target(log_density, key, params, init, chol, num_warmup, num_samples, thin, initial_step, target_accept, adapt_preconditioner):
    """All steps of one target in one scan (one copy of the step in the compiled program):
    blocks of ``thin`` steps, the last position of each block recorded. Warm-up (rounded up to a
    multiple of ``thin``) tunes log h by dual averaging; with ``adapt_preconditioner`` it runs in
    two windows: the pooled covariance of the chains' positions over the second half of window 1
    (regularised towards a small multiple of I, as in Stan's windowed adaptation) becomes the
    preconditioner of window 2, which restarts the step tuning. Afterwards h and the
    preconditioner are frozen."""
    dtype = init.dtype
    d = init.shape[-1]
    warm_blocks = -(-num_warmup // thin)
    warm = warm_blocks * thin
    w1 = (warm // 2) if adapt_preconditioner else warm  # first step of window 2
    collect_from = w1 // 2
    initial_step = jnp.asarray(initial_step, dtype)
    lp, grad = jax.vmap(jax.value_and_grad(log_density), in_axes=(0, None))(init, params)
    zero = jnp.zeros((), dtype)
    carry = _Carry(init, lp, grad, jnp.asarray(chol, dtype), jnp.log(initial_step), jnp.log(initial_step), jnp.log(10.0 * initial_step),
                   zero, zero, jnp.zeros(d, dtype), jnp.zeros((d, d), dtype), zero, zero, zero)

    def step(c: _Carry, t):
        in_warmup = t < warm
        if adapt_preconditioner:
            # entering window 2: the adapted preconditioner, and the step tuning restarts
            n = jnp.maximum(c.count, 2.0)
            mean = c.sum_x / n
            cov = (c.sum_xx - n * jnp.outer(mean, mean)) / (n - 1.0)
            cov = (n / (n + 5.0)) * cov + (5.0 / (n + 5.0)) * 1e-3 * jnp.mean(jnp.diag(cov)) * jnp.eye(d, dtype=dtype)
            switch = t == w1
            c = c._replace(
                chol=jnp.where(switch, jnp.linalg.cholesky(0.5 * (cov + cov.T)), c.chol),
                mu=jnp.where(switch, jnp.log(10.0 * jnp.exp(c.log_h_bar)), c.mu),
                log_h=jnp.where(switch, c.log_h_bar, c.log_h),
                h_stat=jnp.where(switch, 0.0, c.h_stat),
                da_iter=jnp.where(switch, 0.0, c.da_iter),
            )
        h = jnp.exp(jnp.where(in_warmup, c.log_h, c.log_h_bar))
        k = jax.random.split(jax.random.fold_in(key, t), 2)
        x, lp, grad, a = _mala_step(log_density, params, c.chol, c.x, c.lp, c.grad, k, h)
        mean_a = jnp.mean(a)
        # dual averaging (warm-up only)
        m = c.da_iter + 1.0
        h_stat = (1.0 - 1.0 / (m + _DA_T0)) * c.h_stat + (target_accept - mean_a) / (m + _DA_T0)
        log_h = c.mu - jnp.sqrt(m) / _DA_GAMMA * h_stat
        eta = m ** (-_DA_KAPPA)
        log_h_bar = eta * log_h + (1.0 - eta) * c.log_h_bar
        collect = (t >= collect_from) & (t < w1) if adapt_preconditioner else jnp.zeros((), bool)
        sel = lambda new, old: jnp.where(in_warmup, new, old)
        return _Carry(
            x, lp, grad, c.chol,
            sel(log_h, c.log_h), sel(log_h_bar, c.log_h_bar), c.mu, sel(h_stat, c.h_stat), sel(m, c.da_iter),
            c.sum_x + jnp.where(collect, jnp.sum(x, axis=0), 0.0),
            c.sum_xx + jnp.where(collect, x.T @ x, 0.0),
            c.count + jnp.where(collect, x.shape[0], 0.0),
            c.acc_warm + jnp.where(in_warmup & (t >= (w1 + warm) // 2), mean_a, 0.0),
            c.acc_sample + jnp.where(in_warmup, 0.0, mean_a),
        )

    def block(c, b):
        c, _ = jax.lax.scan(lambda cc, j: (step(cc, b * thin + j), None), c, jnp.arange(thin))
        return c, c.x

    c, recorded = jax.lax.scan(block, carry, jnp.arange(warm_blocks + num_samples))
    draws = jnp.moveaxis(recorded[warm_blocks:], 0, 1)
    warm_window = max(warm - (w1 + warm) // 2, 1)
    return draws, jnp.exp(c.log_h_bar), c.acc_sample / (num_samples * thin), c.acc_warm / warm_window, c.chol


@functools.partial(jax.jit, static_argnames=("log_density", "num_warmup", "num_samples", "thin", "target_accept", "adapt_preconditioner"))
def _run_targets(log_density, keys, params, data, init, chol, initial_step, *, num_warmup, num_samples, thin, target_accept, adapt_preconditioner):
    # jitted once per (log_density, shapes, sizes): repeated calls (data splits) reuse the compilation
    def one(key, prm, x0, L):
        density = lambda theta, p: log_density(theta, p, data)
        return _one_target(density, key, prm, x0, L, num_warmup, num_samples, thin, initial_step, target_accept, adapt_preconditioner)

    return jax.vmap(one)(keys, params, init, chol)


def mala_sample(
    seed: int,
    log_density: Callable[..., jax.Array],
    params: Any,
    init,
    preconditioner_chol,
    *,
    data: Any = None,
    num_warmup: int = 500,
    num_samples: int = 200,
    thin: int = 5,
    initial_step: float = 0.5,
    target_accept: float = TARGET_ACCEPTANCE,
    adapt_preconditioner: bool = True,
    dtype=jnp.float64,
) -> MalaResult:
    """Run K MALA chains on each of P targets.

    log_density(theta (d,), params_p, data) -> scalar log pi_p(theta) (up to a constant; -inf
        allowed). Pass a module-level function (it is a static argument of the compiled
        runner, so the same function and shapes reuse one compilation).
    params: a pytree whose leaves have a leading axis P (one slice per target).
    data: a pytree shared by every target (e.g. the design matrix), passed to log_density.
    init: (P, K, d) starting points (must have finite log density).
    preconditioner_chol: (P, d, d) lower-triangular L with proposal covariance h L L^T (e.g. the
        Cholesky factor of the inverse Hessian at the mode).
    Keeps ``num_samples`` draws per chain, one every ``thin`` steps after ``num_warmup`` steps
    (rounded up to a multiple of ``thin``).
    adapt_preconditioner: in the warm-up's second half use the pooled covariance of the
        chains' positions from the first half (helps where the given preconditioner is off,
        e.g. a posterior truncated to a ball); the sampling phase keeps it fixed.
    """
    init = np.asarray(init)
    if init.ndim != 3:
        raise ValueError(f"init has shape {init.shape}; it must be (P targets, K chains, d)")
    p, k, d = init.shape
    chol = np.asarray(preconditioner_chol)
    if chol.shape != (p, d, d):
        raise ValueError(f"preconditioner_chol has shape {chol.shape}; it must be {(p, d, d)}")
    num_warmup = int(num_warmup)
    if num_warmup < 0:
        raise ValueError(f"num_warmup={num_warmup} violates num_warmup >= 0")
    num_samples = V.positive_int("num_samples", num_samples)
    thin = V.positive_int("thin", thin)
    V.positive("initial_step", initial_step)
    V.in_range("target_accept", target_accept, 0.0, 1.0, low_open=True, high_open=True)
    dtype = jnp.dtype(dtype)
    with jax.enable_x64(dtype == jnp.dtype(jnp.float64)):
        keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.key(int(seed)), i))(jnp.arange(p))
        cast = lambda a: jnp.asarray(a, dtype) if jnp.issubdtype(jnp.asarray(a).dtype, jnp.floating) else jnp.asarray(a)
        draws, h, acc, acc_warm, chol = _run_targets(
            log_density, keys, jax.tree.map(cast, params), jax.tree.map(cast, data), cast(init), cast(chol), cast(initial_step),
            num_warmup=num_warmup, num_samples=num_samples, thin=thin, target_accept=float(target_accept),
            adapt_preconditioner=bool(adapt_preconditioner),
        )
        return MalaResult(np.asarray(draws), np.asarray(h), np.asarray(acc), np.asarray(acc_warm), np.asarray(chol))


class ChainDiagnostics(NamedTuple):
    """max split R-hat and min effective sample size over coordinates and summaries, per target."""

    max_rhat: np.ndarray  # (P,)
    min_ess: np.ndarray  # (P,)


def chain_diagnostics(draws, summaries=None) -> ChainDiagnostics:
    """numpyro's split Gelman-Rubin R-hat and effective sample size for draws (P, K, S, d),
    over every coordinate and every scalar summary in ``summaries`` (P, K, S, m)."""
    from numpyro.diagnostics import effective_sample_size, split_gelman_rubin

    draws = np.asarray(draws, dtype=np.float64)
    if draws.ndim != 4:
        raise ValueError(f"draws has shape {draws.shape}; it must be (P, K, S, d)")
    if draws.shape[1] < 2 or draws.shape[2] < 4:
        raise ValueError(f"draws has shape {draws.shape}: R-hat needs >= 2 chains and >= 4 draws per chain")
    if summaries is not None:
        draws = np.concatenate([draws, np.asarray(summaries, dtype=np.float64)], axis=-1)
    rhat = np.array([np.nanmax(split_gelman_rubin(t)) for t in draws])
    ess = np.array([np.nanmin(effective_sample_size(t)) for t in draws])
    return ChainDiagnostics(rhat, ess)

