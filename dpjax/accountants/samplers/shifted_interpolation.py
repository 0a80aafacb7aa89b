"""Shifted-interpolation GDP bounds for the released last iterate of noisy (projected) GD.

The update (full, cyclic, reshuffled or Poisson batches B_t):

    theta_{t+1} = Pi_K(theta_t - eta (grad F_B(theta_t) + Z_t)),   Z_t ~ N(0, sigma^2 I_d),

F_B the mean over the batch of per-record losses f_i, D and D' differing in one record with
sup_theta ||grad f_i(theta) - grad f'_i(theta)|| <= Delta (``gradient_sensitivity``), every
F_B m-strongly convex and M-smooth (m = 0 allowed), K convex with diameter D (or R^d).

The argument (Bok, Su & Altschuler, ICML 2024, "Shifted interpolation for differential
privacy", §3–4; in Rényi form Feldman, Mironov, Talwar & Thakurta 2018, "Privacy amplification
by iteration", Thm 22). For eta <= 2/M the gradient step is c-Lipschitz with

    c = max(|1 - eta m|, |1 - eta M|)        (formed as 1 - c = min(1 - |1 - eta m|, 1 - |1 - eta M|)),

and a projection keeps it so. On both data sets, with the same batches, step t moves the two
chains' means apart by at most s_t = eta Delta / b when the differing record is in B_t (0
otherwise). Pick a time tau and amounts a_tau, ..., a_{T-1} >= 0 that walk an interpolated
process from D''s chain (at distance z_tau from D's at time tau) onto D's chain by time T:

    z_{t+1} = c z_t + s_t - a_t >= 0,    z_T = 0.

Then T(theta_T on D, theta_T on D') >= G_mu with mu^2 = sum_t (a_t / (eta sigma))^2: each
a_t is paid by that step's Gaussian noise as one Gaussian mechanism, and the rest is
post-processing. z_0 = 0 (same start); z_tau <= D for tau >= 1 on a set of diameter D. The
papers' closed forms are particular choices of (tau, a); here the amounts are optimised:
minimising sum a_t^2 under the walk's constraints is, with weights W_t = c^(T-1-t), the
problem "pay the weighted debts (c^(T-tau) z_tau and W_t s_t) with weighted payments
W_t a_t, never paying a debt before it is incurred, at least cost sum (W_t a_t)^2 / W_t^2".
Its solution pays at a rate r = W_t a_t / W_t^2 that is constant on blocks of steps; a block
that pools the debts of several uses of the record is feasible exactly when no prefix of
it has paid more than it owed (prefix averages >= the block's rate). Every feasible
blocking is a valid schedule, so the minimum over them is a valid bound; the optimum (the
isotonic "pool adjacent violators" blocking) is among them. With the uses of the record
c-geometric, the blocks between uses have decreasing rates (their debts are discounted
more than their payment capacity), so they pool into one closed form and four blocks
remain: [tau's use with the debt z_tau] [the full periods after it] [the last, possibly
shorter, period] [the final step].

Schedules of the differing record (worst case over its position; uses counted back from
the last step T-1):

* ``full``: every step (one period = 1 step) — Bok et al.'s NoisyGD. On a strongly convex
  quadratic the bound is exact: mu = (Delta / (n sigma)) sqrt((1+c)/(1-c) (1-c^T)/(1+c^T)).
* ``cyclic`` (fixed order, period l = ceil(n / b)): uses exactly l apart. A record at an
  earlier position is the same chain observed earlier and then post-processed by steps the
  two data sets share, so the last position is the worst (Bok et al.'s NoisyCGD).
* ``shuffled`` (a fresh order each epoch): one use per epoch window, anywhere in it. Moving
  a debt earlier never raises the optimum (a plan for the later debt pays the earlier one
  with the same payments trimmed), so the latest positions — each window's end — bound
  every order; the law is a mixture over orders, covered by joint convexity.
* ``poisson``: the record may be in any step; conditionally on the batches the ``full``
  schedule bounds the pair, and the mixture over batches inherits it. No amplification by
  subsampling is claimed here (sound, loose; :mod:`.subsampled_interpolation` adds it); b is
  the expected batch size q n that normalises the batch sum, and M must bound the curvature of
  every batch the run can draw.

Numerics: powers of c as exp(k log c) with log c = log1p(-(1 - c)) and 1 - c formed
directly, geometric sums by expm1 ratios (exact limits at c = 1), all in float64.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

BATCHINGS = ("full", "cyclic", "shuffled", "poisson")
# internal (from a sampler): "sampled", fixed-size batches drawn afresh each step (any step may hold
# the record); "cyclic-random", one secret uniformly random order used every epoch
_INTERNAL_BATCHINGS = BATCHINGS + ("sampled", "cyclic-random")
_MIN_LOG_C = -700.0  # c >= e^-700: replacing a smaller c by this larger one only loosens the bound
_DEBT_CANDIDATES = 128  # log-spaced restart times tau tried when a diameter is given (any choice is valid)


class Schedule(NamedTuple):
    """Uses of the differing record, counted back from the last step: ``uses`` U in total,
    at m = 0 (the last step), m = r, r + l, r + 2 l, ... (``period`` l, ``last_gap`` r)."""

    uses: np.ndarray
    period: np.ndarray
    last_gap: np.ndarray


def gap_to_one(step_size, smoothness, strong_convexity) -> np.ndarray:
    """1 - c for c = max(|1 - eta m|, |1 - eta M|), formed without cancellation: 1 - |1 - x| is
    x for x <= 1 and 2 - x above. Negative where eta M > 2 (the step expands)."""
    eta = np.asarray(step_size, dtype=np.float64)
    big = eta * np.asarray(smoothness, dtype=np.float64)
    small = eta * np.asarray(strong_convexity, dtype=np.float64)

    def one_minus_abs(x):
        return np.where(x <= 1.0, x, 2.0 - x)

    return np.minimum(one_minus_abs(small), one_minus_abs(big))


def schedule(batching: str, steps, dataset_size, batch_size) -> Schedule:
    """The worst-case schedule of uses (see the module docstring)."""
    t = np.asarray(steps, dtype=np.int64)
    if batching in ("full", "poisson", "sampled"):
        return Schedule(t, np.ones_like(t), np.ones_like(t))
    n = np.asarray(dataset_size, dtype=np.int64)
    b = np.asarray(batch_size, dtype=np.int64)
    period = -(-n // b)  # steps per epoch, ceil(n / b)
    uses = -(-t // period)  # windows the T steps touch
    if batching in ("cyclic", "cyclic-random"):
        return Schedule(uses, period, period)
    # shuffled: uses at the ends of the windows; the last one at step T - 1
    last_gap = t - (uses - 1) * period
    return Schedule(uses, period, np.where(uses > 1, last_gap, period))


def _geometric(count, log_ratio):
    """sum_{i=1}^{count} e^(i log_ratio) for log_ratio <= 0 (count >= 0; exact limit count at 0)."""
    count = np.asarray(count, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        ratio = np.exp(log_ratio) * np.expm1(count * log_ratio) / np.expm1(log_ratio)
    return np.where(log_ratio == 0.0, count, np.where(count == 0, 0.0, ratio))


def _blocks(sched: Schedule, log_c, rho, debt, uses_after, tail=0.0):
    """(X, V) of the four blocks for restart at the use with ``uses_after`` uses from it to the
    end (1 <= uses_after <= U), with debt ``debt`` (noise units) at the restart; X = weighted
    debt, V = sum of W_t^2 over the block's steps; empty blocks have X = V = 0. ``tail``: steps
    after the last use (it is at m = tail); every other use is then ``tail`` steps older too."""
    L, lp, r = log_c, sched.period.astype(np.float64), sched.last_gap.astype(np.float64)
    u = np.asarray(uses_after, dtype=np.float64)
    tail = np.asarray(tail, dtype=np.float64)
    zero = np.zeros(np.broadcast_shapes(np.shape(L), np.shape(u), np.shape(rho), np.shape(debt), np.shape(tail)))
    # the final step: the last use, m = 0
    x_last, v_last = rho + zero, 1.0 + zero
    # only the final step (u = 1): the restart is at the last use itself
    x_last = np.where(u == 1, rho + debt * np.exp(L), x_last)
    # u = 2: restart at the second-to-last use (m = r), its block covers m = 1..r
    two = u == 2
    x_part = np.where(u >= 2, rho * np.exp(r * L), 0.0) + np.where(two, debt * np.exp((r + 1) * L), 0.0)
    v_part = np.where(u >= 2, _geometric(r, 2 * L), 0.0)
    # u >= 3: the restart's block (one full period), then k = u - 3 full periods, then the partial
    k = np.maximum(u - 3, 0.0)
    more = u >= 3
    m_first = r + (k + 1) * lp
    x_first = np.where(more, rho * np.exp(m_first * L) + debt * np.exp((m_first + 1) * L), 0.0)
    v_first = np.where(more, np.exp(2 * (r + k * lp) * L) * _geometric(lp, 2 * L), 0.0)
    x_mid = np.where(more, rho * np.exp(r * L) * _geometric(k, lp * L), 0.0)
    v_mid = np.where(more, np.exp(2 * r * L) * _geometric(k * lp, 2 * L), 0.0)
    # the tail: the last block also holds the steps after the last use, and the rest moves back
    s1, s2 = np.exp(tail * L), np.exp(2 * tail * L)
    x_last, v_last = x_last * s1, np.where(tail > 0, v_last + _geometric(tail, 2 * L), v_last)
    blocks = [(x_first * s1, v_first * s2), (x_mid * s1, v_mid * s2), (x_part * s1, v_part * s2), (x_last, v_last)]
    return [(x + zero, v + zero) for x, v in blocks]


def _cost(x, v):
    """x^2 / v; an empty block (x = v = 0) costs 0, and a debt with no step to pay it costs inf."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(v > 0, x * x / np.where(v > 0, v, 1.0), np.where(x > 0, np.inf, 0.0))


