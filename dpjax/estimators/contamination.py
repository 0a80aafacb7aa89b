"""Paper 003's Algorithm 1: a numerical estimate of eps_n for posterior sampling under
Huber contamination, as a random-DP guarantee (it holds with probability q over the data).

For each of K simulated datasets X (x_i ~ f(.; theta*), each replaced with probability p by a
draw from g):

1. Laplace approximation of the contaminated posterior pi_n(. | X): the MAP by damped Newton
   and the Hessian H of U = -log prior - sum_i log k_p(x_i; .).
2. m particles theta_j = MAP + s H^{-1/2} z_j (z_j standard normal) with self-normalised
   log-space importance weights w_j ∝ pi_n(theta_j | X) / N(theta_j; MAP, s^2 H^{-1}).
   The paper samples the Laplace approximation itself (s = 1); a wider proposal (default
   s = 2) puts particles in the tail, which is what resolving delta_n = 1/(10 n) needs: with
   s = 1 the tail beyond the (1 - delta_n) quantile holds ~m delta_n particles, i.e. none unless
   m >> 10 n. The weights keep the estimate of the same tail probability unbiased (up to
   self-normalisation) for any s.
3. The smallest phi_n with importance weight outside the L_inf box
   A_n = {||theta - theta_hat||_inf <= phi_n} below delta_n (theta_hat = the MAP by default).
4. log eta_n = sup_x sup_{A_n} log d(x; theta) - inf_z inf_{A_n} log d(z; theta),
   d(x; theta) = k_p(x; theta) / k_p(x; theta*).
5. Reweight to the posterior on the first n - 1 records (divide by k_p(x_n; theta_j)) and take
   a = sup_x sum_j w~_j d(x; theta_j), b = inf_z sum_j w~_j d(z; theta_j).
6. eps_hat = log eta_n + log a - log b; report the q-th quantile over the K datasets.

Sup/inf over records and over the box: a grid, then golden-section refinement. The record
grid spans the model's truncated support [low, high] (compact, so a grid covers it); every
function maximised is smooth in x with features no narrower than f's scale (sigma = 8 for
Table 1), so a grid with spacing << sigma brackets the global optimum in one cell, and the
golden-section search inside the neighbouring cells removes the O(h^2) grid error. The box
A_n is gridded per axis (vertices included) and refined the same way. The refinement can
only improve on the grid value (it starts from it), so sup estimates never decrease.
Vector records (a regression's (response, covariates), paper 003 §4.3) are searched over the
product grid of the model's record space (discrete levels x equally spaced continuous
values), then refined coordinate-wise by golden section over the continuous components and
theta; a user-supplied vector grid without bounds is searched as given.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from .. import _validate as V
from .statistics import check_confidence
from .._x64 import float64
from ..models.contamination import ContaminationModel, check_contamination_rate
from .._result_methods import drawn_by, printed_by

_GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0
BOX_CENTRES = ("map", "theta_star")
VECTOR_STARTS = 4  # local searches per sup/inf over vector records, from the best grid points


_TINY = float(np.finfo(np.float64).tiny)
_HUGE = float(np.finfo(np.float64).max)


def _is_positive_normal(k):
    """k a positive, normal, finite float (False for 0, subnormals, inf and NaN)."""
    return (k >= _TINY) & (k <= _HUGE)


def _records_log_lik(model: ContaminationModel, records, valid, theta, p):
    """sum_i log k_p(x_i; theta) over the ``valid`` records. With the model's closed-form
    ``mixture_density`` one log per record; a value that is not a positive normal float
    (an overflow far outside the data) makes the sum NaN, never a wrong finite number.
    Without it, log f and log g mixed in log space (log g and the normaliser once per call)."""
    from ..models.contamination import log_mix

    if model.mixture_density is not None:
        k = jax.vmap(model.mixture_density, (0, None, None))(records, theta, p)
        bad = jnp.any(valid & ~_is_positive_normal(k))
        total = jnp.sum(jnp.where(valid, jnp.log(jnp.where(valid, k, 1.0)), 0.0))
        return jnp.where(bad, jnp.nan, total)
    log_f = jax.vmap(model.log_f, (0, None))(records, theta) - model.log_normaliser(theta)
    log_g = jax.vmap(model.log_g)(records)
    return jnp.sum(jnp.where(valid, log_mix(log_f, log_g, p), 0.0))


# --- pieces that are tested on their own -------------------------------------------------------
def _value_grad_hess(f, x):
    """(f(x), grad f(x), hess f(x)) of a scalar f from one forward-over-reverse trace of f.
    ``f(x), jax.grad(f)(x), jax.hessian(f)(x)`` traces f three times (value, reverse pass,
    forward-over-reverse), and XLA compiles each copy: where f is an n-term sum these copies
    are the bulk of the program. The value and gradient are the primal outputs of the same
    forward-mode pass, the same operations as the separate calls."""

    def grad_and_value(y):
        value, grad = jax.value_and_grad(f)(y)
        return grad, (value, grad)

    hess, (value, grad) = jax.jacfwd(grad_and_value, has_aux=True)(x)
    return value, grad, hess


def smallest_box_radius(distances: jax.Array, log_weights: jax.Array, log_delta: float) -> tuple[jax.Array, jax.Array]:
    """Smallest phi among the particles' distances with weight{distance > phi} < delta.

    ``log_weights`` are normalised log weights. Returns (phi, number of particles outside the
    box of radius phi). The outside weight is a non-increasing step function of phi that only
    drops at a particle's distance, so the minimal phi is one of the distances. Tail sums are
    reverse cumulative logsumexps over the particles sorted by distance (log space, no
    1 - sum cancellation).
    """
    order = jnp.argsort(distances)
    r = distances[order]
    lw = log_weights[order]
    m = r.shape[0]
    # log weight strictly beyond sorted particle j: logsumexp(lw[j+1:])
    rev = jax.lax.cumlogsumexp(lw[::-1])[::-1]
    beyond = jnp.concatenate([rev[1:], jnp.array([-jnp.inf], dtype=rev.dtype)])
    first = jnp.argmax(beyond < log_delta)  # beyond is non-increasing and beyond[m-1] = -inf
    return r[first], m - 1 - first


def _golden_max(fn, lo, hi, iters: int):
    """Golden-section search for the max of fn on [lo, hi] (fixed iterations, one evaluation
    per iteration, vmappable); returns (argmax, max) of the final probes.

    The two initial probes c0, d0 are the loop's first two passes, so fn is traced once (at
    the loop's one call site) instead of twice: XLA compiles every call site of fn."""
    c0 = hi - _GOLDEN * (hi - lo)
    d0 = lo + _GOLDEN * (hi - lo)

    def body(i, state):
        a, b, c, d, fc, fd = state
        left = fc >= fd  # the max is in [a, d]: keep it, c becomes the new right probe
        a2 = jnp.where(left, a, c)
        b2 = jnp.where(left, d, b)
        probe = jnp.where(left, b2 - _GOLDEN * (b2 - a2), a2 + _GOLDEN * (b2 - a2))
        probe = jnp.where(i == 0, c0, jnp.where(i == 1, d0, probe))
        fp = fn(probe)
        c2 = jnp.where(left, probe, d)
        fc2 = jnp.where(left, fp, fd)
        d2 = jnp.where(left, c, probe)
        fd2 = jnp.where(left, fc, fp)
        step = (a2, b2, c2, d2, fc2, fd2)
        # passes 0 and 1 only record f(c0) and f(d0); the search proper starts at pass 2
        start = (a, b, c, d, jnp.where(i == 0, fp, fc), jnp.where(i == 1, fp, fd))
        return tuple(jnp.where(i < 2, s0, s1) for s0, s1 in zip(start, step))

    _, _, c, d, fc, fd = jax.lax.fori_loop(0, iters + 2, body, (lo, hi, c0, d0, jnp.zeros_like(c0), jnp.zeros_like(c0)))
    return jnp.where(fc >= fd, c, d), jnp.maximum(fc, fd)


