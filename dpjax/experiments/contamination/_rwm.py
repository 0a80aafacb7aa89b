"""Random-walk Metropolis on paper 003's contaminated mean posterior (Table 1's model), and the
same posterior by quadrature to check it.

The posterior is pi(theta | x) ∝ pi_0(theta) prod_i k_p(x_i; theta) with k_p = (1 - p) f + p g
(:func:`dpjax.models.contamination.truncated_normal_mean_contamination`). Paper 003 §4.2 samples
it "through an ordinary random-walk Metropolis algorithm" without giving the chain; dpjax's
chain (a choice, reported by the experiment):

* start at the median of the (contaminated) records, within about one posterior sd of the
  posterior's centre, so the chain needs little burn-in; the output is the chain's last state;
* Gaussian proposals of sd 2.4 sigma / sqrt(n (1 - p)), the optimal 1-D RWM scale (Gelman,
  Roberts & Gilks 1996) for a posterior of sd about sigma / sqrt(n (1 - p)) (the Fisher
  information of the uncontaminated records alone); this scale does not depend on the data.

log g of each record is computed once per chain (it does not depend on theta); a step costs
one evaluation of the n mixture terms at the proposal. Everything vmaps over chains.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from ...models.contamination import log_mix


def contaminate_t(key, x, p, *, location: float, scale: float, df: int, low: float, high: float):
    """Replace each record with probability p by a draw from location + scale t_df truncated to
    [low, high] (Table 1's g), with t_df = Z_0 / sqrt(sum_{j=1..df} Z_j^2 / df) from df + 1
    standard normals (an integer df: a chi-square as a sum of squares, so no gamma rejection
    loop, which under vmap makes every lane wait for the slowest). A draw outside [low, high]
    is redrawn once, then clipped, as in the model's own ``sample_g`` (a t_5 at scale 8 leaves
    [-270, 330] with probability ~1e-7, so clipping happens with probability ~1e-14)."""
    k_mask, k1, k2 = jax.random.split(key, 3)

    def draw(k):
        z = jax.random.normal(k, (df + 1,) + x.shape, dtype=x.dtype)
        return location + scale * z[0] / jnp.sqrt(jnp.sum(z[1:] ** 2, axis=0) / df)

    g = draw(k1)
    g = jnp.where((g < low) | (g > high), draw(k2), g)
    g = jnp.clip(g, low, high)
    return jnp.where(jax.random.bernoulli(k_mask, p, x.shape), g, x)


def log_posterior(model, theta, x, log_g_x, p, mask=None):
    """log pi_0(theta) + sum_i log k_p(x_i; theta) for a scalar theta (unnormalised); ``mask``
    marks the records (the rest is padding)."""
    th = jnp.reshape(theta, (1,))
    log_f = model.log_f(x, th) - model.log_normaliser(th)
    terms = log_mix(log_f, log_g_x, p)
    return model.log_prior(th) + jnp.sum(terms if mask is None else jnp.where(mask, terms, 0.0))


def _mask(x, num_valid):
    return None if num_valid is None else jnp.arange(x.shape[0]) < num_valid


def masked_median(x, num_valid=None):
    """The median of the first ``num_valid`` entries of x (all of them when None)."""
    if num_valid is None:
        return jnp.median(x)
    s = jnp.sort(jnp.where(jnp.arange(x.shape[0]) < num_valid, x, jnp.inf))
    return 0.5 * (s[(num_valid - 1) // 2] + s[num_valid // 2])


def proposal_sd(sigma: float, n: int, p: float) -> float:
    """2.4 sigma / sqrt(n (1 - p)): 2.4 posterior sds, the optimal 1-D random-walk scale."""
    return 2.4 * sigma / float(np.sqrt(n * (1.0 - p)))


def rwm_chain(key, model, x, p, *, step, num_steps: int, record_steps=(), num_valid=None):
    """One random-walk Metropolis chain on the contaminated posterior given records ``x`` (n,),
    started at median(x). Returns (last state, acceptance rate, states at ``record_steps``).
    ``num_valid``: only the first ``num_valid`` entries of x are records (padding after)."""
    log_g_x = model.log_g(x)
    mask = _mask(x, num_valid)
    theta0 = masked_median(x, num_valid)
    lp0 = log_posterior(model, theta0, x, log_g_x, p, mask)
    record = jnp.asarray(record_steps, dtype=jnp.int32)

    def step_fn(carry, inputs):
        theta, lp, accepted, kept = carry
        t, k = inputs
        k_prop, k_acc = jax.random.split(k)
        proposal = theta + step * jax.random.normal(k_prop, dtype=x.dtype)
        lp_prop = log_posterior(model, proposal, x, log_g_x, p, mask)
        accept = jnp.log(jax.random.uniform(k_acc, dtype=x.dtype)) < lp_prop - lp
        theta = jnp.where(accept, proposal, theta)
        lp = jnp.where(accept, lp_prop, lp)
        kept = jnp.where(record == t + 1, theta, kept)
        return (theta, lp, accepted + accept, kept), None

    kept0 = jnp.zeros(record.shape, x.dtype)
    steps = jnp.arange(num_steps, dtype=jnp.int32)
    (theta, _, accepted, kept), _ = jax.lax.scan(step_fn, (theta0, lp0, jnp.zeros((), jnp.int32), kept0),
                                                 (steps, jax.random.split(key, num_steps)))
    return theta, accepted / num_steps, kept


def posterior_by_quadrature(model, x, p, *, centre, half_width, num_points: int = 4001, num_valid=None):
    """The contaminated posterior on a grid over centre +- half_width (trapezoid rule): returns
    (grid, cdf, mean, sd). The grid must cover the posterior's mass; the caller checks that the
    density at both ends is negligible (returned as ``edge_density`` relative to the peak)."""
    grid = jnp.linspace(centre - half_width, centre + half_width, num_points, dtype=x.dtype)
    log_g_x = model.log_g(x)
    mask = _mask(x, num_valid)
    lp = jax.lax.map(lambda t: log_posterior(model, t, x, log_g_x, p, mask), grid)
    dens = jnp.exp(lp - jnp.max(lp))
    h = grid[1] - grid[0]
    cells = 0.5 * (dens[1:] + dens[:-1]) * h
    total = jnp.sum(cells)
    cdf = jnp.concatenate([jnp.zeros(1, x.dtype), jnp.cumsum(cells)]) / total
    mean = jnp.sum(0.5 * (grid[1:] * dens[1:] + grid[:-1] * dens[:-1]) * h) / total
    dev2 = (grid - mean) ** 2 * dens  # centred: no cancellation between E theta^2 and mean^2
    var = jnp.sum(0.5 * (dev2[1:] + dev2[:-1]) * h) / total
    edge = jnp.maximum(dens[0], dens[-1])
    return grid, cdf, mean, jnp.sqrt(var), edge


def ks_against_cdf(samples, grid, cdf) -> tuple[float, float]:
    """Kolmogorov-Smirnov statistic of ``samples`` against a CDF tabulated on ``grid`` (linear
    interpolation between grid points), and its asymptotic p-value (scipy's kstwo)."""
    from scipy import stats

    s = np.sort(np.asarray(samples, dtype=float))
    m = s.shape[0]
    f = np.interp(s, np.asarray(grid), np.asarray(cdf))
    d = max(np.max(np.arange(1, m + 1) / m - f), np.max(f - np.arange(m) / m))
    return float(d), float(stats.kstwo.sf(d, m))
