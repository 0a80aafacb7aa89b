"""Shifted interpolation that sees Poisson subsampling: the last iterate of noisy SGD with Poisson batches.

The update (as :mod:`.shifted_interpolation`): theta' = Pi_K(theta - eta (grad F_B(theta) + Z)),
Z ~ N(0, sigma^2 I), F_B the batch sum over the expected batch size b = q n, each record in B
independently with probability q. Assumptions: every step map x -> x - eta grad F_B(x) is
c-Lipschitz (c = max |1 - eta m|, |1 - eta M| for m-strongly convex, M-smooth batch losses with
eta M <= 2; the projection onto a convex K keeps it so) on both data sets, and the two data
sets' maps differ by at most s = eta Delta / b at every point, and only in steps whose batch
holds the differing record.

The bound (Bok, Su & Altschuler, ICML 2024, "Shifted interpolation for differential privacy",
their noisy SGD with stochastic batches; the argument below is dpjax's own write-up of theirs,
with the subsampled part accounted by a PLD accountant instead of their CLT approximation).
Fix 0 <= tau < T and a split sigma^2 = sigma_1^2 + sigma_2^2 of the noise. Then

    T(theta_T on D, theta_T on D') >= G_{mu_1} (x) f_q^{(x)(T - tau)},

f_q the trade-off of one Poisson-subsampled Gaussian step with noise sigma_2 on the batch mean
(the pair dpjax's PLD accountant composes: add/remove, or replace-one with contributions
bounded by Delta / 2), and

    mu_1 = c^(T - tau) z / (eta sigma_1 sqrt(sum_{k < T - tau} c^(2k))),
    z = min(D, s sum_{k < tau} c^k)   (z = 0 when tau = 0; D = inf without a projection).

Why, in four steps:

1. Steps 0..tau-1, synchronous coupling (same noise, same batches): the chains' distance grows
   by the factor c and by at most s per step, so ||theta_tau - theta'_tau|| <= z surely (and
   <= D, both lying in K).
2. Steps tau..T-1: split each noise draw eta Z_t = W_t + V_t, W ~ N(0, eta^2 sigma_1^2),
   V ~ N(0, eta^2 sigma_2^2). Interpolate (Bok et al.'s shifted interpolated process):
   X~_tau = theta'_tau, X~_{t+1} = lambda_t phi_t(theta_t) + (1 - lambda_t) phi_t(X~_t) + W_t + V_t
   with D's map phi_t, lambda_{T-1} = 1 (so X~_T = theta_T). Their distance obeys
   d_{t+1} <= (1 - lambda_t) c d_t: it carries only the debt z, never the record's use.
3. One step compares the chain on D', X'_{t+1} = phi'_t(X'_t) + W_t + V_t with
   X~_{t+1} = [phi_t(X~_t) + V_t] + g_t + W_t, g_t = lambda_t (phi_t(theta_t) - phi_t(X~_t)),
   ||g_t|| <= a_t = lambda_t c d_t surely. The shift-reduction lemma (Bok et al., the f-DP form
   of Feldman et al. 2018's shifted Rényi argument: T(U + W, U' + W) >= T(U, U'') (x) G(a / s_W)
   when ||U' - U''|| <= a surely) removes g_t at the price G(a_t / (eta sigma_1)). What remains,
   phi'_t(X'_t) + V_t against phi_t(X~_t) + V_t, is the previous pair followed by one
   Poisson-subsampled Gaussian step (for each input x, given the rest of the batch,
   N(y, .) against (1 - q) N(y, .) + q N(y + u, .), ||u|| <= s: dominated by f_q; revealing the
   rest of the batch only helps the adversary, and f_q is convex), so by adaptive composition
   (Dong, Roth & Su 2022, Thm 3.2) T(X'_{t+1}, X~_{t+1}) >= T(X'_t, X~_t) (x) f_q (x) G(a_t/(eta sigma_1)).
4. From T(X'_tau, X~_tau) = Id, and the Gaussian parts composing to G_mu with
   mu^2 = sum_t a_t^2 / (eta sigma_1)^2, minimised subject to sum_t c^(T-1-t) a_t = c^(T-tau) z
   (the debt walked to 0) by Cauchy-Schwarz: mu_1 above. The other direction is the same
   argument with D and D' swapped (the accountant's other pair); the projection is applied
   after the noise, so the argument runs on the pre-projection points and releases theta_T by
   post-processing.

Every (tau, split) gives a valid bound, so the minimum over a grid does too; tau = 0 with all
the noise in V is the composition of the T subsampled steps itself, so the minimum is never
above that composition (same accountant, same discretisation). With contraction the Gaussian
part decays like c^(T - tau), so the bound stops growing in T: a plateau once T - tau is a few
times 1 / (1 - c).

Evaluation. The composition with G_{mu_1} convolves the PLD accountant's pessimistic
discrete PLD with mu_1-GDP's privacy loss N(mu_1^2/2, mu_1^2), discretised on the same grid with
every loss rounded up (pessimistic, as the accountant's own composition). The grid
over (tau, split) is searched first by RDP (cheap: Mironov, Talwar & Zhang 2019's subsampled
Gaussian RDP times T - tau, plus a mu_1^2 / 2), and the PLD is evaluated at the few best
candidates, at the reference delta :data:`REFERENCE_DELTA`; the RDP minimum over the whole grid
is kept beside it (each is valid at every order and delta).
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple

import numpy as np
from scipy import special

from . import shifted_interpolation as si

# sigma_2 / sigma: the share of the noise standard deviation paid to the subsampled part
SPLITS = np.array([0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 1.0])
_FRACTIONS = np.linspace(0.0, 1.0, 49)  # T - tau = round(T^f): log-spaced from 1 to T
REFERENCE_DELTA = 1e-5  # where the PLD candidates are compared (every candidate stays valid at every delta)
RESULT = ("Bok, Su & Altschuler 2024 (ICML), shifted interpolation with Poisson-subsampled steps: G_mu1 composed "
          "with the (T - tau) subsampled Gaussian steps by the PLD accountant (pessimistic), minimised over tau and the "
          "noise split")
RESULT_RDP = ("Bok, Su & Altschuler 2024 (ICML), shifted interpolation with Poisson-subsampled steps: G_mu1 composed "
              "with the (T - tau) subsampled Gaussian steps in RDP (Mironov, Talwar & Zhang 2019), minimised per order "
              "over tau and the noise split")


class Candidates(NamedTuple):
    """The grid, broadcast against the configurations (trailing axes: split, tau)."""

    n_sub: np.ndarray  # T - tau
    split: np.ndarray  # sigma_2 / sigma
    mu1: np.ndarray  # the Gaussian part's mu


def candidates(step_size, noise_std, steps, *, dataset_size, gradient_sensitivity, smoothness, strong_convexity=0.0,
               diameter=None, batch_size=None) -> Candidates:
    """(T - tau, split, mu_1) on the grid, shape configurations + (len(SPLITS), len(_FRACTIONS)).
    Assumes validated input with eta M <= 2 (the caller masks the rest)."""
    eta = np.asarray(step_size, dtype=np.float64)
    sigma = np.asarray(noise_std, dtype=np.float64)
    t = np.asarray(steps, dtype=np.float64)
    rho = np.asarray(gradient_sensitivity, dtype=np.float64) / (np.asarray(batch_size, dtype=np.float64) * sigma)
    gap = si.gap_to_one(eta, smoothness, strong_convexity)
    log_c = si._log_contraction(gap)
    shape = np.broadcast_shapes(eta.shape, sigma.shape, t.shape, rho.shape, log_c.shape,
                                np.shape(diameter) if diameter is not None else ())
    ex = lambda a: np.broadcast_to(a, shape)[..., None, None]  # noqa: E731 - grid on two trailing axes
    T = ex(t)
    n_sub = np.clip(np.round(np.exp(np.log(T) * _FRACTIONS)), 1.0, T)
    tau = T - n_sub
    L = ex(log_c)
    # the debt at tau in noise units (eta sigma): rho sum_{k < tau} c^k, capped by D / (eta sigma)
    debt = np.where(tau > 0, ex(rho) * (1.0 + si._geometric(np.maximum(tau - 1.0, 0.0), L)), 0.0)
    if diameter is not None:
        debt = np.minimum(debt, ex(np.asarray(diameter, dtype=np.float64) / (eta * sigma)))
    variance = 1.0 + si._geometric(n_sub - 1.0, 2.0 * L)  # sum_{k < T - tau} c^(2k)
    split = SPLITS[:, None]
    share1 = np.sqrt(np.maximum(1.0 - split * split, 0.0))  # sigma_1 / sigma
    with np.errstate(divide="ignore", invalid="ignore"):
        mu1 = np.where(debt > 0, np.exp(n_sub * L) * debt / (share1 * np.sqrt(variance)), 0.0)
    mu1 = np.where(np.isnan(mu1), np.inf, mu1)
    full = np.broadcast_shapes(n_sub.shape, split.shape)
    return Candidates(np.broadcast_to(n_sub, full), np.broadcast_to(split, full), np.broadcast_to(mu1, full))


def rdp(cands: Candidates, multiplier, rate, orders, per_step) -> tuple[np.ndarray, np.ndarray]:
    """(RDP at ``orders`` minimised per order over the grid, the grid's RDP), shapes
    configurations + (orders,) and configurations + grid + (orders,).

    ``per_step(multipliers, rates)`` gives one subsampled Gaussian step's RDP at ``orders``
    (add/remove adjacency); the subsampled part has noise multiplier split * ``multiplier``."""
    shape = cands.mu1.shape[:-2]
    m = np.broadcast_to(multiplier, shape)[..., None] * SPLITS  # configurations + (splits,)
    q = np.broadcast_to(rate, shape)[..., None] + 0.0 * SPLITS
    pairs = np.stack([m.ravel(), q.ravel()], axis=-1)
    unique, inverse = np.unique(pairs, axis=0, return_inverse=True)
    step = per_step(unique[:, 0], unique[:, 1])[inverse.ravel()].reshape(shape + (SPLITS.size, 1, orders.size))
    grid = cands.n_sub[..., None] * step + orders * (cands.mu1 ** 2)[..., None] / 2.0
    return np.min(grid.reshape(shape + (-1, orders.size)), axis=-2), grid


def _gaussian_pessimistic_pmf(mu: float, step: float, tail: float = 1e-18):
    """(pmf, start, infinity mass) of mu-GDP's privacy loss N(mu^2/2, mu^2) (under the first law),
    each loss rounded up to the grid k * step (pessimistic: delta(eps) = E(1 - e^(eps - L))_+ is
    increasing in L); the mass above the window goes to +inf, the mass below it to its bottom."""
    if mu == 0.0:
        return np.array([1.0]), 0, 0.0
    z = math.sqrt(2.0 * math.log(1.0 / tail)) + 1.0
    lo = math.floor((mu * mu / 2 - z * mu) / step)
    hi = math.ceil((mu * mu / 2 + z * mu) / step)
    edges = (np.arange(lo, hi + 1) * step - mu * mu / 2) / mu  # standardised upper edges of the cells
    cdf = special.ndtr(edges)
    pmf = np.diff(cdf, prepend=0.0)  # cell k collects (l_{k-1}, l_k]; the first also everything below
    inf = float(special.ndtr(-edges[-1]))
    return pmf, lo, inf


def compose_with_gaussian(bracket, mu1: float):
    """A PLD bracket (one configuration) composed with G_mu1: each pessimistic direction convolved
    with mu1-GDP's pessimistic discrete PLD on the same grid (FFT). The optimistic side is the
    bracket's own (composition with a further mechanism only adds loss, so it stays below)."""
    from scipy import signal
    from ..composition.pld import DiscretePLD
    from ..composition.pld_bracket import PLDBracket

    out = []
    for d in bracket.pessimistic:
        step = d.step
        g, g_start, g_inf = _gaussian_pessimistic_pmf(float(mu1), step)
        pmf = np.asarray(d.pmf, dtype=np.float64).reshape(-1)
        conv = np.maximum(signal.fftconvolve(pmf, g), 0.0)
        # FFT round-off (<= 1e-16 x n per cell) raised on the pessimistic side
        conv = conv + 1e-16 * math.sqrt(conv.size)
        a_inf = float(np.asarray(d.infinity_mass).reshape(-1)[0])
        inf = 1.0 - (1.0 - a_inf) * (1.0 - g_inf)
        start = int(np.asarray(d.start).reshape(-1)[0]) + g_start
        out.append(DiscretePLD(conv, np.asarray(start), np.asarray(inf), step))
    opt = tuple(DiscretePLD(np.asarray(o.pmf).reshape(-1), np.asarray(np.asarray(o.start).reshape(-1)[0]),
                            np.asarray(np.asarray(o.infinity_mass).reshape(-1)[0]), o.step) for o in bracket.optimistic)
    return PLDBracket(tuple(out), opt, bracket.adjacency, bracket.pessimistic[0].step)


def best_pld(cands: Candidates, rdp_grid: np.ndarray, orders: np.ndarray, multiplier: float, rate: float,
             adjacency: str, neighbours: int = 1):
    """One configuration: the PLD bracket (composed with G_mu1) of the best grid point at
    :data:`REFERENCE_DELTA`, and (eps there, T - tau, split, mu_1) of it.

    The PLD is evaluated at the RDP optimum's neighbourhood on the grid (``neighbours`` grid
    steps each way in tau and in the split). Any grid point is a valid bound; the search only
    picks one. (tau = 0 with all the noise subsampled is the plain composition, which
    ``last_iterate_curve`` computes beside this and keeps where it is tighter.)"""
    from ..composition.pld_accountant import pld_curve
    from ..conversions import rdp_to_epsilon

    eps_grid = rdp_to_epsilon(orders, rdp_grid, REFERENCE_DELTA)  # (splits, fractions)
    eps_grid = np.where(np.isfinite(cands.mu1), eps_grid, np.inf)
    i0, j0 = np.unravel_index(np.argmin(eps_grid), eps_grid.shape)
    picks, seen = [], set()
    for di in range(-neighbours, neighbours + 1):
        for dj in range(-neighbours, neighbours + 1):
            i, j = i0 + di, j0 + dj
            if not (0 <= i < SPLITS.size and 0 <= j < _FRACTIONS.size):
                continue
            key = (i, int(cands.n_sub[i, j]))  # small T: several fractions round to the same T - tau
            # a neighbour far worse in RDP, or with a Gaussian part beyond mu = 20 (its loss spans
            # millions of grid cells), is not worth a PLD: the search skips it (any pick is valid)
            if key in seen or not eps_grid[i, j] <= 1.5 * eps_grid[i0, j0] + 0.05 or cands.mu1[i, j] > 20:
                continue
            seen.add(key)
            picks.append((i, j))
    # a fixed batch of (2 neighbours + 1)^2 configurations (the first pick repeated): one compiled
    # accountant program serves every call
    padded = picks + [picks[0]] * ((2 * neighbours + 1) ** 2 - len(picks))
    sig = np.array([multiplier * SPLITS[i] for i, _ in padded])
    steps = np.array([int(cands.n_sub[i, j]) for i, j in padded])
    curve = pld_curve(sig, rate, steps, adjacency=adjacency, sampling="poisson")
    best = None
    for k, (i, j) in enumerate(picks):
        one = _index_bracket(curve.pld, k)
        composed = compose_with_gaussian(one, float(cands.mu1[i, j]))
        eps = float(composed.epsilon(REFERENCE_DELTA))
        if best is None or eps < best[1]:
            best = (composed, eps, int(cands.n_sub[i, j]), float(SPLITS[i]), float(cands.mu1[i, j]))
    return best


def _index_bracket(bracket, k: int):
    """Configuration k of a batched PLD bracket (flattened batch)."""
    from ..composition.pld import DiscretePLD
    from ..composition.pld_bracket import PLDBracket

    def pick(d):
        pmf = np.asarray(d.pmf).reshape(-1, np.asarray(d.pmf).shape[-1])[k]
        return DiscretePLD(pmf, np.asarray(np.asarray(d.start).reshape(-1)[k]), np.asarray(np.asarray(d.infinity_mass).reshape(-1)[k]), d.step)

    return PLDBracket(tuple(pick(d) for d in bracket.pessimistic), tuple(pick(d) for d in bracket.optimistic),
                      bracket.adjacency, bracket.step)


__all__ = ["SPLITS", "REFERENCE_DELTA", "RESULT", "RESULT_RDP", "Candidates", "candidates", "rdp", "compose_with_gaussian", "best_pld"]