def _refined_max_1d(fn, grid, values, iters: int):
    """max of a smooth fn over [grid[0], grid[-1]] given its grid ``values``: grid argmax,
    then golden section over the two cells around it; never below the grid maximum."""
    i = jnp.argmax(values)
    lo = grid[jnp.maximum(i - 1, 0)]
    hi = grid[jnp.minimum(i + 1, grid.shape[0] - 1)]
    x_ref, v_ref = _golden_max(fn, lo, hi, iters)
    better = v_ref > values[i]
    return jnp.where(better, x_ref, grid[i]), jnp.where(better, v_ref, values[i])


def _box_grid(centre: jax.Array, phi: jax.Array, per_axis: int) -> jax.Array:
    """Product grid of the L_inf box centre +- phi, per_axis points per axis (vertices included)."""
    d = centre.shape[0]
    unit = jnp.linspace(-1.0, 1.0, per_axis)
    mesh = jnp.stack(jnp.meshgrid(*([unit] * d), indexing="ij"), axis=-1).reshape(-1, d)
    return centre + phi * mesh


def _log_d_table(model, records, thetas, theta_star, p):
    """log d(x; theta) for every (record, theta) pair, theta-only and x-only terms hoisted."""
    norms = jax.vmap(model.log_normaliser)(thetas)
    log_g = jax.vmap(model.log_g)(records)
    log_k_star = jax.vmap(lambda x: model.log_k(x, theta_star, p))(records)
    log_f = jax.vmap(jax.vmap(model.log_f, (None, 0)), (0, None))(records, thetas)
    from ..models.contamination import log_mix

    return log_mix(log_f - norms[None, :], log_g[:, None], p) - log_k_star[:, None]


def _coordinate_ascent(objective, v0, best0, lows, highs, steps, coords: tuple, sweeps: int, iters: int):
    """Coordinate-wise golden-section ascent of ``objective`` from ``v0`` (value ``best0``):
    each coordinate k in ``coords`` in turn is searched over [v_k - step_k, v_k + step_k]
    clipped to [low_k, high_k], for ``sweeps`` rounds; a move is kept only if it improves, so
    the result is never below ``best0``. Returns (argmax, max)."""
    if not coords:
        return v0, best0
    coords_arr = jnp.asarray(coords)

    def sweep(i, state):
        v, best = state
        k = coords_arr[i % len(coords)]
        lo = jnp.maximum(v[k] - steps[k], lows[k])
        hi = jnp.minimum(v[k] + steps[k], highs[k])
        arg, val = _golden_max(lambda t: objective(v.at[k].set(t)), lo, hi, iters)
        better = val > best
        return jnp.where(better, v.at[k].set(arg), v), jnp.maximum(val, best)

    return jax.lax.fori_loop(0, sweeps * len(coords), sweep, (v0, best0))


def _projected_newton(objective, v0, best0, lows, highs, coords: tuple, iters: int = 12, backtracks: int = 30):
    """Polish a local max of a smooth ``objective`` over the box [lows, highs] in the
    coordinates ``coords`` (the rest stay fixed): projected Newton steps with the active
    bounds (at a bound, gradient pointing out) held fixed, the negated Hessian's eigenvalues
    floored (an ascent direction where the objective is not concave) and a halving line
    search of the projected step; a step is kept only if it improves, so the result is never
    below ``best0``. Coordinate sweeps converge only linearly where coordinates interact
    (a mixture over particles in several covariates); this converges quadratically near an
    interior optimum and finds the optimum on a face. Returns the best value."""
    if not coords:
        return best0
    idx = jnp.asarray(coords)
    lo, hi = lows[idx], highs[idx]

    def step(_, state):
        v, best = state
        f = lambda x: objective(v.at[idx].set(x))
        x = v[idx]
        _, g, h = _value_grad_hess(f, x)
        span = hi - lo
        active = ((x <= lo + 1e-12 * span) & (g < 0)) | ((x >= hi - 1e-12 * span) & (g > 0))
        keep = ~active
        neg_h = jnp.where(keep[:, None] & keep[None, :], -h, jnp.eye(x.shape[0]))
        evals, evecs = jnp.linalg.eigh(neg_h)
        floor = 1e-8 * jnp.maximum(jnp.max(jnp.abs(evals)), 1e-300)
        direction = evecs @ ((evecs.T @ jnp.where(keep, g, 0.0)) / jnp.maximum(evals, floor))
        direction = jnp.where(keep, direction, 0.0)

        def halve(bt):
            t, _, j = bt
            t = 0.5 * t
            return t, f(jnp.clip(x + t * direction, lo, hi)), j + 1

        # (t, value, j) = (2, -inf, -1): the first pass is the full step t = 1 (j = 0), then at
        # most ``backtracks`` halvings while the value does not improve; one call site of f
        t, val, _ = jax.lax.while_loop(
            lambda bt: (bt[1] <= best) & (bt[2] < backtracks), halve,
            (jnp.asarray(2.0, x.dtype), jnp.asarray(-jnp.inf, best.dtype), -1))
        better = (val > best) & jnp.isfinite(val)
        new = jnp.where(better, v.at[idx].set(jnp.clip(x + t * direction, lo, hi)), v)
        return new, jnp.where(better, val, best)

    v, best = jax.lax.fori_loop(0, iters, step, (v0, best0))
    return best


