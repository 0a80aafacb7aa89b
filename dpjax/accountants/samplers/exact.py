"""Exact privacy of linear-Gaussian chains (ULA / SGLD on quadratic potentials).

On U(theta) = 1/2 theta^T H theta - g^T theta, one ULA step is the affine Gaussian map
theta' = A theta + b + N(0, Sigma) with A = I - gamma H, b = gamma g, Sigma = 2 gamma T I
(T: temperature). SGLD with a fixed batch order uses a different (H_k, g_k) each step. From a
Gaussian start every iterate, and the whole path, is Gaussian, so the divergences between the
chains on D and D' are closed forms (:mod:`dpjax.accountants.mechanisms.gaussian_divergence`):

- :func:`propagate` — means/covariances at every step, by the step-by-step recursion (any maps).
- :func:`ula_law` — the closed form for a constant ULA map at any step counts, in the
  eigenbasis of H: A^t = V diag(a^t) V^T with 1 - a_i = gamma h_i formed directly and
  a^t = exp(t log1p(-gamma h)), (1 - a^t)/(1 - a) = -expm1(t log1p(-gamma h))/(gamma h).
- :func:`path_law` — mean and covariance of the stacked path (theta_1, ..., theta_T).
- :func:`exact_last_iterate_curve` / :func:`exact_path_curve` — PrivacyCurves (mode "exact").
- :func:`exact_last_iterate_epsilon` — the tight eps(delta) at every recorded step: for d = 1
  by the exact hockey-stick of two Gaussians (both directions), for equal covariances in any
  d by the analytic Gaussian mechanism on the Mahalanobis distance.
- :func:`ula_path_rdp_shift_only` — for a synchronously coupled ULA pair with a shared start
  whose potentials differ only in g, the path divergence is the sum over steps of
  Gaussian-mechanism terms a |gamma (g - g')|^2 / (2 * 2 gamma T) (chain rule; the per-step drift gap
  is constant). Tests check it equals the Gaussian Rényi of the stacked path.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Sequence

import numpy as np

from ... import _validate as V
from ..mechanisms import gaussian_divergence as gd
from ..curve import PrivacyCurve, Provenance

__all__ = [
    "AffineGaussianStep",
    "ula_step_map",
    "step_maps_from_quadratics",
    "propagate",
    "ula_law",
    "path_law",
    "exact_renyi_between_laws",
    "exact_last_iterate_curve",
    "exact_last_iterate_epsilon",
    "exact_path_curve",
    "ula_path_rdp_shift_only",
    "ula_exact_curve_for_pair",
    "exact_last_iterate_profile",
    "exact_last_iterate_curve_from_maps",
]


class AffineGaussianStep(NamedTuple):
    """theta' = slope @ theta + offset + N(0, noise_cov)."""

    slope: np.ndarray
    offset: np.ndarray
    noise_cov: np.ndarray


def _hg(hessian, linear, names=("hessian", "linear")) -> tuple[np.ndarray, np.ndarray]:
    hname, gname = names
    h = np.atleast_2d(np.asarray(hessian, dtype=np.float64))
    g = np.atleast_1d(np.asarray(linear, dtype=np.float64))
    if h.shape != (g.size, g.size):
        raise ValueError(f"{hname} has shape {h.shape}; expected ({g.size}, {g.size}) to match {gname}")
    V.finite_array(hname, h)
    V.finite_array(gname, g)
    if not np.allclose(h, h.T, rtol=1e-12, atol=0):
        raise ValueError(f"{hname} must be symmetric")
    return h, g


@V.arguments(hessian="numbers", linear="numbers", step_size="number", temperature="number")
def ula_step_map(hessian, linear, step_size: float, temperature: float = 1.0) -> AffineGaussianStep:
    """One ULA step on U = 1/2 theta^T H theta - g^T theta: A = I - gamma H, b = gamma g, Sigma = 2 gamma T I."""
    h, g = _hg(hessian, linear)
    gamma = V.positive("step_size", step_size)
    temp = V.positive("temperature", temperature)
    d = g.size
    return AffineGaussianStep(np.eye(d) - gamma * h, gamma * g, 2.0 * gamma * temp * np.eye(d))