def _min_feasible_cost(blocks):
    """min over contiguous poolings of the blocks whose every pooled group is feasible (no prefix
    of a group pays more than it owes: X_prefix V_group >= X_group V_prefix at each inner block
    boundary; inside the decreasing middle run prefix averages are unimodal, so the block
    boundaries are where they are smallest) of sum over groups X_g^2 / V_g."""
    k = len(blocks)
    best = None
    for mask in range(2 ** (k - 1)):  # bit i set: blocks i and i+1 pooled
        total = 0.0
        ok = True
        start = 0
        for end in range(k):
            if end < k - 1 and (mask >> end) & 1:
                continue
            group = blocks[start:end + 1]
            xg = sum(b[0] for b in group)
            vg = sum(b[1] for b in group)
            xp = 0.0
            vp = 0.0
            for b in group[:-1]:
                xp = xp + b[0]
                vp = vp + b[1]
                ok = ok & (xp * vg >= xg * vp * (1.0 - 1e-12))
            total = total + _cost(xg, vg)
            start = end + 1
        cand = np.where(ok, total, np.inf)
        best = cand if best is None else np.minimum(best, cand)
    return best


def _one_use_mu(noise_std, dataset_size, gradient_sensitivity, batching, batch_size):
    """rho = Delta / (b sigma): one use of the record as a Gaussian mechanism (the batch mean moves
    by Delta / b against noise sigma); a shorter last block of an epoch is normalised by its own
    size, so cyclic and shuffled batches take the smallest block (the largest shift)."""
    sigma = np.asarray(noise_std, dtype=np.float64)
    if batching == "full":
        b = np.asarray(dataset_size, dtype=np.float64)
    elif batching in ("poisson", "sampled"):
        b = np.asarray(batch_size, dtype=np.float64)
    else:
        nb = np.asarray(dataset_size, dtype=np.int64)
        bb = np.asarray(batch_size, dtype=np.int64)
        rem = nb % bb
        b = np.where(rem > 0, np.minimum(rem, bb), bb).astype(np.float64)
    return np.asarray(gradient_sensitivity, dtype=np.float64) / (b * sigma)