def _record_space_arrays(record_grid, record_bounds):
    """(record size R, lows, highs, steps, continuous components) for the refinement: a
    scalar record's grid spacing and ends, or a vector record's ``record_bounds``."""
    if record_grid.ndim == 1:
        return 1, record_grid[:1], record_grid[-1:], (record_grid[1] - record_grid[0])[None], (0,)
    low, high, step = (jnp.asarray(np.asarray(b, dtype=float)) for b in record_bounds)
    return record_grid.shape[1], low, high, step, tuple(k for k, h in enumerate(record_bounds[2]) if h > 0)


def log_eta(model: ContaminationModel, centre, phi, theta_star, p, record_grid, theta_grid_size: int = 17, refine_iters: int = 40,
            record_bounds: tuple | None = None):
    """log eta_n = sup_x sup_{A} log d(x; theta) - inf_z inf_{A} log d(z; theta) over the box
    A = {||theta - centre||_inf <= phi} (paper 003, eq. 15): grid over records x box, then two
    sweeps of coordinate-wise golden-section refinement over (x, theta) around the best grid
    point. Scalar records: ``record_grid`` is an increasing 1-D grid over the support. Vector
    records: ``record_grid`` has shape (G, R) and ``record_bounds`` = (low, high, step) per
    component (:meth:`ContaminationModel.record_space`; only components with step > 0 move),
    the search starts from the ``VECTOR_STARTS`` best grid points and the sweeps are followed
    by projected Newton polishing; without ``record_bounds`` the
    grid alone is used. Models with ``covariates`` (f depends on theta only through w.theta)
    are searched by :func:`_log_eta_index` instead. Search vectors are mapped to records by
    ``model.to_record`` (unbounded responses). Returns (log_eta, log_sup, log_inf)."""
    if model.covariates is not None and record_grid.ndim != 1 and record_bounds is not None:
        return _log_eta_index(model, centre, phi, theta_star, p, record_grid, theta_grid_size, refine_iters, record_bounds)
    thetas = _box_grid(centre, phi, theta_grid_size)
    records = record_grid if record_grid.ndim == 1 else jax.vmap(model.to_record)(record_grid)
    table = _log_d_table(model, records, thetas, theta_star, p)  # (num_x, num_theta)
    if record_grid.ndim != 1 and record_bounds is None:
        return jnp.max(table) - jnp.min(table), jnp.max(table), jnp.min(table)
    d = centre.shape[0]
    size, r_low, r_high, r_step, r_coords = _record_space_arrays(record_grid, record_bounds)
    grid2d = record_grid.reshape(record_grid.shape[0], size)
    ht = 2.0 * phi / (theta_grid_size - 1)
    lows = jnp.concatenate([r_low, centre - phi])
    highs = jnp.concatenate([r_high, centre + phi])
    steps = jnp.concatenate([r_step, jnp.full((d,), ht)])
    coords = r_coords + tuple(range(size, size + d))
    as_record = (lambda v: v[0]) if record_grid.ndim == 1 else (lambda v: v[:size])

    def refine(sign):
        signed = sign * table
        objective = lambda v: sign * model.log_d(model.to_record(as_record(v)), v[size:], theta_star, p)

        def from_start(value, flat):
            ix, it = flat // table.shape[1], flat % table.shape[1]
            v0 = jnp.concatenate([grid2d[ix], thetas[it]])
            v, best = _coordinate_ascent(objective, v0, value, lows, highs, steps, coords, 2, refine_iters)
            if record_grid.ndim == 1:
                return best
            return _projected_newton(objective, v, best, lows, highs, coords)

        # scalar records: the best grid point brackets the optimum (smooth in x on the scale of
        # f); vector records: the best few grid points, against a second mode elsewhere
        starts = 1 if record_grid.ndim == 1 else min(VECTOR_STARTS, signed.size)
        values, flats = jax.lax.top_k(signed.reshape(-1), starts)
        return jnp.max(jax.vmap(from_start)(values, flats))

    best = jax.vmap(refine)(jnp.array([1.0, -1.0]))
    log_sup, log_inf = best[0], -best[1]
    return log_sup - log_inf, log_sup, log_inf


def _index_theta(model: ContaminationModel, record, centre, phi, t):
    """theta = centre + t phi sign(w) (w = the record's covariates): as t runs over [-1, 1],
    w.theta runs over exactly [centre.w - phi ||w||_1, centre.w + phi ||w||_1], the range of
    w.theta over the L_inf box centre +- phi."""
    return centre + t * phi * jnp.sign(model.covariates(record))


def _log_eta_index(model: ContaminationModel, centre, phi, theta_star, p, record_grid, line_points: int, refine_iters: int,
                   record_bounds: tuple):
    """:func:`log_eta` for a model whose f depends on theta only through u = w.theta: for each
    record the sup/inf over the box is a sup/inf over u in an interval, searched along the line
    theta(t) = centre + t phi sign(w), t in [-1, 1] (``line_points`` values of t, the box's two
    extreme vertices for this w included), then the same coordinate golden section and
    projected Newton over (record, t) as the general path. The d-dimensional box costs one
    dimension instead of ``theta_grid_size ** d`` points."""
    size, r_low, r_high, r_step, r_coords = _record_space_arrays(record_grid, record_bounds)
    records = jax.vmap(model.to_record)(record_grid)
    ts = jnp.linspace(-1.0, 1.0, line_points)

    def log_d_at(record, t):
        return model.log_d(record, _index_theta(model, record, centre, phi, t), theta_star, p)

    table = jax.vmap(lambda rec: jax.vmap(lambda t: log_d_at(rec, t))(ts))(records)  # (num_x, num_t)
    lows = jnp.concatenate([r_low, -jnp.ones(1)])
    highs = jnp.concatenate([r_high, jnp.ones(1)])
    steps = jnp.concatenate([r_step, jnp.full((1,), 2.0 / (line_points - 1))])
    coords = r_coords + (size,)

    def refine(sign):
        signed = sign * table
        objective = lambda v: sign * log_d_at(model.to_record(v[:size]), v[size])

        def from_start(value, flat):
            ix, it = flat // table.shape[1], flat % table.shape[1]
            v0 = jnp.concatenate([record_grid[ix], ts[it][None]])
            v, best = _coordinate_ascent(objective, v0, value, lows, highs, steps, coords, 2, refine_iters)
            return _projected_newton(objective, v, best, lows, highs, coords)

        values, flats = jax.lax.top_k(signed.reshape(-1), min(VECTOR_STARTS, signed.size))
        return jnp.max(jax.vmap(from_start)(values, flats))

    best = jax.vmap(refine)(jnp.array([1.0, -1.0]))
    log_sup, log_inf = best[0], -best[1]
    return log_sup - log_inf, log_sup, log_inf