@V.arguments(step_size="number", temperature="number")
def step_maps_from_quadratics(hessians, linears, step_size: float, temperature: float = 1.0) -> list[AffineGaussianStep]:
    """SGLD with a fixed batch order: step k uses the quadratic (H_k, g_k) of its batch's
    (rescaled) potential; returns the per-step maps."""
    if len(hessians) != len(linears):
        raise ValueError(f"hessians ({len(hessians)}) and linears ({len(linears)}) must have the same length")
    return [ula_step_map(h, g, step_size, temperature) for h, g in zip(hessians, linears)]


def _start(mean0, cov0, d: int) -> tuple[np.ndarray, np.ndarray]:
    m0 = np.broadcast_to(np.atleast_1d(np.asarray(mean0, dtype=np.float64)), (d,)).copy()
    c0 = np.asarray(cov0, dtype=np.float64)
    c0 = c0 * np.eye(d) if c0.ndim == 0 else c0
    if c0.shape != (d, d):
        raise ValueError(f"cov0 has shape {c0.shape}; expected ({d}, {d})")
    if np.any(np.linalg.eigvalsh(0.5 * (c0 + c0.T)) < -1e-12 * max(1.0, np.abs(c0).max())):
        raise ValueError("cov0 must be positive semi-definite")
    return m0, c0


@V.arguments(mean0="numbers", cov0="numbers")
def propagate(mean0, cov0, maps: Sequence[AffineGaussianStep]) -> tuple[np.ndarray, np.ndarray]:
    """Means (T+1, d) and covariances (T+1, d, d) at steps 0..T by the exact recursion
    m' = A m + b, C' = A C A^T + Sigma."""
    if len(maps) == 0:
        raise ValueError("maps must hold at least one step")
    d = np.atleast_1d(maps[0].offset).size
    m, c = _start(mean0, cov0, d)
    means, covs = [m], [c]
    for mp in maps:
        m = mp.slope @ m + mp.offset
        c = mp.slope @ c @ mp.slope.T + mp.noise_cov
        c = 0.5 * (c + c.T)
        means.append(m)
        covs.append(c)
    return np.stack(means), np.stack(covs)


def _check_steps(steps) -> np.ndarray:
    s = np.atleast_1d(np.asarray(steps))
    if s.ndim != 1 or s.size == 0 or s.dtype.kind not in "iu" or np.any(s < 0):
        raise ValueError(f"steps={steps!r} violates a non-empty 1-D array of integers >= 0")
    return s.astype(np.int64)


