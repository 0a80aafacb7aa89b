"""Privacy-loss distributions on a grid: discretisation, FFT composition, queries.

A (discrete) privacy-loss distribution (PLD) is a measure omega on the grid {k h} plus a mass
at +inf; its privacy profile is

    delta(eps) = omega(+inf) + sum_k omega_k (1 - exp(eps - k h))_+     (Meiser & Mohammadi 2018;
                                                                          Sommer et al. 2019)

and the PLD of a composition is the convolution of the PLDs (product pairs), computed here by
FFT. Every step below moves mass only in the direction that keeps the result on its side:

Pessimistic (never below the true delta of the dominating pair):
* one step is discretised by "connect the dots" (Doroshenko, Ghazi, Kamath, Kumar, Manurangsi
  2022, Section 3): the mass of L in a grid cell (l_k, l_{k+1}] is split between its two ends
  so that both the P-mass and the Q-mass E_P[e^{-L}] are kept; the resulting delta(eps) is the
  chord of the true (convex in e^eps) profile between grid points, so it is above it, and the
  discrete pair is a genuine pair that dominates the true one, hence also under composition.
  Mass of L below the grid is moved up to the lowest point, mass above it goes to +inf.
* composition is a circular convolution (FFT of length N) of which a window of N grid points
  [A h, (A + N - 1) h] is kept; mass outside the window wraps around. Chernoff bounds on the
  composed measure (its moment generating function at a few orders, exactly from the
  discretised PMFs) bound the mass above the window by tau_up and below it by tau_lo.
* FFT round-off is bounded componentwise: a radix-2 FFT of x has error <= gamma_N ||x||_1 in
  every output (Higham 2002, "Accuracy and stability of numerical algorithms", Section 24.1:
  each output is a sum over log2(N) butterfly levels, each with relative error <= eta; we take
  eta = 10 u, u = 2^-53, a safety factor of about 2 on Higham's constant), propagated through
  the powers z^T (by repeated squaring: relative error (1 + 4u)^T - 1, see
  :func:`_powers_by_squaring`) and the inverse FFT to a bound R on the l1 norm of the
  spectrum's error; the inverse transform divides by N, so every composed mass is off by at
  most R / N (:func:`_compose_one`). tests/test_pld.py checks R against exact convolutions.
* that pointwise bound is absolute: about 1e-15 per point after 1e5 steps, which is the whole
  mass of the far upper tail, where small deltas are decided. So the pessimistic side also
  composes the exponentially tilted PMFs p_j e^{lambda l_j} / m (normalised; lambda from the
  upper tail's Chernoff bound reaches a target mass first, see :func:`tilt_order`), whose
  mass sits where the tail is that mass (several targets for a kept
  PLD, the asked delta for eps alone), and multiplies back: the composed mass at l_i is the tilted one times
  m^T e^{-lambda l_i} (tilting commutes with convolution), so its round-off bound shrinks with
  the mass itself, to a relative error of about 1e-14 where delta is 1e-12 (Sommer, Meiser &
  Mohammadi 2019 use the same identity for their error analysis; :func:`tilted_upper_bound`).
  Every composed mass is bounded above by the smaller of the two bounds (both hold), every
  clipped negative value at 0 counted as its bound; the window's wrapped-around mass only adds
  to either. What lies above the window (tau_up) goes to +inf and what lies below (tau_lo) to
  the window's lowest point, so every upper set {L > l} has at least its exact mass: the
  result dominates the exact composition (delta is monotone in the upper-set masses). The
  pessimistic delta therefore resolves down to the mass at +inf (the exact one plus tau_up,
  about 1e-15 with the default tail): :attr:`PLDBracket.delta_floor` states it.

Optimistic (never above the true delta): each cell's mass is rounded down to its lower end,
the mass above the grid goes to its top point and the mass below it is dropped; after the FFT
tau_lo + R is removed from the top of the window (no tilt: this side's own floor is about R,
1e-10 after 1e5 steps, below which its eps is a valid but loose lower value). The gap between the two is the
discretisation error that :meth:`PLDBracket.epsilon` reports.

Units: losses are in nats; ``step`` is the grid interval h (dp_accounting's
``value_discretization_interval``). In the jitted functions h is a traced value (its
functions by jnp, not math): one compiled program serves every h whose arrays have the same
shapes, so a calibration's probes on several grids compile nothing new. The same functions run
on numpy arrays for small jobs (:mod:`.pld_numpy`; each picks its array library from its
arguments, :mod:`dpjax.accountants._xp`).
"""
from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from .. import _xp
from . import pld_pairs

UNIT_ROUNDOFF = 2.0**-53
FFT_ETA = 10.0 * UNIT_ROUNDOFF  # relative error per butterfly level (see the module docstring)


def fft_error_constant(n: int) -> float:
    """gamma_N: componentwise error of a length-n FFT per unit l1 norm of its input."""
    return math.expm1(math.ceil(math.log2(max(n, 2))) * math.log1p(FFT_ETA)) * (1 + 1e-6)


# --- one step: discretisation --------------------------------------------------------------------
def _log_diff(log_hi, log_lo):
    """log(e^hi - e^lo) for hi >= lo (-inf where equal or both -inf)."""
    xp = _xp.namespace(log_hi, log_lo)
    d = xp.where(xp.isfinite(log_lo), log_lo - log_hi, -xp.inf)
    d = xp.minimum(d, 0.0)
    out = log_hi + xp.log(-xp.expm1(xp.where(d < 0, d, -1.0)))
    return xp.where((d < 0) & xp.isfinite(log_hi), out, -xp.inf)


def _cell_log_masses(log_sf, log_cdf):
    """log of the mass in each cell (l_k, l_{k+1}], from the tails at the grid points, taking
    the difference of whichever tail is smaller (no cancellation against 1)."""
    xp = _xp.namespace(log_sf, log_cdf)
    upper = log_sf[:-1] < math.log(0.5)
    from_sf = _log_diff(log_sf[:-1], log_sf[1:])
    from_cdf = _log_diff(log_cdf[1:], log_cdf[:-1])
    return xp.where(upper, from_sf, from_cdf)