def log_mixture_extremes(model: ContaminationModel, thetas, log_weights, theta_star, p, record_grid, refine_iters: int = 40, stride: int = 1,
                         record_bounds: tuple | None = None):
    """(log a, log b) with a = sup_x sum_j w_j d(x; theta_j), b = inf_z the same (paper 003,
    eq. 16), for normalised log weights. Scalar records: every ``stride``-th point of
    ``record_grid`` (its ends kept), then golden section in the cells around the grid
    optimum. Vector records: the whole grid, then (with ``record_bounds``, see
    :func:`log_eta`) two sweeps of coordinate-wise golden section. The sum over m particles
    makes each evaluation m times dearer than in :func:`log_eta`, hence the coarser scalar
    grid; the refinement recovers the optimum inside the bracketing cells."""
    if stride > 1 and record_grid.ndim == 1:
        record_grid = jnp.concatenate([record_grid[:-1:stride], record_grid[-1:]])
    from ..models.contamination import log_mix

    if model.mixture_density is not None:
        # sum_j w_j k_j in linear space: the weights relative to the largest are in (0, 1], one
        # underflowing to 0 is below 1e-308 of the largest term's weight, and k_j / k_j' is
        # bounded on the record space, so nothing that matters is lost
        top_log_weight = jnp.max(log_weights)
        weights = jnp.exp(log_weights - top_log_weight)
    else:
        norms = jax.vmap(model.log_normaliser)(thetas)

    def h(v):
        x = v if record_grid.ndim == 1 else model.to_record(v)
        if model.mixture_density is not None:
            ks = jax.vmap(lambda t: model.mixture_density(x, t, p))(thetas)
            value = jnp.log(jnp.dot(weights, ks)) + top_log_weight - model.log_k(x, theta_star, p)
            return jnp.where(jnp.all(_is_positive_normal(ks)), value, jnp.nan)
        log_f = jax.vmap(lambda t: model.log_f(x, t))(thetas) - norms
        ks = log_mix(log_f, model.log_g(x), p)
        return jax.scipy.special.logsumexp(log_weights + ks) - model.log_k(x, theta_star, p)

    values = jax.lax.map(h, record_grid, batch_size=64)
    # a NaN on the grid (a closed-form density out of range) poisons both extremes
    flag = jnp.where(jnp.any(jnp.isnan(values)), jnp.nan, 0.0)
    if record_grid.ndim != 1:
        if record_bounds is None:
            return jnp.max(values) + flag, jnp.min(values) + flag
        _, lows, highs, steps, coords = _record_space_arrays(record_grid, record_bounds)

        def extreme(sign):
            objective = lambda v: sign * h(v)

            def from_start(value, i):
                v, best = _coordinate_ascent(objective, record_grid[i], value, lows, highs, steps, coords, 2, refine_iters)
                return _projected_newton(objective, v, best, lows, highs, coords)

            tops, idx = jax.lax.top_k(sign * values, min(VECTOR_STARTS, values.shape[0]))
            return sign * jnp.max(jax.vmap(from_start)(tops, idx))

        both = jax.vmap(extreme)(jnp.array([1.0, -1.0]))
        return both[0] + flag, both[1] + flag

    def extreme(sign):
        return sign * _refined_max_1d(lambda x: sign * h(x), record_grid, sign * values, refine_iters)[1]

    both = jax.vmap(extreme)(jnp.array([1.0, -1.0]))
    return both[0] + flag, both[1] + flag


def _chunked_sum(chunk_fn, init, records, num_records, chunk: int):
    """sum over the first ``num_records`` records of ``chunk_fn(chunk_records, valid)``, looping
    over static-size chunks with a dynamic trip count: one compilation serves every n up to the
    padded length, and work is proportional to n, not to the padding."""
    num_chunks = (num_records + chunk - 1) // chunk

    def body(i, acc):
        start = i * chunk
        part = jax.tree_util.tree_map(lambda a: jax.lax.dynamic_slice_in_dim(a, start, chunk), records)
        valid = start + jnp.arange(chunk) < num_records
        return jax.tree_util.tree_map(jnp.add, acc, chunk_fn(part, valid))

    return jax.lax.fori_loop(0, num_chunks, body, init)


def laplace_map(value_grad_hess, theta0, max_steps: int = 30, backtracks: int = 20):
    """Minimise a potential U by damped Newton from ``theta0``.

    ``value_grad_hess(theta) -> (U, grad U, hess U)``. The Newton direction uses the Hessian
    with its eigenvalues floored (a descent direction even where U is not convex); the step
    is halved until U decreases (at most ``backtracks`` times). Stops when a step moves theta
    by less than 1e-13 relative, or no step decreases U (the minimum at float64 resolution).
    Returns (map, hessian at map, gradient at map, Newton steps taken)."""

    # value_grad_hess has one call site: its n-term sums (the Hessian's included) are the bulk
    # of the compiled program, and XLA compiles every call site again. Each pass evaluates it
    # at one probe: theta0 first, then the trial points of the line search. The U of a trial
    # point decides the step, and an accepted trial point's gradient and Hessian are those of
    # the next Newton step (and, after the last step, of the returned MAP), so a step with its
    # full step accepted costs one evaluation. Same probes as a loop over Newton steps with an
    # inner halving loop: t = 1, 1/2, ... (at most ``backtracks`` halvings) from each point.
    def newton_direction(g, h):
        evals, evecs = jnp.linalg.eigh(h)
        floor = 1e-10 * jnp.maximum(jnp.max(jnp.abs(evals)), 1.0)
        return evecs @ ((evecs.T @ g) / jnp.maximum(evals, floor))

    def step(state):
        theta, u, g, h, direction, t, j, taken, _ = state
        probe = theta - t * direction
        u_p, g_p, h_p = value_grad_hess(probe)
        first = taken < 0  # the probe is theta0 itself
        accept = first | (u_p < u)
        # an accepted trial point is the new theta; a step that moved theta by a relative 1e-13
        # or less, or the max_steps-th step, is the last
        tiny = jnp.max(jnp.abs(probe - theta)) <= 1e-13 * (1.0 + jnp.max(jnp.abs(theta)))
        new_taken = taken + 1
        stop_accepted = (~first & tiny) | (new_taken >= max_steps)
        # a rejected trial point is halved while U there is >= U at theta (a NaN ends the search)
        # and halvings are left; else no step decreases U: the last pass, counted as a step
        stop_rejected = ~((u_p >= u) & (j < backtracks))
        theta2 = jnp.where(accept, probe, theta)
        u2 = jnp.where(accept, u_p, u)
        g2 = jnp.where(accept, g_p, g)
        h2 = jnp.where(accept, h_p, h)
        direction2 = jnp.where(accept, newton_direction(g_p, h_p), direction)
        t2 = jnp.where(accept, jnp.ones_like(t), 0.5 * t)
        j2 = jnp.where(accept, 0, j + 1)
        done = jnp.where(accept, stop_accepted, stop_rejected)
        return theta2, u2, g2, h2, direction2, t2, j2, jnp.where(accept | stop_rejected, new_taken, taken), done

    d = theta0.shape[0]
    zero = jnp.zeros((), theta0.dtype)
    # taken = -1: the first pass evaluates theta0 (t = 0) and counts no step
    init = (theta0, zero, jnp.zeros_like(theta0), jnp.zeros((d, d), theta0.dtype), jnp.zeros_like(theta0), zero, 0, -1, False)
    theta, _, g, h, _, _, _, steps, _ = jax.lax.while_loop(lambda s: ~s[-1], step, init)
    return theta, h, g, steps