def _log_contraction(gap):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.maximum(np.log1p(-np.clip(gap, 0.0, 1.0)), _MIN_LOG_C)


def _schedule_mu(sched: Schedule, log_c, rho, debt, tail=0.0) -> np.ndarray:
    """The optimised bound for one schedule (arrays broadcast); ``debt`` = D / (eta sigma) or None;
    ``tail``: steps after the record's last use."""
    shape = np.broadcast_shapes(np.shape(log_c), np.shape(rho), *(np.shape(a) for a in sched),
                                np.shape(debt) if debt is not None else (), np.shape(tail))
    tail = np.broadcast_to(tail, shape)
    U = np.broadcast_to(sched.uses, shape).astype(np.float64)
    sched = Schedule(*(np.broadcast_to(a, shape) for a in sched))
    L = np.broadcast_to(log_c, shape)
    rho_b = np.broadcast_to(rho, shape)
    # restart at time 0 (both chains start together): no debt, all U uses
    best = _min_feasible_cost(_blocks(sched, L, rho_b, 0.0, U, tail))
    if debt is not None:
        debt = np.broadcast_to(debt, shape)
        finite = np.isfinite(debt)
        cands = _restart_candidates(U, debt, rho_b)
        ex = lambda a: a[..., None]  # noqa: E731 - candidates on a trailing axis
        sched_c = Schedule(*(ex(a) for a in sched))
        cost = _min_feasible_cost(_blocks(sched_c, ex(L), ex(rho_b), ex(np.where(finite, debt, 0.0)), cands, ex(tail)))
        cost = np.where(cands <= ex(U) - 1, cost, np.inf)  # a restart after step 0 leaves at most U - 1 uses
        best = np.where(finite, np.minimum(best, np.min(cost, axis=-1)), best)
    return np.where(U > 0, np.sqrt(best), 0.0)