def _discretise_one(kind: str, length: int, step: float, sigma, q, k_lo):
    """Pessimistic (connect-the-dots) and optimistic (rounded down) PMFs of one step on the grid
    (k_lo + j) * step, j < length. Returns (pess, pess_inf, opt, opt_inf)."""
    xp = _xp.namespace(sigma, q, k_lo)
    tails = pld_pairs.TAILS[kind]
    losses = (k_lo + xp.arange(length)) * step
    p_sf, p_cdf, q_sf, q_cdf = tails(losses, sigma, q)
    log_p_cell = _cell_log_masses(p_sf, p_cdf)
    log_q_cell = _cell_log_masses(q_sf, q_cdf)
    p_cell = xp.exp(log_p_cell)
    # Split of a cell's P-mass keeping its Q-mass: the share a at the lower end solves
    # a e^{-l_k} + (1-a) e^{-l_{k+1}} = Q(cell)/P(cell), i.e. a = expm1(log(Q/P) + l_{k+1}) / expm1(h).
    ratio = xp.where(xp.isfinite(log_p_cell), log_q_cell - log_p_cell + losses[1:], 0.0)
    share_low = xp.clip(xp.expm1(xp.clip(ratio, 0.0, step)) / xp.expm1(step), 0.0, 1.0)
    pess = _xp.add_at(_xp.add_at(xp.zeros(length), slice(None, -1), share_low * p_cell), slice(1, None), (1.0 - share_low) * p_cell)
    pess = _xp.add_at(pess, 0, xp.exp(p_cdf[0]))  # mass below the grid, moved up to its lowest point
    pess_inf = xp.exp(p_sf[-1])  # mass above the grid -> +inf
    opt = _xp.add_at(_xp.add_at(xp.zeros(length), slice(None, -1), p_cell), -1, xp.exp(p_sf[-1]))  # rounded down
    return pess, pess_inf, opt, xp.zeros(())


DISCRETISE_BLOCK = 2048  # grid cells per block of the blocked discretisation


def _discretise_block(kind: str, step: float, sigma, q, k_first, offset, cells, mirrored=False, size: int = DISCRETISE_BLOCK):
    """One block of :func:`_discretise_one`'s work on a longer grid: the final masses of the
    DISCRETISE_BLOCK points (k_first + j) h, j < DISCRETISE_BLOCK, of a grid of ``cells`` cells
    whose point 0 is ``offset`` points before k_first. Point j takes the lower share of cell j
    (between points j and j + 1) and the upper share of cell j - 1, so each block evaluates one
    cell to its left and the blocks of a grid tile it without overlap: laid end to end they
    are its PMF (cells outside the grid carry no mass). Returns (pess (B,) connect-the-dots,
    opt (B,) each cell's mass at its lower end, log P(L <= point 0 of this block), log P(L >
    the grid's top point): the masses below and above the grid when this is its first / last
    block).

    Blocks make the work proportional to each grid's own length (no padding of short grids to
    a common one) with one compiled program for any length. ``mirrored`` (may be traced): the
    mirror of ``kind``'s pair (:func:`pld_pairs.mirrored_tails`), so the remove and add pairs
    share that program too. ``size``: the block's length (numpy takes a whole grid as one
    block: :mod:`.pld_numpy`)."""
    xp = _xp.namespace(sigma, q, k_first, offset, cells, mirrored)
    b = size
    losses = (k_first - 1 + xp.arange(b + 2)) * step  # points -1 .. b: cells -1 .. b - 1
    top = xp.clip(cells - offset + 1, 0, b + 1)  # index of the grid's top point in ``losses`` (clipped)
    log_p_cell, log_q_cell, log_below, log_above = _log_cells(kind, losses, sigma, q, 1, top, mirrored)
    cell = offset - 1 + xp.arange(b + 1)  # grid index of each evaluated cell
    real = (cell >= 0) & (cell < cells)
    p_cell = xp.where(real, xp.exp(log_p_cell), 0.0)
    ratio = xp.where(xp.isfinite(log_p_cell), log_q_cell - log_p_cell + losses[1:], 0.0)
    share_low = xp.clip(xp.expm1(xp.clip(ratio, 0.0, step)) / xp.expm1(step), 0.0, 1.0)
    # cell c's shares go to points c and c + 1 (cells -1 .. b - 1 onto points -1 .. b; the ends
    # are cut). Written as two scatter-adds: XLA on a CPU compiles the equivalent sum of two
    # offset slices to a loop 4x slower (measured)
    pess = _xp.add_at(_xp.add_at(xp.zeros(b + 2), slice(None, -1), share_low * p_cell), slice(1, None), (1.0 - share_low) * p_cell)[1:-1]
    return pess, p_cell[1:], log_below, log_above


def _log_cells(kind: str, losses, sigma, q, first, last, mirrored=False):
    """(log P-mass, log Q-mass) of the cells between consecutive ``losses``, log P(L <=
    losses[first]) and log P(L > losses[last]): from the pair's cell function where it has one,
    else by differencing its tails (of the mirrored pair where ``mirrored``). The barrier stores
    the cells (tails) once: without it XLA fuses their costly evaluation into each consumer,
    i.e. computes them two or three times over."""
    xp = _xp.namespace(losses, sigma, q, mirrored)
    tails = functools.partial(pld_pairs.mirrored_tails, pld_pairs.TAILS[kind], mirrored=mirrored)
    if kind in pld_pairs.CELLS:
        cells = pld_pairs.mirrored_cells(pld_pairs.CELLS[kind], losses, sigma, q, mirrored)
        log_p_cell, log_q_cell = _xp.barrier(cells)
        p_sf, p_cdf, _, _ = tails(xp.stack([losses[first], losses[last]]), sigma, q)
        return log_p_cell, log_q_cell, p_cdf[0], p_sf[1]
    p_sf, p_cdf, q_sf, q_cdf = _xp.barrier(tails(losses, sigma, q))
    return _cell_log_masses(p_sf, p_cdf), _cell_log_masses(q_sf, q_cdf), p_cdf[first], p_sf[last]


def _suffix_decayed(c, decay):
    """y_k = sum_{i >= k} c_i decay^(i - k), by an associative scan (no overflow for any length)."""

    def combine(acc, cur):  # maps x -> b + a x; cur applied after acc (acc holds higher indices)
        a1, b1 = acc
        a2, b2 = cur
        return a1 * a2, b2 + a2 * b1

    a = jnp.full_like(c, decay)
    _, y = jax.lax.associative_scan(combine, (a, c), reverse=True, axis=c.ndim - 1)
    return y


def _suffix_decayed_scan(c, decay):
    """As :func:`_suffix_decayed` for a 1-D ``c``, by a sequential scan (cheaper to compile)."""

    def body(carry, x):
        y = x + decay * carry
        return y, y

    _, y = jax.lax.scan(body, jnp.zeros((), c.dtype), c[::-1])
    return y[::-1]


def profile_on_grid(pmf, inf_mass, step: float):
    """delta at every grid point l_k of the window: delta_k = inf + D_k with
    D_k = sum_{i>k} p_i (1 - e^{-(i-k)h}) from D_k = e^{-h} D_{k+1} + (1 - e^{-h}) S_{k+1}
    (S the suffix sums): all terms positive, so no cancellation. The recurrence runs as an
    associative scan in JAX, by doubling in numpy (:func:`_suffix_decayed_np`): the same
    positive terms, summed in another order."""
    xp = _xp.namespace(pmf, inf_mass)
    s = xp.cumsum(pmf[..., ::-1], axis=-1)[..., ::-1]  # S_k = sum_{i >= k} p_i
    s_next = xp.concatenate([s[..., 1:], xp.zeros_like(s[..., :1])], axis=-1)
    c = -xp.expm1(-step) * s_next
    d = _suffix_decayed(c, xp.exp(-step)) if xp is jnp else _suffix_decayed_np(c, step)
    return inf_mass[..., None] + d, s