def epsilon_for_dataset(
    model: ContaminationModel,
    records,
    normals: jax.Array,
    *,
    theta_star,
    contamination_rate,
    log_delta,
    record_grid: jax.Array,
    num_records=None,
    proposal_scale: float = 2.0,
    theta_grid_size: int = 17,
    box_centre: str = "map",
    record_chunk: int = 512,
    refine_iters: int = 40,
    interpolation_nodes: int | None = None,
    mixture_grid_stride: int = 4,
    record_bounds: tuple | None = None,
) -> dict:
    """Algorithm 1, lines 5-13, for one contaminated dataset.

    ``records``: leading axis >= ``num_records`` (default: all of it), padded to a multiple of
    ``record_chunk``; the first ``num_records`` are the dataset and the last of them is the
    one left out in line 10. ``normals``: standard normal draws of shape (m, d) for the
    particles. ``contamination_rate``, ``log_delta``, ``num_records`` and ``proposal_scale`` may be traced. Pure
    and vmappable; call it with float64 enabled.

    ``interpolation_nodes`` (d = 1 only): evaluate the potential exactly at this many Chebyshev
    nodes spanning the particles and interpolate it at the m particles (barycentric formula),
    instead of m exact evaluations of an n-term sum; the potential is analytic and the span is
    a few posterior widths, so the interpolant is accurate to rounding. The largest deviation
    from the exact potential at three check particles (the two extremes and one inside) is
    returned as ``interpolation_error``. ``record_bounds``: for vector records, (low, high,
    step) per component (:meth:`ContaminationModel.record_space`), which turns on the
    refinement of the sup/inf past ``record_grid``. Returns a dict with ``epsilon``, ``log_eta``,
    ``log_a``, ``log_b``, ``phi``, ``theta_map``, ``hessian``, ``map_grad``, ``newton_steps``,
    ``num_outside`` (particles outside the box), ``ess`` (effective sample size), ``ok``."""

    p = contamination_rate
    theta_star = jnp.asarray(theta_star)
    size = jax.tree_util.tree_leaves(records)[0].shape[0]
    n = size if num_records is None else num_records
    pad = (-size) % record_chunk
    if pad:
        records = jax.tree_util.tree_map(lambda a: jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]), records)

    def chunk_log_lik(part, valid, t):
        return _records_log_lik(model, part, valid, t, p)

    def value_grad_hess(t):
        def chunk_stats(part, valid):
            return _value_grad_hess(lambda tt: -chunk_log_lik(part, valid, tt), t)

        zero = jnp.zeros_like(t)
        u, g, h = _chunked_sum(chunk_stats, (jnp.zeros(()), zero, jnp.zeros((t.shape[0],) * 2)), records, n, record_chunk)
        u0, g0, h0 = _value_grad_hess(lambda tt: -model.log_prior(tt), t)
        return u + u0, g + g0, h + h0

    def potential_many(ts):
        ll = _chunked_sum(
            lambda part, valid: jax.vmap(lambda t: chunk_log_lik(part, valid, t))(ts),
            jnp.zeros(ts.shape[0]), records, n, record_chunk,
        )
        return -jax.vmap(model.log_prior)(ts) - ll

    theta_map, hess, map_grad, steps = laplace_map(value_grad_hess, theta_star)
    chol = jnp.linalg.cholesky(hess)
    pd = jnp.all(jnp.isfinite(chol))
    chol = jnp.where(pd, chol, jnp.eye(hess.shape[0]))
    d = theta_map.shape[0]
    # theta_j = MAP + s L^{-T} z_j has covariance s^2 H^{-1} (H = L L^T)
    offsets = proposal_scale * jax.scipy.linalg.solve_triangular(chol.T, normals.T, lower=False).T
    thetas = theta_map + offsets
    log_q = (
        -0.5 * d * math.log(2 * math.pi) - d * jnp.log(proposal_scale) + jnp.sum(jnp.log(jnp.diag(chol)))
        - 0.5 * jnp.sum(normals**2, axis=1)
    )
    if interpolation_nodes is None:
        neg_u = -potential_many(thetas)
        interp_err = jnp.zeros(())
    else:
        neg_u, interp_err = _interpolated_neg_potential(potential_many, thetas, interpolation_nodes)
    log_w = neg_u - log_q
    log_w = log_w - jax.scipy.special.logsumexp(log_w)
    ess = 1.0 / jnp.sum(jnp.exp(2 * log_w))

    centre = theta_map if box_centre == "map" else theta_star
    distances = jnp.max(jnp.abs(thetas - centre), axis=1)
    phi, num_outside = smallest_box_radius(distances, log_w, log_delta)

    log_eta_value, _, _ = log_eta(model, centre, phi, theta_star, p, record_grid, theta_grid_size, refine_iters, record_bounds)

    last = jax.tree_util.tree_map(lambda a: a[n - 1], records)
    log_w_prev = log_w - jax.vmap(lambda t: model.log_k(last, t, p))(thetas)
    log_w_prev = log_w_prev - jax.scipy.special.logsumexp(log_w_prev)
    log_a, log_b = log_mixture_extremes(model, thetas, log_w_prev, theta_star, p, record_grid, refine_iters, mixture_grid_stride, record_bounds)

    eps = log_eta_value + log_a - log_b
    ok = pd & jnp.isfinite(eps)
    return dict(
        epsilon=jnp.where(ok, eps, jnp.nan),
        log_eta=log_eta_value,
        log_a=log_a,
        log_b=log_b,
        phi=phi,
        theta_map=theta_map,
        hessian=hess,
        map_grad=map_grad,
        newton_steps=steps,
        num_outside=num_outside,
        ess=ess,
        interpolation_error=interp_err,
        ok=ok,
    )