def gdp_mu(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness, strong_convexity=0.0,
           diameter=None, batching: str = "full", batch_size=None) -> np.ndarray:
    """mu of the shifted-interpolation GDP bound (see the module docstring), worst case over the
    record's positions; arguments broadcast.

    Assumes validated input (the entry point :func:`dpjax.accountants.last_iterate_curve`
    checks it). Where eta M > 2 the step is not a contraction and the result is inf (no bound).
    """
    eta = np.asarray(step_size, dtype=np.float64)
    sigma = np.asarray(noise_std, dtype=np.float64)
    rho = _one_use_mu(sigma, dataset_size, gradient_sensitivity, batching, batch_size)
    gap = gap_to_one(eta, smoothness, strong_convexity)
    sched = schedule(batching, steps, dataset_size, batch_size)
    debt = None if diameter is None else np.asarray(diameter, dtype=np.float64) / (eta * sigma)
    mu = _schedule_mu(sched, _log_contraction(gap), rho, debt)
    return np.where(gap >= 0, mu, np.inf)


def position_mixture(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness, strong_convexity=0.0,
                     diameter=None, batch_size=None, order: str = "shuffled", groups: int = 8):
    """(weights, mus), each of shape batch + (groups + 1,): for batches in a random order unknown
    to the adversary, the last iterate is, by joint convexity, at least as private as the mixture
    sum_g weights_g G_{mu_g}: delta(eps) <= sum_g weights_g delta_{mu_g}(eps).

    ``order="shuffled"`` (a fresh uniform order each epoch): conditionally on the record's batch
    in the last (possibly partial, r steps) epoch window, the pair of laws is a mixture over the
    earlier epochs' orders, each bounded by the latest earlier positions (window ends).
    Position p (of l equally likely batches) with p < r: last use m = r - 1 - p steps before the
    end, then uses at r, r + l, ...; p >= r (weight (l - r) / l): no use in the last window,
    uses at r, r + l, .... The steps after the last use are kept (their contraction and noise
    still pay off debt). ``order="random-fixed"`` (one uniform order, the same every epoch, as
    cyclic SGLD draws per chain): given the position p, the uses are p, p + l, ...: the last one
    m = (r - 1 - p) mod l steps before the end, one use fewer when p >= r. The bound is
    non-increasing in m (a debt moved earlier), so the positions are pooled into ``groups``
    log-spaced groups of m, each bounded by its smallest m and its largest number of uses.
    Needs n a multiple of b (equally likely batches); otherwise the worst case alone (weight 1
    on the worst mu)."""
    eta = np.asarray(step_size, dtype=np.float64)
    sigma = np.asarray(noise_std, dtype=np.float64)
    kind = "shuffled" if order == "shuffled" else "cyclic"
    rho = _one_use_mu(sigma, dataset_size, gradient_sensitivity, kind, batch_size)
    gap = gap_to_one(eta, smoothness, strong_convexity)
    L = _log_contraction(gap)
    sched = schedule("shuffled", steps, dataset_size, batch_size)  # U windows, the last one r steps long
    debt = None if diameter is None else np.asarray(diameter, dtype=np.float64) / (eta * sigma)
    shape = np.broadcast_shapes(eta.shape, sigma.shape, rho.shape, L.shape, *(np.shape(a) for a in sched),
                                np.shape(debt) if debt is not None else ())
    U, period, r = (np.broadcast_to(a, shape).astype(np.float64) for a in sched)
    debt_b = None if debt is None else np.broadcast_to(debt, shape)
    equal = np.broadcast_to((np.asarray(dataset_size) % np.asarray(batch_size)) == 0, shape)
    ex = lambda a: np.asarray(a)[..., None]  # noqa: E731 - groups on a trailing axis
    frac = np.linspace(0.0, 1.0, groups)
    if order == "shuffled":
        # last use m in [0, r): group starts m_0 = 0 < m_1 < ... (log-spaced), then "not in the last window"
        span = r
    else:
        # last use m in [0, l): m < r with U uses, m >= r with U - 1
        span = period
    starts = np.floor(np.exp(ex(np.log(np.maximum(span, 1.0))) * frac))
    starts[..., 0] = 0.0
    ends = np.concatenate([starts[..., 1:], ex(span)], axis=-1)
    w_groups = np.maximum(ends - starts, 0.0) / ex(period)
    if order == "shuffled":
        groups_sched = Schedule(ex(U), ex(period), np.maximum(ex(r) - starts, 1.0))
        mu_groups = _schedule_mu(groups_sched, ex(L), ex(rho), None if debt_b is None else ex(debt_b), tail=starts)
        unused = Schedule(U - 1, period, period)  # no use in the last window: the windows before it, r steps back
        mu_rest = np.where(U > 1, _schedule_mu(unused, L, rho, debt_b, tail=r), 0.0)
        weights = np.concatenate([w_groups, ex((period - r) / period)], axis=-1)
    else:
        uses = np.where(starts < ex(r), ex(U), ex(U) - 1.0)  # the group's smallest m has the most uses
        groups_sched = Schedule(uses, ex(period), ex(period))
        mu_groups = np.where(uses > 0, _schedule_mu(groups_sched, ex(L), ex(rho), None if debt_b is None else ex(debt_b),
                                                       tail=starts), 0.0)
        mu_rest = np.zeros(shape)
        weights = np.concatenate([w_groups, ex(np.zeros(shape))], axis=-1)
    mus = np.concatenate([mu_groups, ex(mu_rest)], axis=-1)
    mus = np.where(weights > 0, mus, 0.0)  # empty groups carry no mass
    worst = _schedule_mu(schedule(kind, steps, dataset_size, batch_size), L, rho, debt_b)
    mus = np.where(ex(equal), mus, ex(np.broadcast_to(worst, shape)))
    weights = np.where(ex(equal), weights, np.where(np.arange(weights.shape[-1]) == 0, 1.0, 0.0))
    mus = np.where(ex(gap >= 0), mus, np.inf)
    return weights, mus