def _symmetrised_one(length: int, step: float, k_top: int, sigma, q, base: str):
    """Connect-the-dots PMF of the symmetric pair whose profile is, for eps >= 0, the larger of
    the two directions of the ``base``_remove pair (Dong, Roth & Su 2022, Theorem 4.2: the
    tradeoff function min{f_q, f_q^{-1}}** of sampling without replacement under replace-one),
    on the grid -k_top..k_top. Built from the profile at the grid points l_k >= 0: masses from
    the slope changes of the (convex in e^eps) chord interpolation, mirrored to negative losses
    by omega(-l) = e^{-l} omega(l), the mass at 0 fixed by normalisation."""
    xp = _xp.namespace(sigma, q)
    n_pos = k_top + 1  # grid points 0..k_top
    pess_r, inf_r, opt_r, _ = _discretise_one(f"{base}_remove", length, step, sigma, q, k_top - length + 1)
    pess_a, inf_a, opt_a, _ = _discretise_one(f"{base}_add", length, step, sigma, q, k_top - length + 1)
    # both grids end at k_top; keep the points with l >= 0
    w_r, w_a = pess_r[-n_pos:], pess_a[-n_pos:]
    # the mass below 0 does not enter delta(eps >= 0) nor the slopes there; put its share
    # into the cell at 0 by normalisation below.
    losses = xp.arange(n_pos) * step
    prof_r, _ = profile_on_grid(w_r, inf_r, step)
    prof_a, _ = profile_on_grid(w_a, inf_a, step)
    win_r = prof_r >= prof_a
    top = xp.maximum(prof_r, prof_a)
    # slope of delta in t = e^eps on [t_k, t_{k+1}] for a CTD PMF: minus its Q-mass above l_k
    qmass_r = xp.cumsum((w_r * xp.exp(-losses))[::-1])[::-1]
    qmass_a = xp.cumsum((w_a * xp.exp(-losses))[::-1])[::-1]
    slope_r = -qmass_r[1:]
    slope_a = -qmass_a[1:]
    dt = xp.exp(losses[1:]) - xp.exp(losses[:-1])
    slope_direct = (top[1:] - top[:-1]) / dt
    same_r = win_r[1:] & win_r[:-1]
    same_a = (~win_r[1:]) & (~win_r[:-1])
    slope = xp.where(same_r, slope_r, xp.where(same_a, slope_a, slope_direct))
    # omega_k e^{-l_k} = slope_k - slope_{k-1} (k = 1..k_top-1), slope_{k_top} = 0
    slope_ext = xp.concatenate([slope, xp.zeros(1)])
    jump = slope_ext[1:] - slope_ext[:-1]  # at k = 1..k_top
    mass_pos = xp.clip(jump * xp.exp(losses[1:]), 0.0, None)
    # where one direction wins on both sides of a point, its own mass is exact (no differencing)
    own_r = xp.concatenate([same_r[1:], xp.ones(1, bool)]) & same_r
    own_a = xp.concatenate([same_a[1:], xp.ones(1, bool)]) & same_a
    mass_pos = xp.where(own_r, w_r[1:], xp.where(own_a, w_a[1:], mass_pos))
    inf_mass = top[-1]
    # mirror: omega(-l) = e^{-l} omega(l); mass at 0 by normalisation (total P-mass 1)
    mass_neg = mass_pos * xp.exp(-losses[1:])
    mass_zero = xp.clip(1.0 - inf_mass - xp.sum(mass_pos) - xp.sum(mass_neg), 0.0, None)
    pess = xp.concatenate([mass_neg[::-1], mass_zero[None], mass_pos])
    # optimistic companion: the larger of the two directions' optimistic PMFs is taken *after*
    # composition (each direction alone is dominated by the symmetrised pair), so return both.
    return pess, inf_mass, (opt_r, opt_a)


# --- composition ---------------------------------------------------------------------------------
# lambda* 2^k, k = -12 .. 5, lambda* the Gaussian approximation's optimum. The orders far below
# it are for heavy upper tails, which the Gaussian approximation misses: the Poisson-subsampled
# Gaussian at q = 0.001, sigma = 1.05, T = 143 (remove direction) has its best bound at lambda*
# / 256; with k = -4 .. 5 only, its window took an FFT of 2^21 points where 2^15 hold the PLD
# (1.2 s against 0.05 s, the same eps to 2e-8). More orders only shrink a window (each one is
# a valid Chernoff bound, the window takes the tightest) and cost one column each of the MGF sums.
CHERNOFF_ORDERS = 18
CHERNOFF_BLOCK = 128  # grid points per block of the blocked MGF sums


