"""What the PLD accountant's two engines (the jitted one, :mod:`.pld_accountant`, and numpy,
:mod:`.pld_numpy`) share about a composition's plan: which engine runs a job, the composed
window and FFT length from the Chernoff bounds, the tilted compositions' targets, and the
error a grid too fine for :data:`MAX_GRID` raises. Below both engines and the bracket (it
imports none of them), so that each can import it.
"""
from __future__ import annotations

import math

import jax
import numpy as np

MAX_GRID = 2**24  # largest FFT length per configuration (128 MiB of float64)

# eps alone: the tilted composition runs where R exceeds this fraction of the asked delta (the
# pointwise bound then moves delta by less than 0.1%, never more than R did at +inf before), and
# at once (no untilted pass first) for every configuration when the asked delta is below
# TILT_ALWAYS_BELOW, where it is nearly always needed
TILT_NEEDED = 1e-3
TILT_ALWAYS_BELOW = 1e-7
# a kept PLD's tilts: the upper-tail masses they aim at. Each bounds the masses near and above
# where the tail is its target to a relative ~1e-10 (pld.tilted_upper_bound); three cover
# deltas from the round-off bound (~1e-9) down to the floor, heavy tails (small q) included
KEPT_TILTS = (1e-6, 1e-10, 1e-14)

# How many configurations (of one pair kind) run in numpy; more go to the jitted engine.
# Measured on the 2-core EPYC CPU (BENCHMARKS.md, issue 38; eps alone at delta 1e-5, issue 38's
# configuration ranges): numpy takes 20-30 ms a configuration, the engine in a fresh process
# 20 s for 64 configurations and 40 s for 256 (compiling), and once its programs are compiled
# (the same shapes again) 1.6 s for 64 and 9.7 s for 256 against numpy's 1.4 s and 6.9 s. The
# engine's warm calls spread a batch over the cores (numpy runs on one), so on a CPU with more
# cores it overtakes numpy sooner than here: 64 keeps numpy where it wins on any CPU, fresh or
# warm. On an accelerator, whose compilation is slower still and whose warm calls are far
# faster, numpy takes only the few configurations an interactive call asks for (the engine's
# compilation, seconds, dwarfs their 0.03-0.3 s); JAX's backend is asked only above that.
MAX_CONFIGURATIONS = 64
ACCELERATOR_MAX_CONFIGURATIONS = 8
# and at most this many points in one step's grid: beyond, one configuration is a long job
# (an FFT of millions of points per step) for which the engine's compilation is not the cost
MAX_GRID_POINTS = 2**22


def numpy_applies(nconf: int, grid_points) -> bool:
    """Whether a job of ``nconf`` configurations whose steps need ``grid_points`` grid points
    each runs in numpy (:data:`MAX_CONFIGURATIONS` on a CPU, :data:`ACCELERATOR_MAX_CONFIGURATIONS`
    on an accelerator, :data:`MAX_GRID_POINTS`)."""
    if nconf > MAX_CONFIGURATIONS or int(np.max(grid_points)) > MAX_GRID_POINTS:
        return False
    return nconf <= ACCELERATOR_MAX_CONFIGURATIONS or jax.default_backend() == "cpu"


def symmetrised_sets(pess, pess_inf, opt_r, opt_a, shape, k_top: int, length: int) -> list:
    """The sets to compose of a symmetrised pair (:func:`.pld._symmetrised_one`), discretised
    on ``length`` points up to grid index ``k_top`` for configurations of ``shape`` (B, S): the
    pessimistic PMFs (on -k_top .. k_top, with their mass at +inf), then each direction's
    optimistic PMF (the larger of the two is taken after composition)."""
    zeros = np.zeros(shape)
    k_opt = np.full(shape, k_top - length + 1, np.int64)
    top = np.full(shape, k_top, np.int64)
    return [(pess, pess_inf, np.full(shape, -k_top, np.int64), top, True), (opt_r, zeros, k_opt, top, False), (opt_a, zeros, k_opt, top, False)]


class GridLimitError(ValueError):
    """The PLD of some configurations needs more grid points than ``MAX_GRID`` at this
    ``value_discretization_interval``: ``configurations`` (flat indices into the broadcast
    batch) and ``points`` (what each needs). A ``ValueError``; the calibration catches it to
    coarsen the grid for those configurations."""

    def __init__(self, message: str, configurations, points):
        super().__init__(message)
        self.configurations = np.asarray(configurations, dtype=np.int64)
        self.points = np.asarray(points, dtype=np.int64)


def window(lambdas, lm_pos, lm_neg, offset, top_support, length, step, tail):
    """Window start A and FFT length n (a power of two) per configuration from the Chernoff
    bounds: at most ``tail`` of the composed mass lies below A h or above (A + n - 1) h."""
    log_tail = math.log(tail)
    with np.errstate(invalid="ignore", over="ignore"):
        a_lo = np.nanmax(np.where(np.isfinite(lm_neg), (log_tail - lm_neg) / lambdas, -np.inf), axis=-1)
        a_hi = np.nanmin(np.where(np.isfinite(lm_pos), (lm_pos - log_tail) / lambdas, np.inf), axis=-1)
    start = np.where(np.isfinite(a_lo), np.floor(a_lo / step) + 1, offset)
    start = np.clip(start, offset, top_support).astype(np.int64)
    top = np.where(np.isfinite(a_hi), np.ceil(a_hi / step), top_support)
    top = np.clip(top, start, top_support).astype(np.int64)
    support = top_support - offset + 1
    need = np.where(support <= np.maximum(top - start + 1, length), support, top - start + 1)
    need = np.maximum(need, length)
    n = np.array([_next_pow2(x) for x in need], dtype=np.int64)
    start = np.where(support <= n, offset, np.minimum(start, np.maximum(offset, top_support - n + 1)))
    return start, n


def raise_window_limit(over, n_conf, steps, step, max_grid):
    bad = int(np.flatnonzero(over)[0])
    raise GridLimitError(
        f"value_discretization_interval={step:g} is too fine for this accounting: the composed PLD needs an FFT of "
        f"{int(n_conf[bad])} > {max_grid} points (steps={steps[bad].tolist()}); use a coarser interval or fewer steps",
        np.flatnonzero(over), n_conf[over])


def _next_pow2(x: int) -> int:
    return 1 << max(0, int(math.ceil(math.log2(max(int(x), 1)))))
