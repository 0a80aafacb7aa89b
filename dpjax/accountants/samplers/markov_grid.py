"""Laws of one-dimensional Markov chains by quadrature: a chain on a fine grid.

Where a chain's laws have no closed form (MALA on any target, ULA on a non-quadratic
potential), the law of its n-th state in one dimension is computed by propagating probability
masses on a uniform grid x_1 < ... < x_m with trapezoid weights w_i:

* ULA / any Gaussian-increment kernel x' = x + gamma f(x) + sqrt(2 gamma T) z:
  P(x_i -> x_j) = w_j N(x_j; x_i + gamma f(x_i), 2 gamma T).
* MALA with potential U and step h: P(x_i -> x_j) = w_j q(x_i, x_j) alpha(x_i, x_j) for j != i
  and the rejection mass r_i = 1 - sum_j w_j q(x_i, x_j) alpha(x_i, x_j) on the diagonal.
  Detailed balance holds exactly on the grid (w_i pi_i w_j q_ij alpha_ij is symmetric), so the
  discrete chain leaves the grid masses of pi invariant exactly, as MALA leaves pi invariant.

Masses, not densities, are propagated (m_{n+1} = m_n P), so the divergences between two such
laws are those of two discrete laws on the same grid: TV = sum |p - q| / 2 and the
hockey-stick delta(eps) = sum (p - e^eps q)_+. They converge to the continuous values as the
grid is refined (second order in the spacing where |p - q| has a kink); the experiments report
the change between a grid and one twice as fine beside every value. Rows of the ULA matrix lose the
mass that leaves the grid; it is returned, and the callers check it is negligible.
"""
from __future__ import annotations

import math
from typing import Callable, NamedTuple, Sequence

import numpy as np
from scipy import optimize

from ... import _validate as V

__all__ = [
    "Grid",
    "uniform_grid",
    "gaussian_masses",
    "langevin_transition",
    "mala_transition",
    "propagate",
    "hockey_stick",
    "total_variation",
    "epsilon",
]


class Grid(NamedTuple):
    """Uniform grid points (m,) and trapezoid weights (m,)."""

    points: np.ndarray
    weights: np.ndarray

    @property
    def spacing(self) -> float:
        return float(self.points[1] - self.points[0])


def uniform_grid(low: float, high: float, size: int) -> Grid:
    """``size`` equally spaced points on [low, high] with trapezoid weights."""
    size = V.positive_int("size", size)
    if size < 3:
        raise ValueError(f"size={size} violates size >= 3")
    lo, hi = float(low), float(high)
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ValueError(f"(low, high)=({low!r}, {high!r}) violates low < high, both finite")
    x = np.linspace(lo, hi, size)
    w = np.full(size, x[1] - x[0])
    w[0] = w[-1] = 0.5 * (x[1] - x[0])
    return Grid(x, w)


def gaussian_masses(grid: Grid, mean: float, sd: float) -> np.ndarray:
    """Grid masses w_i N(x_i; mean, sd^2) of a Gaussian start."""
    sd = V.positive("sd", sd)
    z = (grid.points - float(mean)) / sd
    return grid.weights * np.exp(-0.5 * z * z) / (sd * math.sqrt(2 * math.pi))


def _gauss_row_kernel(grid: Grid, centres: np.ndarray, sd: float) -> np.ndarray:
    z = (grid.points[None, :] - centres[:, None]) / sd
    return grid.weights[None, :] * np.exp(-0.5 * z * z) / (sd * math.sqrt(2 * math.pi))


def langevin_transition(grid: Grid, drift: Callable[[np.ndarray], np.ndarray], step_size: float, temperature: float = 1.0):
    """Transition matrix P[i, j] of x' = x + gamma f(x) + sqrt(2 gamma T) z on the grid.

    ``drift`` is f = -U' (vectorised over points). Returns (P, lost) where lost[i] is the mass a
    step from x_i sends off the grid (1 - row sum, >= 0 up to rounding).
    """
    gamma = V.positive("step_size", step_size)
    temp = V.positive("temperature", temperature)
    f = np.asarray(drift(grid.points), dtype=np.float64)
    if f.shape != grid.points.shape or not np.all(np.isfinite(f)):
        raise ValueError("drift(points) must return finite values of the grid's shape")
    P = _gauss_row_kernel(grid, grid.points + gamma * f, math.sqrt(2.0 * gamma * temp))
    return P, 1.0 - P.sum(axis=1)