def chernoff_log_mgf(pmf, k_lo, steps, step: float):
    """Chernoff data of a run (stages s, PMF pmf[s] from grid index k_lo[s], steps[s] times):
    lambdas (K,) around the Gaussian-approximation optimum sqrt(2 log(1/tail) / Var) and
    sum_s T_s log E[e^{+-lambda L_s}] (K,) each, for the finite part of each stage's PMF.

    The MGF sums are taken in blocks of b points: for the block starting at l_0,
    sum_i p_i e^{lambda (l_i - m)} = e^{lambda (l_0 - m)} sum_i p_i e^{lambda i h} (m the stage's
    mean), the inner sums for all orders at once as one matrix product with the (b, 2K) matrix
    of factors e^{lambda i h} (and e^{lambda (b-1-i) h} for -lambda, taken from the block's
    end), every factor >= 1 so no product underflows; the block totals are combined in log
    space, exp(log(inner) + lambda (l_0 - m)), which underflows only where the true term is below
    2^-1022, a relative 1e-300 of the sum (that holds the mass above the mean at factors >= 1).
    Where a factor overflows the order's sum is inf or NaN, and the order is dropped (inf).
    The result is rounded up by the sums' relative error bound so that the tail bounds built
    from it stay bounds."""
    xp = _xp.namespace(pmf, k_lo, steps)
    length = pmf.shape[-1]
    b = min(CHERNOFF_BLOCK, length)
    pad = (-length) % b
    pmf_b = xp.pad(pmf, ((0, 0), (0, pad))) if pad else pmf
    nb = pmf_b.shape[-1] // b
    losses = (k_lo[:, None] + xp.arange(length)[None, :]) * step  # (S, L)
    fin = xp.maximum(xp.sum(pmf, axis=-1), 1e-300)
    mean = xp.sum(pmf * losses, axis=-1) / fin
    var = xp.sum(pmf * (losses - mean[:, None]) ** 2, axis=-1) / fin
    total_var = xp.maximum(xp.sum(steps * var), (step * 1e-3) ** 2)
    lam0 = xp.sqrt(2.0 * 35.0 / total_var) / 4096.0  # 35 ~ log(1e15); the grid spans 2^-12 .. 2^5 of it
    lambdas = lam0 * 2.0 ** xp.arange(CHERNOFF_ORDERS)
    # relative error of the sums (b + nb positive terms, the exps) and of the logs, rounded up
    slack = math.log1p(4.0 * length * UNIT_ROUNDOFF + 2.0 ** (CHERNOFF_ORDERS + 3) * UNIT_ROUNDOFF)
    i = xp.arange(b) * step
    factors = xp.exp(xp.concatenate([i[:, None] * lambdas[None, :], i[::-1, None] * lambdas[None, :]], axis=1))  # (b, 2K)
    inner = _xp.matmul_exact(pmf_b.reshape(-1, nb, b), factors)  # (S, nb, 2K)
    first = (k_lo[:, None] + b * xp.arange(nb)[None, :]) * step - mean[:, None]  # l_0 - m of each block (S, nb)
    last = first + (b - 1) * step
    expo = xp.concatenate([first[..., None] * lambdas, -last[..., None] * lambdas], axis=-1)  # (S, nb, 2K)
    with jax.numpy_dtype_promotion("standard"):
        terms = xp.exp(xp.log(inner) + expo)
    sums = xp.sum(terms, axis=1)  # (S, 2K)
    lam2 = xp.concatenate([lambdas, -lambdas])
    log_m = xp.log(sums) + lam2 * mean[:, None] + slack
    log_m = xp.sum(steps[:, None] * xp.where(xp.isnan(log_m), xp.inf, log_m), axis=0)
    return lambdas, log_m[:CHERNOFF_ORDERS], log_m[CHERNOFF_ORDERS:]


COMPLEX_MUL_ETA = 4.0 * UNIT_ROUNDOFF  # relative error of one complex product (see _powers_by_squaring)
UNDERFLOW_SLACK = 1e-290  # absolute error per frequency from underflow in the powers (see _powers_by_squaring)


def _powers_by_squaring(z, hi_base, steps, nbits):
    """prod_s z[s]^T_s (complex) and prod_s hi_base[s]^T_s (real, >= 0) by binary powering,
    ``nbits`` >= bit length of every T_s (the same squarings for every stage).

    Round-off: a complex product has relative error <= sqrt(5) u without FMA (Brent, Percival &
    Zimmermann 2007) and <= 2 u with one (Jeannerod, Kornerup, Louvet & Muller 2017); we take
    eta = 4 u. By induction over the products, a computed x^a times a computed x^b carries
    relative error factors (1 + eta)^(a-1) (1 + eta)^(b-1) (1 + eta), so the computed
    prod_s z_s^T_s is within (1 + eta)^(sum T) - 1 of the exact one, relatively (the same for
    the real powers with eta = u). Underflow adds an absolute error of at most a few times
    2^-1022 per product, never amplified (every factor has modulus <= 1 + 1e-12 here), so at
    most UNDERFLOW_SLACK in all for any realistic number of products.

    In numpy (concrete step counts) each product is formed only for the stages whose bit is
    set, and the squarings stop at the largest count's top bit: the same products as the
    selects and the surplus squarings of the unrolled JAX loop, without the discarded ones."""
    xp = _xp.namespace(z, hi_base, steps)
    t = steps.astype(xp.int64)
    if xp is np:
        acc, acc_hi, base, base_hi = np.ones_like(z), np.ones_like(hi_base), z.copy(), hi_base.copy()
        for b in range(int(np.max(t)).bit_length()):
            if b:
                np.multiply(base, base, out=base)
                np.multiply(base_hi, base_hi, out=base_hi)
            bit = ((t >> b) & 1).astype(bool)
            if np.all(bit):
                np.multiply(acc, base, out=acc)
                np.multiply(acc_hi, base_hi, out=acc_hi)
            elif np.any(bit):
                acc[bit] *= base[bit]
                acc_hi[bit] *= base_hi[bit]
        return np.prod(acc, axis=0), np.prod(acc_hi, axis=0)

    def body(b, carry):
        acc, acc_hi, base, base_hi = carry
        bit = ((t >> b) & 1).astype(bool)[:, None]
        acc = xp.where(bit, acc * base, acc)
        acc_hi = xp.where(bit, acc_hi * base_hi, acc_hi)
        return acc, acc_hi, base * base, base_hi * base_hi

    carry = (xp.ones_like(z), xp.ones_like(hi_base), z, hi_base)
    if isinstance(nbits, int):  # unrolled: one fused elementwise kernel (a loop would store every iterate)
        for b in range(nbits):
            carry = body(b, carry)
    else:
        carry = jax.lax.fori_loop(0, nbits, body, carry)
    acc, acc_hi = carry[0], carry[1]
    return xp.prod(acc, axis=0), xp.prod(acc_hi, axis=0)