@V.arguments(hessian="numbers", linear="numbers", step_size="number", steps="ints", mean0="numbers", cov0="numbers", temperature="number")
def ula_law(hessian, linear, step_size: float, steps, mean0=0.0, cov0=0.0, temperature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Closed-form law of ULA after each count in ``steps``: means (S, d), covariances (S, d, d).

    m_t = A^t m0 + V diag((1 - a^t)/(1 - a)) V^T b, C_t = A^t C0 A^t + 2 gamma T V diag((1 - a^2t)/(1 - a^2)) V^T,
    A = V diag(a) V^T, a = 1 - gamma h (eigenvalues h of H); small 1 - a are formed as gamma h.
    Raises ValueError where the law is not representable in float64 (a diverging chain,
    |1 - gamma h| > 1, whose moments overflow after that many steps).
    """
    return _ula_law(hessian, linear, step_size, steps, mean0, cov0, temperature)


def _ula_law(hessian, linear, step_size, steps, mean0, cov0, temperature, names=("hessian", "linear")):
    h, g = _hg(hessian, linear, names)
    gamma = V.positive("step_size", step_size)
    temp = V.positive("temperature", temperature)
    steps = _check_steps(steps)
    d = g.size
    m0, c0 = _start(mean0, cov0, d)
    eig, vec = np.linalg.eigh(h)
    gh = gamma * eig  # 1 - a, exactly
    a = 1.0 - gh
    t = steps[:, None].astype(np.float64)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        contracting = (gh > 0) & (gh < 1)
        log_a = np.where(contracting, np.log1p(-np.where(contracting, gh, 0.0)), 0.0)
        a_t = np.where(contracting, np.exp(t * log_a), np.power(a, t))
        one_minus_at = np.where(contracting, -np.expm1(t * log_a), 1.0 - a_t)
        geo = np.where(gh != 0, one_minus_at / np.where(gh != 0, gh, 1.0), t)  # sum_{k<t} a^k
        one_minus_a2 = gh * (2.0 - gh)
        one_minus_a2t = np.where(contracting, -np.expm1(2 * t * log_a), 1.0 - a_t**2)
        geo2 = np.where(one_minus_a2 != 0, one_minus_a2t / np.where(one_minus_a2 != 0, one_minus_a2, 1.0), t)
        # A diverging direction (|a| > 1): the sums as a^(t-1) (1 - a^-t)/(1 - a^-1) and
        # a^(2t-2) (1 - a^-2t)/(1 - a^-2), which overflow only when the moments themselves do
        # (1 - a^t over 1 - a would be inf/inf already at t = 1 for |a| ~ 1e299).
        grows = np.abs(a) > 1
        inv = 1.0 / np.where(grows, a, 2.0)
        geo = np.where(grows, np.power(a, t - 1) * (1.0 - np.power(inv, t)) / (1.0 - inv), geo)
        geo2 = np.where(grows, np.power(a * a, t - 1) * (1.0 - np.power(inv * inv, t)) / (1.0 - inv * inv), geo2)
    b_eig = vec.T @ (gamma * g)
    m0_eig = vec.T @ m0
    c0_eig = vec.T @ c0 @ vec
    with np.errstate(invalid="ignore", over="ignore"):
        # a zero start term stays 0 where a^t overflows (inf * 0 would be NaN)
        start_mean = np.where(m0_eig[None, :] == 0, 0.0, a_t * m0_eig[None, :])
        start_cov = np.where(c0_eig[None] == 0, 0.0, a_t[:, :, None] * c0_eig[None] * a_t[:, None, :])
        means = (start_mean + geo * b_eig[None, :]) @ vec.T
        cov_eig = start_cov + 2 * gamma * temp * np.einsum("si,ij->sij", geo2, np.eye(d))
        covs = np.einsum("ij,sjk,lk->sil", vec, cov_eig, vec)
        covs = 0.5 * (covs + np.swapaxes(covs, 1, 2))
    finite = np.all(np.isfinite(means), axis=1) & np.all(np.isfinite(covs), axis=(1, 2))
    if not np.all(finite):
        first = int(steps[np.argmin(finite)])
        factor = float(np.max(np.abs(a)))
        raise ValueError(
            f"{names[0]}={V._fmt(h.tolist())} with step_size={V._fmt(gamma)}: the law of ULA after {first} steps is not "
            f"representable in float64 (max |1 - step_size * eigenvalue of {names[0]}| = {factor:.6g}"
            + (" > 1: the chain diverges and its moments overflow)" if factor > 1 else ": its moments overflow)")
        )
    return means, covs


@V.arguments(mean0="numbers", cov0="numbers")
def path_law(mean0, cov0, maps: Sequence[AffineGaussianStep], include_start: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Mean (T d,) and covariance (T d, T d) of the stacked path (theta_1, ..., theta_T).

    Cov(theta_i, theta_j) = A_i ... A_{j+1} Cov(theta_j) for i > j. The start theta_0 ~ N(m0, C0)
    has the same law on both datasets; it is released too (stacked first) only with
    ``include_start`` (then C0 must be positive definite). Releasing it can only add privacy
    loss (data processing); with a point start (C0 = 0) the two coincide.
    """
    means, covs = propagate(mean0, cov0, maps)
    T = len(maps)
    d = means.shape[1]
    first = 0 if include_start else 1
    size = (T + 1 - first) * d
    big = np.zeros((size, size))
    for j in range(first, T + 1):
        block = covs[j]
        sj = slice((j - first) * d, (j - first + 1) * d)
        big[sj, sj] = block
        for i in range(j + 1, T + 1):
            block = maps[i - 1].slope @ block
            si = slice((i - first) * d, (i - first + 1) * d)
            big[si, sj] = block
            big[sj, si] = block.T
    return means[first:].ravel(), big


@V.arguments(means1="numbers", covs1="numbers", means2="numbers", covs2="numbers", orders="array")
def exact_renyi_between_laws(means1, covs1, means2, covs2, orders) -> np.ndarray:
    """Symmetrised exact Rényi max(D_a(P||Q), D_a(Q||P)) for each law pair: shape (S, orders)."""
    orders = _check_orders(orders)
    out = np.empty((len(means1), orders.size))
    for s in range(len(means1)):
        fwd = gd.gaussian_renyi(means1[s], covs1[s], means2[s], covs2[s], orders)
        bwd = gd.gaussian_renyi(means2[s], covs2[s], means1[s], covs1[s], orders)
        out[s] = np.maximum(fwd, bwd)
    return out


def _check_orders(orders) -> np.ndarray:
    a = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    if a.ndim != 1:
        raise ValueError(f"orders has shape {a.shape}; orders must be a 1-D array")
    bad = ~((a > 0) & np.isfinite(a))
    if np.any(bad):
        raise ValueError(f"orders={V._fmt(a.tolist())} violates every order finite and > 0 (first offender {a[bad][0]!r})")
    return a


def _pair_laws(hessian1, linear1, hessian2, linear2, step_size, steps, mean0, cov0, temperature):
    m1, c1 = _ula_law(hessian1, linear1, step_size, steps, mean0, cov0, temperature, ("hessian1", "linear1"))
    m2, c2 = _ula_law(hessian2, linear2, step_size, steps, mean0, cov0, temperature, ("hessian2", "linear2"))
    steps = _check_steps(steps)
    if np.any(steps == 0) and np.all(np.asarray(cov0) == 0):
        raise ValueError("steps contains 0 with a point-mass start (cov0 = 0): the law at step 0 is degenerate")
    return m1, c1, m2, c2


def _ula_last_iterate_provenance(method: str) -> Provenance:
    return Provenance(
        result=f"exact Gaussian law of ULA on a quadratic potential ({method})",
        mode="exact",
        assumptions=("quadratic potentials on D and D'", "shared Gaussian start"),
        released="last iterate",
    )


@V.arguments(hessian1="numbers", linear1="numbers", hessian2="numbers", linear2="numbers", step_size="number", steps="ints", orders="array", mean0="numbers", cov0="numbers", temperature="number")
def exact_last_iterate_curve(
    hessian1, linear1, hessian2, linear2, step_size: float, steps, orders, mean0=0.0, cov0=0.0, temperature: float = 1.0
) -> PrivacyCurve:
    """RDP of releasing ULA's last iterate on D (H1, g1) vs D' (H2, g2), exact, at every
    recorded step: a PrivacyCurve with rdp of shape (len(steps), len(orders))."""
    m1, c1, m2, c2 = _pair_laws(hessian1, linear1, hessian2, linear2, step_size, steps, mean0, cov0, temperature)
    rdp = exact_renyi_between_laws(m1, c1, m2, c2, orders)
    prov = _ula_last_iterate_provenance("closed-form Rényi of two Gaussians")
    return PrivacyCurve.from_rdp(orders, rdp, prov)


@V.arguments(hessian1="numbers", linear1="numbers", hessian2="numbers", linear2="numbers", step_size="number", steps="ints", delta="number", mean0="numbers", cov0="numbers", temperature="number")
def exact_last_iterate_epsilon(
    hessian1, linear1, hessian2, linear2, step_size: float, steps, delta: float, mean0=0.0, cov0=0.0, temperature: float = 1.0
) -> np.ndarray:
    """Tight eps(delta) of the last iterate at every recorded step (larger of both directions).

    d = 1: exact hockey-stick of two Gaussians (unequal variances allowed). d > 1: exact when
    the two covariances agree (H1 = H2: analytic Gaussian mechanism on the Mahalanobis
    distance); otherwise raises ValueError (use the RDP curve).
    """
    m1, c1, m2, c2 = _pair_laws(hessian1, linear1, hessian2, linear2, step_size, steps, mean0, cov0, temperature)
    out = np.empty(len(m1))
    for s in range(len(m1)):
        if m1.shape[1] == 1:
            s1, s2 = math.sqrt(c1[s, 0, 0]), math.sqrt(c2[s, 0, 0])
            out[s] = max(gd.gaussian_epsilon(m1[s, 0], s1, m2[s, 0], s2, delta), gd.gaussian_epsilon(m2[s, 0], s2, m1[s, 0], s1, delta))
        elif np.allclose(c1[s], c2[s], rtol=1e-13, atol=0):
            chol = np.linalg.cholesky(c1[s])
            mu = float(np.linalg.norm(np.linalg.solve(chol, m1[s] - m2[s])))
            out[s] = gd.analytic_gaussian_epsilon(mu, delta)
        else:
            raise ValueError(f"tight eps(delta) in d={m1.shape[1]} needs equal covariances on D and D' (hessian1 == hessian2)")
    return out


@V.arguments(mean0="numbers", cov0="numbers", orders="array")
def exact_path_curve(
    mean0, cov0, maps1: Sequence[AffineGaussianStep], maps2: Sequence[AffineGaussianStep], orders, include_start: bool = False
) -> PrivacyCurve:
    """Exact RDP of releasing the whole path (theta_1..theta_T): Gaussian Rényi of the stacked
    path laws, symmetrised. Works for any per-step maps (ULA, SGLD with a fixed batch order)."""
    if len(maps1) != len(maps2):
        raise ValueError(f"maps1 ({len(maps1)}) and maps2 ({len(maps2)}) must have the same number of steps")
    pm1, pc1 = path_law(mean0, cov0, maps1, include_start)
    pm2, pc2 = path_law(mean0, cov0, maps2, include_start)
    rdp = exact_renyi_between_laws([pm1], [pc1], [pm2], [pc2], orders)[0]
    prov = Provenance(
        result="exact Gaussian law of the stacked linear-Gaussian path (closed-form Rényi)",
        mode="exact",
        assumptions=("affine Gaussian steps on D and D'", "shared start"),
        released="path (with start)" if include_start else "path",
    )
    return PrivacyCurve.from_rdp(orders, rdp, prov)


@V.arguments(linear_gap="numbers", step_size="number", steps="int", orders="array", temperature="number")
def ula_path_rdp_shift_only(linear_gap, step_size: float, steps: int, orders, temperature: float = 1.0) -> np.ndarray:
    """Path RDP for a synchronously coupled ULA pair with shared start and H = H':
    steps * a |gamma (g - g')|^2 / (2 * 2 gamma T) = steps * a gamma |g - g'|^2 / (4 T)."""
    gap = np.atleast_1d(np.asarray(linear_gap, dtype=np.float64))
    gamma = V.positive("step_size", step_size)
    temp = V.positive("temperature", temperature)
    k = V.positive_int("steps", steps)
    orders = np.atleast_1d(np.asarray(orders, dtype=np.float64))
    return k * orders * gamma * float(gap @ gap) / (4.0 * temp)


@V.arguments(step_size="number", steps="ints", orders="array", mean0="numbers", cov0="numbers", temperature="number")
def ula_exact_curve_for_pair(model, pair, step_size: float, steps, orders, mean0=0.0, cov0=0.0, temperature: float = 1.0) -> PrivacyCurve:
    """:func:`exact_last_iterate_curve` for a quadratic model (``dpjax.models.quadratic_form``)
    on a :class:`~dpjax.data.NeighbouringPair`: ULA on U_D and U_D' with a shared start."""
    from ...models.quadratic import quadratic_form

    h1, g1 = quadratic_form(model, pair.dataset)
    h2, g2 = quadratic_form(model, pair.neighbour)
    return exact_last_iterate_curve(h1, g1, h2, g2, step_size, steps, orders, mean0, cov0, temperature)


@V.arguments(hessian1="numbers", linear1="numbers", hessian2="numbers", linear2="numbers", step_size="number", steps="ints", epsilons="array", mean0="numbers", cov0="numbers", temperature="number")
def exact_last_iterate_profile(
    hessian1, linear1, hessian2, linear2, step_size: float, steps, epsilons, mean0=0.0, cov0=0.0, temperature: float = 1.0
) -> PrivacyCurve:
    """Exact delta(eps) profile of the last iterate (larger of both directions) at every
    recorded step: deltas of shape (len(steps), len(epsilons)). Same cases as
    :func:`exact_last_iterate_epsilon` (d = 1, or equal covariances in any d)."""
    m1, c1, m2, c2 = _pair_laws(hessian1, linear1, hessian2, linear2, step_size, steps, mean0, cov0, temperature)
    eps = np.asarray(epsilons, dtype=np.float64)
    deltas = np.empty((len(m1), eps.size))
    for s in range(len(m1)):
        if m1.shape[1] == 1:
            s1, s2 = math.sqrt(c1[s, 0, 0]), math.sqrt(c2[s, 0, 0])
            deltas[s] = np.maximum(
                gd.gaussian_hockey_stick(m1[s, 0], s1, m2[s, 0], s2, eps), gd.gaussian_hockey_stick(m2[s, 0], s2, m1[s, 0], s1, eps)
            )
        elif np.allclose(c1[s], c2[s], rtol=1e-13, atol=0):
            chol = np.linalg.cholesky(c1[s])
            mu = float(np.linalg.norm(np.linalg.solve(chol, m1[s] - m2[s])))
            deltas[s] = gd.analytic_gaussian_delta(mu, eps)
        else:
            raise ValueError(f"an exact delta(eps) profile in d={m1.shape[1]} needs equal covariances on D and D' (hessian1 == hessian2)")
    prov = _ula_last_iterate_provenance("hockey-stick of two Gaussians")
    return PrivacyCurve.from_profile(eps, deltas, prov)


@V.arguments(mean0="numbers", cov0="numbers", record_steps="ints", orders="array")
def exact_last_iterate_curve_from_maps(
    mean0, cov0, maps1: Sequence[AffineGaussianStep], maps2: Sequence[AffineGaussianStep], record_steps, orders
) -> PrivacyCurve:
    """Exact RDP of the last iterate at ``record_steps`` for arbitrary per-step maps (SGLD with
    a fixed batch order, schedules), by the recursion of :func:`propagate`, symmetrised."""
    if len(maps1) != len(maps2):
        raise ValueError(f"maps1 ({len(maps1)}) and maps2 ({len(maps2)}) must have the same number of steps")
    steps = _check_steps(record_steps)
    if np.any(steps > len(maps1)):
        raise ValueError(f"record_steps={record_steps!r} violates step <= number of maps ({len(maps1)})")
    m1, c1 = propagate(mean0, cov0, maps1)
    m2, c2 = propagate(mean0, cov0, maps2)
    rdp = exact_renyi_between_laws(m1[steps], c1[steps], m2[steps], c2[steps], orders)
    prov = Provenance(
        result="exact Gaussian law of a linear-Gaussian chain (step-by-step recursion, closed-form Rényi)",
        mode="exact",
        assumptions=("affine Gaussian steps on D and D'", "shared start"),
        released="last iterate",
    )
    return PrivacyCurve.from_rdp(orders, rdp, prov)
