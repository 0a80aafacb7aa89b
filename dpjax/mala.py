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

from . import _validate as V

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


def _dual_averaging_window(log_density, key, params, chol, state, num_steps, first_step, initial_step, target_accept, record_from):
    """num_steps MALA steps tuning log h by dual averaging (Hoffman & Gelman 2014, eqs. 5-6, their
    constants); returns (state, averaged h, mean acceptance over the window's second half,
    positions of steps >= record_from (num_steps - record_from, K, d))."""
    x, lp, grad = state
    dtype = x.dtype
    mu = jnp.log(10.0 * initial_step)
    gamma, t0, kappa = 0.05, 10.0, 0.75

    def warm(carry, t):
        x, lp, grad, log_h, log_h_bar, h_bar_stat, acc_sum = carry
        k = jax.random.split(jax.random.fold_in(key, first_step + t), 2)
        x, lp, grad, a = _mala_step(log_density, params, chol, x, lp, grad, k, jnp.exp(log_h))
        mean_a = jnp.mean(a)
        m = t.astype(dtype) + 1.0
        h_bar_stat = (1.0 - 1.0 / (m + t0)) * h_bar_stat + (target_accept - mean_a) / (m + t0)
        log_h = mu - jnp.sqrt(m) / gamma * h_bar_stat
        eta = m ** (-kappa)
        log_h_bar = eta * log_h + (1.0 - eta) * log_h_bar
        acc_sum = acc_sum + jnp.where(t >= num_steps // 2, mean_a, 0.0)
        return (x, lp, grad, log_h, log_h_bar, h_bar_stat, acc_sum), x

    zero = jnp.zeros((), dtype)
    carry0 = (x, lp, grad, jnp.log(initial_step), jnp.log(initial_step), zero, zero)
    (x, lp, grad, _, log_h_bar, _, acc), trace = jax.lax.scan(warm, carry0, jnp.arange(num_steps))
    return (x, lp, grad), jnp.exp(log_h_bar), acc / max(num_steps - num_steps // 2, 1), trace[record_from:]


def _one_target(log_density, key, params, init, chol, num_warmup, num_samples, thin, initial_step, target_accept, adapt_preconditioner):
    initial_step = jnp.asarray(initial_step, init.dtype)
    lp, grad = jax.vmap(jax.value_and_grad(log_density), in_axes=(0, None))(init, params)
    state = (init, lp, grad)
    h, acc_warm = initial_step, jnp.zeros((), init.dtype)
    if num_warmup > 0 and not adapt_preconditioner:
        state, h, acc_warm, _ = _dual_averaging_window(log_density, key, params, chol, state, num_warmup, 0, initial_step, target_accept, num_warmup)
    elif num_warmup > 0:
        # window 1 with the given preconditioner; then the pooled covariance of its last half's
        # positions over all chains (regularised towards a small multiple of I as in Stan's
        # windowed adaptation) becomes the preconditioner of window 2, which retunes h.
        w1 = num_warmup // 2
        state, h, _, trace = _dual_averaging_window(log_density, key, params, chol, state, w1, 0, initial_step, target_accept, w1 // 2)
        pts = trace.reshape(-1, init.shape[-1])
        n_pts = pts.shape[0]
        cov = jnp.cov(pts, rowvar=False).reshape(init.shape[-1], init.shape[-1])
        scale = jnp.mean(jnp.diag(cov))
        cov = (n_pts / (n_pts + 5.0)) * cov + (5.0 / (n_pts + 5.0)) * 1e-3 * scale * jnp.eye(init.shape[-1])
        chol = jnp.linalg.cholesky(cov)
        state, h, acc_warm, _ = _dual_averaging_window(log_density, key, params, chol, state, num_warmup - w1, w1, jnp.asarray(0.5, init.dtype),
                                                      target_accept, num_warmup - w1)
    x, lp, grad = state
    zero = jnp.zeros((), init.dtype)

    def sample(carry, t):
        x, lp, grad, acc_sum = carry

        def inner(c, j):
            x, lp, grad, acc_sum = c
            k = jax.random.split(jax.random.fold_in(key, num_warmup + t * thin + j), 2)
            x, lp, grad, a = _mala_step(log_density, params, chol, x, lp, grad, k, h)
            return (x, lp, grad, acc_sum + jnp.mean(a)), None

        (x, lp, grad, acc_sum), _ = jax.lax.scan(inner, (x, lp, grad, acc_sum), jnp.arange(thin))
        return (x, lp, grad, acc_sum), x

    (_, _, _, acc), draws = jax.lax.scan(sample, (x, lp, grad, zero), jnp.arange(num_samples))
    return jnp.moveaxis(draws, 0, 1), h, acc / (num_samples * thin), acc_warm, chol


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
    Keeps ``num_samples`` draws per chain, one every ``thin`` steps after ``num_warmup`` steps.
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