def _restart_candidates(uses, debt, rho):
    """Numbers of uses after the restart to try (any choice is valid; these cover 1..U-1
    log-evenly, plus the neighbours of debt / rho, the optimum of the c = 1 full-batch case)."""
    top = np.maximum(uses - 1, 1.0)
    frac = np.linspace(0.0, 1.0, _DEBT_CANDIDATES)
    grid = np.exp(np.log(top)[..., None] * frac)
    with np.errstate(divide="ignore", invalid="ignore"):
        star = np.where(rho > 0, debt / np.where(rho > 0, rho, 1.0), top)
    star = np.clip(np.nan_to_num(star, nan=1.0, posinf=1e300), 1.0, top)
    extra = np.stack([np.floor(star), np.ceil(star), top], axis=-1)
    return np.clip(np.round(np.concatenate([grid, extra], axis=-1)), 1.0, top[..., None])


def exact_quadratic_mu(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, curvature, batching="full",
                       batch_size=None, position=None) -> float:
    """Exact GDP mu of the last iterate of noisy GD on the 1-D quadratic f_i = h theta^2 / 2 - a_i
    theta with |a - a'| = Delta (every iterate Gaussian with the same variance on D and D'):
    |sum over uses of (1 - eta h)^m| eta Delta / b over eta sigma sqrt(sum_{m<T} (1 - eta h)^(2m)).
    Full batch or a fixed order with the differing record at ``position`` (0-based within the
    epoch; default the last). A reference for the tests, by direct summation (O(T))."""
    eta, sigma, T = float(step_size), float(noise_std), int(steps)
    slope = 1.0 - eta * float(curvature)
    m = np.arange(T, dtype=np.float64)
    powers = np.sign(slope) ** m * np.exp(m * math.log(abs(slope))) if slope != 0 else (m == 0).astype(float)
    if batching == "full":
        uses, b = powers, float(dataset_size)
    else:
        period = -(-int(dataset_size) // int(batch_size))
        pos = period - 1 if position is None else int(position)
        k = np.arange(T)
        used = (k % period) == pos
        uses, b = powers[(T - 1 - k)[used]], float(batch_size)
    shift = abs(np.sum(uses)) * eta * float(gradient_sensitivity) / b
    return float(shift / (eta * sigma * math.sqrt(np.sum(powers**2))))


__all__ = ["BATCHINGS", "Schedule", "gap_to_one", "schedule", "gdp_mu", "position_mixture", "exact_quadratic_mu"]