def _compose_one(n: int, step: float, pmf, inf_mass, k_lo, steps, k_hi_eff, start, lambdas, lm_pos, lm_neg, nbits=None):
    """Compose stages s = 1..S (PMF pmf[s] on grid k_lo[s] + j, repeated steps[s] times) into the
    window of n grid points from index ``start``. Chernoff data (lambdas, lm_pos, lm_neg) from
    :func:`chernoff_log_mgf` bound the mass outside it. Returns (pmf_out (n,) clipped at 0, the
    exact mass at +inf, tau_up, tau_lo, R); :func:`pessimistic_window` and
    :func:`remove_from_top` make the two sides from them. ``nbits``: at least the bit length of
    every steps[s] (computed here if not given; a batch passes its largest)."""
    xp = _xp.namespace(pmf, inf_mass, k_lo, steps, k_hi_eff, start, lambdas, lm_pos, lm_neg)
    fin = xp.sum(pmf, axis=-1)
    tot = fin + inf_mass
    offset = xp.sum(steps.astype(xp.int64) * k_lo)
    top_support = xp.sum(steps.astype(xp.int64) * k_hi_eff)  # highest reachable finite loss index
    finite_total = xp.exp(xp.sum(steps * xp.log(fin)))
    tau_lo = xp.where(start <= offset, 0.0, xp.min(xp.exp(lm_neg + lambdas * (start - 1) * step)))
    tau_up = xp.where(start + n - 1 >= top_support, 0.0, xp.min(xp.exp(lm_pos - lambdas * (start + n) * step)))
    tau_up = xp.minimum(tau_up, finite_total)
    tau_lo = xp.minimum(tau_lo, finite_total)
    if nbits is None and xp is jnp:
        nbits = 64 - jax.lax.clz(jnp.max(steps.astype(jnp.int64)))

    # z_s^T_s by repeated squaring (complex products only: no log / angle / exp per frequency),
    # then the shift to the window as an exact rotation of the output
    z = xp.fft.rfft(pmf, n=n, axis=-1)  # (S, n/2+1)
    gamma = fft_error_constant(n)
    err_fwd = gamma * fin[:, None]  # per component of each stage's transform (module docstring)
    hi_base = xp.abs(z) * (1 + 4 * UNIT_ROUNDOFF) + err_fwd  # >= |exact transform|
    w, hi = _powers_by_squaring(z, hi_base, steps, nbits)
    circular = xp.fft.irfft(w, n=n)
    shift = xp.mod(start - offset, n)  # out[i] = circular[(i + shift) mod n]
    out = _xp.rotate(circular, shift)

    # round-off bound R on ||out - exact circular convolution||_1 (module docstring). Per
    # frequency, |exact^T - computed^T| <= |prod (|z_s| + e_s)^T_s - prod |z_s|^T_s| (the forward
    # FFT errors e_s) + rel |computed| (the powering); the first is f(1) - f(0) for
    # f(t) = prod_s (|z_s| + t e_s)^T_s, increasing and convex, so <= f'(1) = f(1) sum_s T_s e_s / (|z_s| + e_s).
    total_steps = xp.sum(steps)
    rel_pow = xp.expm1(total_steps * math.log1p(COMPLEX_MUL_ETA))
    pow_part = hi * xp.sum(steps[:, None] * xp.where(hi_base > 0, err_fwd / xp.where(hi_base > 0, hi_base, 1.0), 0.0), axis=0)
    abs_w = xp.abs(w)
    dw = pow_part + abs_w * (rel_pow / (1.0 - rel_pow)) + UNDERFLOW_SLACK
    weights = _xp.set_at(_xp.set_at(xp.full(n // 2 + 1, 2.0), 0, 1.0), -1, 1.0)  # full-spectrum l1 of a Hermitian vector
    # the bound's own arithmetic: sums of n positive terms and powers computed like w (relative
    # error <= rel_pow + n u each), absorbed by the final factor
    slack = 1.0 + 2.0 * rel_pow + 2.0 * n * UNIT_ROUNDOFF + 1e-6
    roundoff = (xp.sum(weights * dw) + gamma * xp.sum(weights * abs_w)) * slack
    roundoff = xp.where(rel_pow < 0.5, roundoff, xp.inf)  # beyond ~1e15 steps: no bound, delta = 1

    # one step of one stage is its own composition: no FFT, no round-off (the Gaussian
    # mechanism's PLD then keeps its exact discretisation)
    single = total_steps == 1
    if xp is jnp or single:  # (in numpy only where it is used)
        direct = _xp.take_fill(pmf[0], start - k_lo[0] + xp.arange(n), 0.0)
        out = xp.where(single, direct, out)
        roundoff = xp.where(single, 0.0, roundoff)

    out = xp.maximum(out, 0.0)
    # mass at +inf: tot^T (1 - (fin/tot)^T), with log(fin/tot) = -log1p(inf/fin) taken from the
    # ratio itself: log(fin) - log(tot) of two numbers within 1e-16 of 1 rounds a stage's
    # +inf mass below one ulp of 1 (1.1e-16, e.g. a Gaussian's 5e-17 above its grid) to 0,
    # which put the pessimistic delta below the exact one at small deltas (issue 38). The
    # factor 1 + 1e-12 covers the few roundings of this formula (relative <= (S + 4) u).
    log_keep = xp.where(fin > 0, -xp.log1p(inf_mass / xp.where(fin > 0, fin, 1.0)), -xp.inf)
    inf_out = xp.exp(xp.sum(steps * xp.log(tot))) * (-xp.expm1(xp.sum(steps * log_keep))) * (1.0 + 1e-12)
    return out, inf_out, tau_up, tau_lo, roundoff


_TILT_EXP_MIN = -700.0  # tilt factors below e^-700 are raised to it (an upper bound stays one)


TILT_GRID = 2.0 ** (np.arange(-10, 21) / 2.0)  # candidate tilts lambda: 2^-5 .. 2^10 by factors of sqrt(2)
TILT_BLOCK = 128  # grid points per block of the MGF estimate that picks the tilt
TILT_MIN_BLOCKS = 256


def tilt_order(pmf, k_lo, steps, step: float, tail):
    """The tilt lambda (from TILT_GRID) whose Chernoff bound exp(T log M(lambda) - lambda l) on
    the composed upper tail reaches ``tail`` at the lowest loss l: the tilted composition's
    mass then sits about where delta is ``tail``. Any lambda gives a valid bound
    (:func:`tilted_upper_bound`), so the MGF here is an estimate, from block masses at the
    blocks' lower ends (a 128th of the work of the exact sums)."""
    xp = _xp.namespace(pmf, k_lo, steps, tail)
    stages, width = pmf.shape
    # at least TILT_MIN_BLOCKS blocks: one block spanning a short, coarse PMF would read its
    # whole mass at the lowest loss and pick a far too steep tilt
    b = max(1, min(TILT_BLOCK, width // TILT_MIN_BLOCKS))
    pad = (-width) % b
    blocks = xp.sum(xp.pad(pmf, ((0, 0), (0, pad))).reshape(stages, -1, b), axis=-1)  # (S, nb)
    block_loss = (k_lo[:, None] + b * xp.arange(blocks.shape[-1])[None, :]) * step
    with jax.numpy_dtype_promotion("standard"):
        log_blocks = xp.where(blocks > 0, xp.log(xp.where(blocks > 0, blocks, 1.0)), -xp.inf)
        log_m = _xp.logsumexp(log_blocks[:, :, None] + TILT_GRID * block_loss[:, :, None], axis=1)  # (S, G)
        reach = (xp.sum(steps[:, None] * log_m, axis=0) - xp.log(tail)) / TILT_GRID
    reach = xp.where(xp.isfinite(reach), reach, xp.inf)
    return xp.asarray(TILT_GRID)[xp.argmin(reach)]


def tilted_upper_bound(n: int, step: float, pmf, k_lo, steps, k_hi_eff, start, lam, nbits):
    """Upper bounds on the exact composed masses of the window (n points from ``start``) from
    the composition of the tilted stage PMFs a_s,j = p_s,j e^{lambda (l_j - top_s)} / m_s
    (m_s their sum, top_s the stage's highest loss): the composed mass at l_i is
    ``a^{*T}_i F_i`` with ``F_i = exp(sum_s T_s (log m_s + lambda top_s) - lambda l_i)``, so the
    tilted composition's pointwise bound (R~ / n, R~ from :func:`_compose_one`) becomes
    R~ F_i / n: relative to the mass near the tilt's centre, not to the total (module docstring).

    Rounding of the inputs: each a_s,j is within 4u of its exact value (exp, product,
    quotient), i.e. (1 + 4u)^T relatively after T-fold composition of positive terms; factors
    below e^-700 are raised to it (the inputs only grow); the exponent of F_i carries an
    absolute error below 8 (S + 2) u times the sum of its terms' magnitudes. Both are added
    as slack to the exponent. Where F_i exceeds e^700 the bound is +inf (the untilted
    composition's bound holds there)."""
    xp = _xp.namespace(pmf, k_lo, steps, k_hi_eff, start, lam)
    stages, width = pmf.shape
    losses = (k_lo[:, None] + xp.arange(width)[None, :]) * step
    top = k_hi_eff * step
    # <= 0 on each stage's grid (points beyond its top carry no mass): no overflow
    factor = xp.exp(xp.clip(lam * (losses - top[:, None]), _TILT_EXP_MIN, 0.0))
    tilted = pmf * factor
    mass = xp.sum(tilted, axis=-1)
    mass = xp.where(mass > 0, mass, 1.0)
    tilted = tilted / mass[:, None]
    no_tail = xp.full((1,), xp.inf)  # the window is the untilted one's; the tails are not needed here
    out, _, _, _, roundoff = _compose_one(n, step, tilted, xp.zeros(stages), k_lo, steps, k_hi_eff, start,
                                          xp.ones(1), no_tail, no_tail, nbits)
    t = steps.astype(pmf.dtype)
    log_mass = xp.log(mass)
    losses_out = (start + xp.arange(n)) * step
    log_f = xp.sum(t * (log_mass + lam * top)) - lam * losses_out
    magnitude = xp.sum(t * xp.abs(log_mass)) + xp.abs(lam) * xp.sum(t * xp.abs(top)) + xp.abs(lam * losses_out) + 1.0
    slack = xp.sum(t) * 4.0 * UNIT_ROUNDOFF * 1.01 + 8.0 * (stages + 2) * UNIT_ROUNDOFF * magnitude
    exponent = log_f + slack
    bound = (out + roundoff / n) * xp.exp(xp.minimum(exponent, 700.0))
    return xp.where((exponent <= 700.0) & xp.isfinite(roundoff), bound, xp.inf)


def pessimistic_window(out, inf_out, tau_up, tau_lo, roundoff, tilted_bound=None):
    """The pessimistic composed PLD on the window: each mass raised to an upper bound on its
    exact value (the computed one, clipped at 0, plus R / n; or ``tilted_bound`` where that is
    smaller), the mass below the window (tau_lo) on its lowest point, the mass above it
    (tau_up) at +inf (module docstring). Returns (pmf, mass at +inf); without a finite
    round-off bound (beyond ~1e15 steps) delta is 1 everywhere."""
    xp = _xp.namespace(out, inf_out, tau_up, tau_lo, roundoff, tilted_bound)
    n = out.shape[-1]
    upper = out + roundoff / n
    if tilted_bound is not None:
        upper = xp.minimum(upper, tilted_bound)
    upper = _xp.add_at(upper, 0, tau_lo)
    bounded = xp.isfinite(roundoff)
    return xp.where(bounded, upper, 0.0), xp.where(bounded, xp.minimum(inf_out + tau_up, 1.0), 1.0)


def remove_from_top(pmf, mass):
    """The optimistic composed PLD: ``mass`` (tau_lo + R) taken off the highest losses
    (numpy, host side). For eps/delta queries alone, subtracting ``mass`` from delta is
    equivalent and cheaper (every delta(eps) drops by at most the removed mass)."""
    pmf = np.asarray(pmf, dtype=np.float64)
    above = np.cumsum(pmf[..., ::-1], axis=-1)[..., ::-1] - pmf
    return pmf - np.clip(np.asarray(mass)[..., None] - above, 0.0, pmf)


EPS_BLOCK = 1024


def epsilon_blocked(pmf, start, inf_mass, step: float, target, parallel: bool = False):
    """The same eps(delta) as :func:`_epsilon_one` in O(n) with one matrix-vector product: the
    profile at block starts from block sums, then exactly inside the one block where it
    crosses the target (XLA's cumulative sums over a long axis are slow on CPU).

    ``parallel``: the two decayed suffix sums by associative scans (log depth) instead of
    sequential ones: a sequential scan is a loop of ~1000 iterations, each a few kernel
    launches on an accelerator, while a CPU runs it faster than the scan tree. Both sum the
    same positive terms; they differ by rounding alone (tested)."""
    suffix = _suffix_decayed if parallel else _suffix_decayed_scan
    n = pmf.shape[-1]
    b = min(EPS_BLOCK, n)
    nb = n // b
    blocks = pmf.reshape(nb, b)
    decay_in = jnp.exp(-jnp.arange(b) * step)
    blk_mass = jnp.sum(blocks, axis=-1)
    blk_dec = blocks @ decay_in  # sum_i p_i e^{-(i - b0) h} within each block
    s_blk = jnp.cumsum(blk_mass[::-1])[::-1]  # S at each block start
    h_blk = suffix(blk_dec, jnp.exp(-b * step))  # H at each block start
    prof_blk = inf_mass + jnp.maximum(s_blk - h_blk, 0.0)  # delta(l_{b0})
    ok = jnp.concatenate([prof_blk, inf_mass[None]]) <= target  # the end of the window: delta = inf
    first_ok = jnp.argmax(ok)
    any_ok = jnp.any(ok)
    # the crossing lies in block first_ok - 1 (or below the window if first_ok == 0)
    blk = jnp.maximum(first_ok - 1, 0)
    seg = jax.lax.dynamic_slice(pmf, (blk * b,), (b,))
    s_next = jnp.where(blk + 1 < nb, s_blk[jnp.minimum(blk + 1, nb - 1)], 0.0)
    h_next = jnp.where(blk + 1 < nb, h_blk[jnp.minimum(blk + 1, nb - 1)], 0.0)
    # inside the block: D_k by the positive recurrence, seeded with D at the next block's start
    d_next = jnp.maximum(s_next - h_next, 0.0)
    s_in = jnp.cumsum(seg[::-1])[::-1] + s_next  # S_k, k in block
    s_in_next = jnp.concatenate([s_in[1:], s_next[None]])
    c = -jnp.expm1(-step) * s_in_next
    c = c.at[-1].add(jnp.exp(-step) * d_next)
    d_in = suffix(c, jnp.exp(-step))
    prof_in = inf_mass + d_in
    prof_next = inf_mass + d_next
    ok_in = prof_in <= target
    kk = jnp.where(jnp.any(ok_in), jnp.argmax(ok_in), b)  # first point in the block (b: the next block start)
    prof_ext = jnp.concatenate([prof_in, prof_next[None]])
    prev = prof_ext[jnp.maximum(kk - 1, 0)]
    cur = prof_ext[kk]
    frac = jnp.clip((prev - target) / jnp.maximum(prev - cur, 1e-300), 0.0, 1.0)
    frac = jnp.where(kk == 0, 1.0, frac)  # block-level and in-block profiles disagree by rounding: take the block start
    eps_in = (start + blk * b + kk - 1) * step + jnp.log1p(frac * jnp.expm1(step))
    # below the window: delta(eps) = inf + S_0 - e^{eps - l_0} H_0
    arg = (inf_mass + s_blk[0] - target) / h_blk[0]
    eps_below = start * step + jnp.log(jnp.where(arg > 0, arg, 1.0)) + jnp.where(arg > 0, 0.0, -jnp.inf)
    eps = jnp.where(first_ok == 0, eps_below, eps_in)
    eps = jnp.where(any_ok & (inf_mass <= target), eps, jnp.inf)
    return jnp.maximum(eps, 0.0)


def _epsilon_one(pmf, start, inf_mass, step: float, delta):
    """Smallest eps >= 0 with delta(eps) <= target, exact for this discrete PLD: the first grid
    point where the profile is below the target, then the root of the profile on the cell
    before it (linear in e^eps there)."""
    prof, s = profile_on_grid(pmf, inf_mass, step)  # prof[k] = delta(l_k)
    losses0 = start * step

    def one(target):
        ok = prof <= target
        kk = jnp.argmax(ok)
        any_ok = jnp.any(ok)
        # cell (l_{kk-1}, l_kk]: delta linear in t = e^eps from prof[kk-1] to prof[kk]
        prev = prof[jnp.maximum(kk - 1, 0)]
        frac = jnp.clip((prev - target) / jnp.maximum(prev - prof[kk], 1e-300), 0.0, 1.0)
        eps_in = (start + kk - 1) * step + jnp.log1p(frac * jnp.expm1(step))
        # below the window (kk == 0): delta(eps) = inf + S_0 - e^{eps - l_0} H_0, H_0 = sum p_i e^{-(i)h}
        h_0 = jnp.sum(pmf * jnp.exp(-jnp.arange(pmf.shape[-1]) * step))
        arg = (inf_mass + s[0] - target) / h_0
        eps_below = losses0 + jnp.log(jnp.where(arg > 0, arg, 1.0)) + jnp.where(arg > 0, 0.0, -jnp.inf)
        eps = jnp.where(kk == 0, eps_below, eps_in)
        eps = jnp.where(any_ok & (inf_mass <= target), eps, jnp.inf)
        return jnp.maximum(eps, 0.0)

    return jax.vmap(one)(jnp.atleast_1d(delta))


def _delta_one(pmf, start, inf_mass, step: float, epsilon):
    """delta(eps) of this discrete PLD at each eps (exact: linear in e^eps between grid points)."""
    prof, s = profile_on_grid(pmf, inf_mass, step)
    n = pmf.shape[-1]
    h_0 = jnp.sum(pmf * jnp.exp(-jnp.arange(n) * step))

    def one(e):
        pos = e / step - start  # fractional index
        k = jnp.floor(pos).astype(jnp.int64)
        kc = jnp.clip(k, 0, n - 2)
        t_frac = jnp.expm1(e - (start + kc) * step) / jnp.expm1(step)  # position in t within the cell
        inside = prof[kc] + (prof[kc + 1] - prof[kc]) * jnp.clip(t_frac, 0.0, 1.0)
        below = inf_mass + s[0] - jnp.exp(e - start * step) * h_0
        return jnp.where(k < 0, below, jnp.where(k >= n - 1, inf_mass, inside))

    return jnp.clip(jax.vmap(one)(jnp.atleast_1d(epsilon)), 0.0, 1.0)


# --- the stored object ---------------------------------------------------------------------------
@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class DiscretePLD:
    """A PLD on a grid: ``pmf[..., j]`` is the mass at loss ``(start[...] + j) * step``,
    ``infinity_mass[...]`` the mass at +inf; leading axes are a batch of configurations."""

    pmf: np.ndarray
    start: np.ndarray
    infinity_mass: np.ndarray
    step: float = dataclasses.field(metadata=dict(static=True))

    @property
    def batch_shape(self) -> tuple:
        return tuple(np.shape(self.infinity_mass))

    def delta(self, epsilon) -> np.ndarray:
        """delta(eps) for each configuration; ``epsilon`` broadcasts against the batch."""
        eps = np.asarray(epsilon, dtype=np.float64)
        prof, s, h0 = _profile_np(self.pmf, self.infinity_mass, self.step)
        shape = np.broadcast_shapes(eps.shape, self.batch_shape)
        n = self.pmf.shape[-1]
        e = np.broadcast_to(eps, shape)
        start = np.broadcast_to(self.start, shape)
        prof = np.broadcast_to(prof, shape + (n,))
        pos = e / self.step - start
        k = np.floor(pos).astype(np.int64)
        kc = np.clip(k, 0, max(n - 2, 0))
        t_frac = np.clip(np.expm1(e - (start + kc) * self.step) / math.expm1(self.step), 0.0, 1.0)
        p_k = np.take_along_axis(prof, kc[..., None], axis=-1)[..., 0]
        p_k1 = np.take_along_axis(prof, np.minimum(kc + 1, n - 1)[..., None], axis=-1)[..., 0]
        inside = p_k + (p_k1 - p_k) * t_frac
        inf = np.broadcast_to(self.infinity_mass, shape)
        with np.errstate(over="ignore"):
            below = inf + np.broadcast_to(s[..., 0], shape) - np.exp(np.minimum(e - start * self.step, 700.0)) * np.broadcast_to(h0, shape)
        out = np.where(k < 0, below, np.where(k >= n - 1, inf, inside))
        return np.clip(out, 0.0, 1.0)

    def epsilon(self, delta) -> np.ndarray:
        """Smallest eps >= 0 with delta(eps) <= ``delta``, exact for this discrete PLD (the
        profile is linear in e^eps between grid points), in O(n) (:func:`_epsilon_np`)."""
        d = np.asarray(delta, dtype=np.float64)
        shape = np.broadcast_shapes(d.shape, self.batch_shape)
        n = self.pmf.shape[-1]
        rows = np.broadcast_to(np.arange(int(np.prod(self.batch_shape, dtype=np.int64))).reshape(self.batch_shape), shape)
        with np.errstate(divide="ignore", invalid="ignore", under="ignore"):
            eps = _epsilon_np(np.asarray(self.pmf, dtype=np.float64).reshape(-1, n), np.asarray(self.start).reshape(-1),
                              np.asarray(self.infinity_mass, dtype=np.float64).reshape(-1), self.step, rows.reshape(-1),
                              np.broadcast_to(d, shape).reshape(-1))
        return eps.reshape(shape)


def _epsilon_np(pmf, start, inf, step: float, rows, target):
    """eps(target[j]) of the PLDs ``pmf[rows[j]]`` (numpy; pmf (R, n), start and inf (R,)), as
    :func:`epsilon_blocked` with the profile from positive terms alone (no difference S - H):
    with blocks of b points starting at b_j, the profile above the mass at +inf at b_j is

        D_j = W_j + e^{-b h} D_{j+1} + (1 - e^{-b h}) S_{j+1},   W_j = sum_{0<i<b} p_{b_j+i} (1 - e^{-i h})

    (S_j the mass from b_j up), one matrix-vector product and a decayed suffix sum over the
    blocks; inside the one block where the profile crosses the target, the recurrence of
    :func:`profile_on_grid` point by point, seeded with D at the next block's start. The
    same numbers as the full profile up to rounding, in O(n) instead of O(n log n)."""
    n = pmf.shape[-1]
    b = min(EPS_BLOCK, n)
    pad = (-n) % b
    blocks = np.pad(pmf, ((0, 0), (0, pad))).reshape(pmf.shape[0], -1, b)  # (R, nb, b)
    nb = blocks.shape[1]
    s_blk = np.cumsum(blocks.sum(axis=-1)[:, ::-1], axis=-1)[:, ::-1]  # S at each block start
    s_after = np.concatenate([s_blk[:, 1:], np.zeros((s_blk.shape[0], 1))], axis=-1)
    within = np.einsum("rji,i->rj", blocks, -np.expm1(-np.arange(b) * step))  # einsum's loop, not BLAS (_xp.matmul_exact)
    d_blk = _suffix_decayed_np(within - math.expm1(-b * step) * s_after, b * step)  # D at each block start
    # per query: the first block start where delta <= target (nb: the end, where delta = inf)
    prof_blk = inf[rows, None] + np.concatenate([d_blk[rows], np.zeros((rows.size, 1))], axis=-1)
    first_ok = np.argmax(prof_blk <= target[:, None], axis=-1)
    blk = np.maximum(first_ok - 1, 0)  # the crossing lies in this block (below the window if first_ok == 0)
    q = np.arange(rows.size)
    seg = blocks[rows, blk]  # (Q, b)
    nxt = np.minimum(blk + 1, nb - 1)
    has_next = blk + 1 < nb
    s_next = np.where(has_next, s_blk[rows, nxt], 0.0)
    d_next = np.where(has_next, d_blk[rows, nxt], 0.0)
    s_in = np.cumsum(seg[:, ::-1], axis=-1)[:, ::-1] + s_next[:, None]  # S_k, k in the block
    c = -math.expm1(-step) * np.concatenate([s_in[:, 1:], s_next[:, None]], axis=-1)
    c[:, -1] += math.exp(-step) * d_next
    prof_in = inf[rows, None] + np.concatenate([_suffix_decayed_np(c, step), d_next[:, None]], axis=-1)  # (Q, b + 1)
    ok_in = prof_in[:, :-1] <= target[:, None]
    kk = np.where(np.any(ok_in, axis=-1), np.argmax(ok_in, axis=-1), b)  # b: the next block's start
    prev = prof_in[q, np.maximum(kk - 1, 0)]
    cur = prof_in[q, kk]
    frac = np.clip((prev - target) / np.maximum(prev - cur, 1e-300), 0.0, 1.0)
    frac = np.where(kk == 0, 1.0, frac)  # block-level and in-block profiles disagree by rounding: take the block start
    eps = (start[rows] + blk * b + kk - 1) * step + np.log1p(frac * math.expm1(step))
    below = first_ok == 0  # delta(eps) = inf + S_0 - e^{eps - l_0} H_0 below the window's first point
    if np.any(below):
        r = rows[below]
        h0 = np.einsum("ri,i->r", pmf[r], np.exp(-np.arange(n) * step))
        arg = (inf[r] + s_blk[r, 0] - target[below]) / h0
        eps[below] = start[r] * step + np.where(arg > 0, np.log(np.where(arg > 0, arg, 1.0)), -np.inf)
    eps = np.where(inf[rows] <= target, eps, np.inf)
    return np.maximum(eps, 0.0)


def _suffix_decayed_np(c: np.ndarray, step: float) -> np.ndarray:
    """y_k = sum_{i >= k} c_i e^{-(i - k) h} along the last axis, in numpy: the scan of
    :func:`_suffix_decayed` by doubling (after pass m, y_k sums its next 2^m terms), so
    ceil(log2 n) vectorised passes, each term added with a positive weight (no cancellation;
    a tree of sums, so round-off grows with log n, not n). Used instead of scipy.signal.lfilter,
    whose import costs 0.3 s, more than this takes at 2^20 points."""
    y = np.array(c, dtype=np.float64, copy=True)
    n = y.shape[-1]
    shift = 1
    with np.errstate(under="ignore"):
        while shift < n:
            # e^{-shift h} underflows to 0 only where it is below 1e-308: the terms it drops are
            # that small against c_k itself (c does not grow with k: a suffix sum times 1 - e^{-h})
            y[..., :-shift] += math.exp(-shift * step) * y[..., shift:]
            shift *= 2
    return y


def _profile_np(pmf, inf_mass, step):
    """(delta at every grid point, suffix sums S, H_0 = sum_i p_i e^{-i h}) in numpy: the
    positive recurrence of :func:`profile_on_grid`."""
    pmf = np.asarray(pmf, dtype=np.float64)
    s = np.cumsum(pmf[..., ::-1], axis=-1)[..., ::-1]
    s_next = np.concatenate([s[..., 1:], np.zeros_like(s[..., :1])], axis=-1)
    c = -math.expm1(-step) * s_next
    d = _suffix_decayed_np(c, step)
    with np.errstate(under="ignore"):
        h0 = np.einsum("...i,i->...", pmf, np.exp(-np.arange(pmf.shape[-1]) * step))  # not BLAS (_xp.matmul_exact)
    return np.asarray(inf_mass)[..., None] + d, s, h0


@jax.jit
def _delta_batch(pmf, start, inf, eps, step):
    return jax.vmap(lambda p, s, i, e: _delta_one(p, s, i, step, e)[0])(pmf, start, inf, eps)


@jax.jit
def _epsilon_batch(pmf, start, inf, delta, step):
    pad = (-pmf.shape[-1]) % EPS_BLOCK if pmf.shape[-1] > EPS_BLOCK else 0
    pmf = jnp.pad(pmf, ((0, 0), (0, pad)))
    return jax.vmap(lambda p, s, i, d: epsilon_blocked(p, s, i, step, d))(pmf, start, inf, delta)