def _interpolated_neg_potential(potential_many, thetas, num_nodes: int):
    """-U at 1-D particles by Chebyshev interpolation (first-kind nodes, barycentric form), and
    the max |interpolant - exact| at the two extreme particles and the first particle."""
    t = thetas[:, 0]
    lo, hi = jnp.min(t), jnp.max(t)
    mid, half = 0.5 * (lo + hi), 0.5 * (hi - lo)
    k = jnp.arange(num_nodes)
    angles = jnp.pi * (k + 0.5) / num_nodes
    nodes = mid + half * jnp.cos(angles)
    check = jnp.stack([jnp.argmin(t), jnp.argmax(t), jnp.asarray(0)])
    # the nodes and the check particles in one call: one compiled copy of the n-term sum
    both = -potential_many(jnp.concatenate([nodes[:, None], thetas[check]]))
    values, exact_at_check = both[:num_nodes], both[num_nodes:]
    shift = jnp.max(values)  # interpolate O(1) numbers, not O(n) ones
    weights = (-1.0) ** k * jnp.sin(angles)

    def interp(x):
        diff = x - nodes
        exact = diff == 0
        safe = jnp.where(exact, 1.0, diff)
        c = weights / safe
        value = jnp.sum(c * (values - shift)) / jnp.sum(c)
        return jnp.where(jnp.any(exact), jnp.sum(jnp.where(exact, values - shift, 0.0)), value) + shift

    approx = jax.vmap(interp)(t)
    return approx, jnp.max(jnp.abs(approx[check] - exact_at_check))


# --- the full procedure ---------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class ContaminationEstimate:
    """Result of :func:`contamination_epsilon`. ``epsilon`` is the ``quantile``-th quantile of
    the per-dataset estimates ``epsilons`` (order statistic ceil(q K)); ``interval`` is a
    distribution-free confidence interval for the true quantile from the order statistics
    (binomial coverage >= ``interval_confidence``; an end is +-inf when K is too small to
    bound it); ``bootstrap_se`` the bootstrap standard error of the quantile.
    ``num_failed``: datasets whose estimate failed (counted as +inf in the quantile);
    ``num_unresolved_tail``: datasets with no particle outside the box, whose phi is the
    particles' extent rather than resolved from the tail weight, after ``tail_retries``
    widened reruns (raise ``num_particles``, ``proposal_scale`` or ``tail_retries`` until it is 0)."""

    epsilon: float
    quantile: float
    delta: float
    contamination_rate: float
    num_records: int
    epsilons: np.ndarray
    interval: tuple
    interval_confidence: float
    bootstrap_se: float
    num_failed: int
    num_unresolved_tail: int
    details: dict
    seconds: float

    summary, __repr__ = printed_by("contamination_summary", "eps_hat, its interval and the run's diagnostics, in 100 columns.")
    figure, save = drawn_by("contamination_figure", "The per-dataset estimates as a histogram, with the quantile and its interval.")


def quantile_order_statistic_interval(values: np.ndarray, q: float, confidence: float = 0.95) -> tuple[float, float, float]:
    """Distribution-free interval [X_(l), X_(u)] for the q-quantile of i.i.d. values:
    P(X_(l) <= xi_q <= X_(u)) >= P(l <= B < u), B ~ Binomial(K, q), with equal tails of at most
    (1 - confidence)/2. An end that no order statistic attains is returned as -inf / +inf.
    Returns (low, high, actual coverage)."""
    from scipy import stats  # here, not at import: scipy.stats takes ~0.4 s to import, and dpjax.estimators is imported by every audit

    confidence = check_confidence(confidence)
    x = np.sort(np.asarray(values, dtype=float))
    k = x.shape[0]
    tail = (1.0 - confidence) / 2.0
    # l: largest with P(B < l) <= tail; u: smallest with P(B >= u) <= tail  (1-based order stats)
    l = int(stats.binom.ppf(tail, k, q))  # P(B <= l-1) <= tail  <=>  l <= ppf(tail)
    while l >= 1 and stats.binom.cdf(l - 1, k, q) > tail:
        l -= 1
    u = int(stats.binom.ppf(1.0 - tail, k, q)) + 1
    while u <= k and stats.binom.sf(u - 1, k, q) > tail:
        u += 1
    low = x[l - 1] if l >= 1 else -np.inf
    high = x[u - 1] if u <= k else np.inf
    coverage = stats.binom.cdf(min(u, k + 1) - 1, k, q) - (stats.binom.cdf(l - 1, k, q) if l >= 1 else 0.0)
    return float(low), float(high), float(coverage)


def _quantile(values: np.ndarray, q: float) -> float:
    x = np.sort(values)
    return float(x[max(int(math.ceil(q * x.shape[0])) - 1, 0)])


TAIL_RETRY_WIDENING = 1.5  # proposal scale factor per retry of a dataset whose tail is unresolved
CPU_BATCHING = (8, 512)
ACCELERATOR_BATCHING = (64, 4096)


def default_batching() -> tuple[int, int]:
    """(datasets per compiled batch, records per chunk of the potential's loop) for JAX's
    default backend. A CPU wants cache-sized work: 8 datasets, 512 records. On a GPU or TPU the
    loops over record chunks (Newton steps at one theta per dataset) are latency-bound, so
    batches 8x wider and chunks 8x longer cut their sequential trip count 64-fold (not yet
    timed on a GPU). The results do not depend on either, up to the order of float sums."""
    return CPU_BATCHING if jax.default_backend() == "cpu" else ACCELERATOR_BATCHING