def mala_transition(grid: Grid, potential: Callable[[np.ndarray], np.ndarray], grad: Callable[[np.ndarray], np.ndarray], step_size: float):
    """Transition matrix of MALA with step h on the grid (rejections on the diagonal).

    Off-diagonal P[i, j] = w_j q(x_i, x_j) min(1, exp(U_i - U_j) q(x_j, x_i)/q(x_i, x_j)) with
    q(x, y) = N(y; x - h U'(x), 2h); the diagonal gets the rejection mass, so rows sum to 1
    except for proposals that leave the grid, which are counted as rejected (MALA would reject
    them too if the target had no mass there; the callers check the target's mass off the grid).
    Returns (P, proposal_mass_lost).
    """
    h = V.positive("step_size", step_size)
    x = grid.points
    u = np.asarray(potential(x), dtype=np.float64)
    g = np.asarray(grad(x), dtype=np.float64)
    if u.shape != x.shape or g.shape != x.shape or not (np.all(np.isfinite(u)) and np.all(np.isfinite(g))):
        raise ValueError("potential(points) and grad(points) must return finite values of the grid's shape")
    sd = math.sqrt(2.0 * h)
    mean_fwd = x - h * g  # proposal mean from each x_i
    log_q = -0.5 * ((x[None, :] - mean_fwd[:, None]) / sd) ** 2  # log q(x_i, x_j) + const
    log_alpha = np.minimum(0.0, (u[:, None] - u[None, :]) + log_q.T - log_q)
    Q = grid.weights[None, :] * np.exp(log_q) / (sd * math.sqrt(2 * math.pi))
    P = Q * np.exp(log_alpha)
    np.fill_diagonal(P, 0.0)
    lost = 1.0 - Q.sum(axis=1)
    P[np.diag_indices_from(P)] = 1.0 - P.sum(axis=1)
    return P, lost


def propagate(masses0: np.ndarray, transition: np.ndarray, record_steps: Sequence[int]) -> np.ndarray:
    """Masses after each recorded number of steps: shape (len(record_steps), m)."""
    steps = np.atleast_1d(np.asarray(record_steps))
    if steps.dtype.kind not in "iu" or steps.ndim != 1 or steps.size == 0 or np.any(steps < 0) or np.any(np.diff(steps) < 0):
        raise ValueError(f"record_steps={record_steps!r} violates a non-empty non-decreasing sequence of integers >= 0")
    m = np.asarray(masses0, dtype=np.float64).copy()
    out = np.empty((steps.size, m.size))
    current = 0
    for r, t in enumerate(steps):
        for _ in range(int(t) - current):
            m = m @ transition
        current = int(t)
        out[r] = m
    return out


def hockey_stick(p: np.ndarray, q: np.ndarray, epsilon) -> np.ndarray:
    """delta(eps) = sum_i (p_i - e^eps q_i)_+ for masses p, q (last axis); broadcasts over eps."""
    eps = np.asarray(epsilon, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    q = np.asarray(q, dtype=np.float64)
    out = np.maximum(p[..., None, :] - np.exp(eps)[..., None] * q[..., None, :], 0.0).sum(axis=-1)
    return out if eps.ndim else out[..., 0]


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """sum |p - q| / 2 over the last axis."""
    return 0.5 * np.abs(np.asarray(p) - np.asarray(q)).sum(axis=-1)


def epsilon(p: np.ndarray, q: np.ndarray, delta: float) -> float:
    """Smallest eps >= 0 with max(delta_p||q(eps), delta_q||p(eps)) <= delta (both directions)."""
    d = V.in_range("delta", delta, 0.0, 1.0, low_open=True, high_open=True)
    f = lambda e: max(float(hockey_stick(p, q, e)), float(hockey_stick(q, p, e))) - d
    if f(0.0) <= 0:
        return 0.0
    hi = 1.0
    while f(hi) > 0:
        hi *= 2.0
        if hi > 1e4:
            return math.inf
    return float(optimize.brentq(f, 0.0 if hi == 1.0 else hi / 2.0, hi, xtol=1e-12))