def _run_datasets(runner, indices: np.ndarray, batch: int, args: tuple, progress_label: str | None = None) -> dict:
    """``runner`` (a :func:`_batch_runner`) over the datasets ``indices`` in batches of
    ``batch``, the last padded by repeating its last index (one compiled shape; the padding's
    rows are dropped): numpy arrays, one row per index, in order."""
    starts = range(0, indices.size, batch)
    if progress_label:
        from tqdm.auto import tqdm

        starts = tqdm(starts, desc=progress_label, unit="batch")
    chunks = []
    for start in starts:
        part = indices[start : start + batch]
        padded = np.concatenate([part, np.full(batch - part.size, part[-1])])
        out = jax.device_get(runner(jnp.asarray(padded), *args))
        chunks.append({key: np.asarray(value)[: part.size] for key, value in out.items()})
    return {key: np.concatenate([c[key] for c in chunks]) for key in chunks[0]}


@functools.lru_cache(maxsize=16)
def _batch_runner(model, padded: int, num_particles: int, theta_grid_size: int, box_centre: str, record_chunk: int, interpolation_nodes,
                  record_bounds=None):
    """A jitted, vmapped Algorithm-1 run over a batch of dataset indices. Static: shapes and
    the model; traced: theta*, n, p, log delta, the grid, the seed and the proposal scale, so
    one compilation serves a whole sweep over n and the widened reruns of unresolved tails
    (records live in a buffer of the padded length; only the first n are simulated and read)."""

    def one(k, root, theta_star, n, p, log_delta, grid, proposal_scale):
        key = jax.random.fold_in(root, k)
        k_data, k_particles = jax.random.split(key)
        # one key per record (fold_in(k_data, i)): record i is the same draw whatever the
        # padding, so a sweep over n and a single run give the same dataset. Only the first
        # ceil(n / chunk) chunks of the padded buffer are simulated (the rest is never read).
        def simulate_chunk(i):
            keys = jax.vmap(lambda j: jax.random.fold_in(k_data, j))(i * record_chunk + jnp.arange(record_chunk))
            draws = jax.vmap(lambda kk: model.simulate(kk, theta_star, 1, p))(keys)
            return jax.tree_util.tree_map(lambda a: a.reshape((record_chunk,) + a.shape[2:]), draws)

        shapes = jax.eval_shape(simulate_chunk, 0)
        buffer = jax.tree_util.tree_map(lambda sd: jnp.zeros((padded,) + sd.shape[1:], sd.dtype), shapes)

        def fill(i, buf):
            part = simulate_chunk(i)
            return jax.tree_util.tree_map(lambda b, v: jax.lax.dynamic_update_slice_in_dim(b, v, i * record_chunk, 0), buf, part)

        records = jax.lax.fori_loop(0, (n + record_chunk - 1) // record_chunk, fill, buffer)
        normals = jax.random.normal(k_particles, (num_particles, model.dim))
        return epsilon_for_dataset(
            model, records, normals, theta_star=theta_star, contamination_rate=p, log_delta=log_delta,
            record_grid=grid, num_records=n, proposal_scale=proposal_scale, theta_grid_size=theta_grid_size,
            box_centre=box_centre, record_chunk=record_chunk, interpolation_nodes=interpolation_nodes,
            record_bounds=record_bounds,
        )

    return jax.jit(jax.vmap(one, in_axes=(0, None, None, None, None, None, None, None)))


@float64
def contamination_epsilon(
    model: ContaminationModel,
    *,
    theta_star: Any,
    num_records: int,
    contamination_rate: float,
    delta: float,
    num_datasets: int,
    quantile: float = 0.99,
    num_particles: int = 1000,
    proposal_scale: float = 2.0,
    seed: int = 0,
    record_grid: Any = None,
    num_record_grid: int = 1201,
    record_grid_per_axis: int = 9,
    theta_grid_size: int = 17,
    box_centre: str = "map",
    dataset_batch: int | None = None,
    record_chunk: int | None = None,
    pad_records_to: int | None = None,
    interpolation_nodes: int | None = None,
    progress: bool = False,
    bootstrap: int = 2000,
    tail_retries: int = 2,
) -> ContaminationEstimate:
    """Paper 003 Algorithm 1 for a user-supplied contaminated model (f, g, prior, samplers).

    Simulates ``num_datasets`` (K) datasets of ``num_records`` (n) records from f(.; theta*)
    contaminated at rate p, and returns the ``quantile`` (q) of the per-dataset eps_hat with
    its Monte Carlo uncertainty. Datasets are processed ``dataset_batch`` at a time (vmapped,
    jitted); dataset k's randomness is fold_in(seed, k) and its record i's a split of that, so
    results depend neither on the batching nor on ``pad_records_to``. ``record_grid``:
    candidate records for the sup/inf over x (default: ``num_record_grid`` points spanning a
    scalar record's [record_low, record_high], or, for vector records, the model's
    :meth:`~dpjax.models.contamination.ContaminationModel.record_space` with
    ``record_grid_per_axis`` points per continuous component, refined past the grid; a
    user-supplied vector grid is searched as given). ``contamination_rate`` may be 0: the
    uncontaminated posterior, the baseline of paper 003 §4.3 (meaningful where d(x; theta) is
    bounded without g, e.g. a binary response; a ValueError for a model declared unbounded
    without contamination, whose eps is +inf). The box A_n is gridded with
    theta_grid_size**dim points, refined coordinate-wise (``theta_grid_size=2``: the
    vertices), except for a model with ``covariates`` on its own record space, where it is
    searched along one line with ``theta_grid_size`` points (see :func:`log_eta`).
    A model built around a theta* (``model.theta_star``) must be given that theta*.
    ``pad_records_to``: simulate this many records and use the first n, so calls with
    different n share one compilation (a sweep passes its largest n).
    ``interpolation_nodes``: see :func:`epsilon_for_dataset` (d = 1; the per-dataset
    interpolation error is in ``details["interpolation_error"]``). See the module
    docstring for the procedure and for ``proposal_scale``.
    ``tail_retries``: a dataset with no particle outside its box (the tail beyond delta_n
    unresolved, phi only the particles' extent, so possibly too small) is rerun, on the same
    records and normal draws, with the proposal widened 1.5x, up to this many times; the
    scale each dataset ended with is ``details["proposal_scale"]``, and those still
    unresolved are counted in ``num_unresolved_tail``.
    """
    t0 = time.perf_counter()
    p = check_contamination_rate(contamination_rate, allow_zero=True)
    delta = V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    k_sets = V.positive_int("num_datasets", num_datasets)
    n = V.positive_int("num_records", num_records)
    if n < 2:
        raise ValueError(f"num_records={n} violates num_records >= 2 (Algorithm 1 leaves one record out)")
    q = V.in_range("quantile", quantile, 0.0, 1.0, low_open=True, high_open=True)
    m = V.positive_int("num_particles", num_particles)
    if m < 2:
        raise ValueError(f"num_particles={m} violates num_particles >= 2")
    s = V.positive("proposal_scale", proposal_scale)
    V.one_of("box_centre", box_centre, BOX_CENTRES)
    if isinstance(theta_grid_size, bool) or not isinstance(theta_grid_size, (int, np.integer)) or theta_grid_size < 2:
        raise ValueError(f"theta_grid_size={theta_grid_size!r} violates theta_grid_size an integer >= 2 (the box's vertices)")
    default_batch, default_chunk = default_batching()
    batch = default_batch if dataset_batch is None else V.positive_int("dataset_batch", dataset_batch)
    chunk = default_chunk if record_chunk is None else V.positive_int("record_chunk", record_chunk)
    padded = n if pad_records_to is None else V.positive_int("pad_records_to", pad_records_to)
    if padded < n:
        raise ValueError(f"pad_records_to={padded} violates pad_records_to >= num_records={n}")
    padded = -(-padded // chunk) * chunk
    seed = V.seed("seed", seed)
    bootstrap = V.nonnegative_int("bootstrap", bootstrap)
    tail_retries = V.nonnegative_int("tail_retries", tail_retries)
    theta_star = V.finite_array("theta_star", np.atleast_1d(V.real_array("theta_star", theta_star)))
    if theta_star.shape != (model.dim,):
        raise ValueError(f"theta_star has shape {theta_star.shape}; it must have shape ({model.dim},), the model's dim")
    if model.sample_f is None or model.sample_g is None:
        raise ValueError(f"model {model.name!r} needs sample_f and sample_g to simulate datasets")
    if model.theta_star is not None and not np.allclose(theta_star, model.theta_star, rtol=0.0, atol=0.0):
        raise ValueError(f"theta_star={theta_star.tolist()} differs from the theta* model {model.name!r} was built around ({list(model.theta_star)})")
    if p == 0.0 and not model.bounded_without_contamination:
        raise ValueError(f"contamination_rate=0 on model {model.name!r}: d(x; theta) is unbounded in x without contamination, "
                         "so eps is +inf (no estimate to make)")
    line_search = model.covariates is not None and record_grid is None and model.vector_records
    if not line_search and theta_grid_size**model.dim > 200_000:
        raise ValueError(f"theta_grid_size**dim = {theta_grid_size}**{model.dim} box points is too many; lower theta_grid_size")
    record_bounds = None
    if record_grid is None and model.vector_records:
        record_grid, low, high, step = model.record_space(record_grid_per_axis)
        record_bounds = tuple(tuple(float(v) for v in a) for a in (low, high, step))
    elif record_grid is None:
        if model.record_low is None:
            raise ValueError(f"model {model.name!r} has no record support [record_low, record_high]; pass record_grid")
        if isinstance(num_record_grid, bool) or not isinstance(num_record_grid, (int, np.integer)) or num_record_grid < 3:
            raise ValueError(f"num_record_grid={num_record_grid!r} violates num_record_grid an integer >= 3")
        record_grid = np.linspace(model.record_low, model.record_high, num_record_grid)
    grid = V.finite_array("record_grid", V.real_array("record_grid", record_grid))
    if grid.ndim == 1 and not (grid.shape[0] >= 3 and np.all(np.diff(grid) > 0)):
        raise ValueError("record_grid must have >= 3 strictly increasing points (scalar records are refined between neighbours)")

    if interpolation_nodes is not None:
        if model.dim != 1:
            raise ValueError(f"interpolation_nodes={interpolation_nodes} needs a 1-dimensional theta; the model has dim={model.dim}")
        if isinstance(interpolation_nodes, bool) or not isinstance(interpolation_nodes, (int, np.integer)) or interpolation_nodes < 8:
            raise ValueError(f"interpolation_nodes={interpolation_nodes!r} violates interpolation_nodes an integer >= 8")
        interpolation_nodes = int(interpolation_nodes)
    run_batch = _batch_runner(model, padded, m, int(theta_grid_size), box_centre, chunk, interpolation_nodes, record_bounds)
    args = (jax.random.PRNGKey(seed), jnp.asarray(theta_star), jnp.asarray(n), jnp.asarray(p), jnp.asarray(math.log(delta)), jnp.asarray(grid))
    details = _run_datasets(run_batch, np.arange(k_sets), batch, (*args, jnp.asarray(s)), f"contamination n={n}" if progress else None)
    details["proposal_scale"] = np.full(k_sets, s)
    for attempt in range(1, tail_retries + 1):
        todo = np.flatnonzero(details["num_outside"] == 0)
        if todo.size == 0:
            break
        # same records and normals (dataset k's keys), particles spread wider: the weights keep
        # the tail estimate valid for any scale, and farther particles can resolve it
        wider = s * TAIL_RETRY_WIDENING**attempt
        for key, value in _run_datasets(run_batch, todo, batch, (*args, jnp.asarray(wider))).items():
            details[key][todo] = value
        details["proposal_scale"][todo] = wider
    eps = np.asarray(details["epsilon"], dtype=float)
    failed = int(np.sum(~np.isfinite(eps)))
    # a failed dataset (Hessian not positive definite, non-finite eps) is never dropped: it
    # counts as +inf, which can only raise the reported quantile
    eps = np.where(np.isfinite(eps), eps, np.inf)
    value = _quantile(eps, q)
    # no particle outside the box: phi is the particles' extent and the weight beyond it is
    # not resolved (phi may be too small); counted and reported, never hidden
    unresolved = int(np.sum(np.asarray(details["num_outside"]) == 0))
    low, high, coverage = quantile_order_statistic_interval(eps, q)
    boot_se = float("nan")
    if bootstrap:
        rng = np.random.default_rng(seed)
        boots = np.array([_quantile(eps[rng.integers(0, k_sets, k_sets)], q) for _ in range(bootstrap)])
        if np.all(np.isfinite(boots)):
            boot_se = float(np.std(boots))
    return ContaminationEstimate(
        epsilon=value,
        quantile=q,
        delta=delta,
        contamination_rate=p,
        num_records=n,
        epsilons=eps,
        interval=(low, high),
        interval_confidence=coverage,
        bootstrap_se=boot_se,
        num_failed=failed,
        num_unresolved_tail=unresolved,
        details=details,
        seconds=time.perf_counter() - t0,
    )
