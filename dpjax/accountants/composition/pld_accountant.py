"""The PLD accountant: ``pld_curve`` (and friends) for noisy SGD with Gaussian or Laplace noise.

Tight (up to a stated discretisation error) accounting of T steps of a subsampled Gaussian or
Laplace mechanism by privacy-loss distributions composed with FFTs
(:mod:`dpjax.accountants.composition.pld`; the dominating pairs are in :mod:`dpjax.accountants.composition.pld_pairs`).
Every answer comes as a bracket: the pessimistic value (what :class:`PrivacyCurve` reports,
never below the true value for the dominating pair, by construction) and an optimistic one
(never above it); their gap is the discretisation error.

Batched: ``noise_multiplier``, ``sampling_rate`` and ``steps`` broadcast, and all
configurations are computed together (vmapped and jitted in chunks of configurations that
share a grid size; compiled once per grid size, never per value). A few configurations are
computed in numpy instead, by the same functions on the same plan, compiling nothing
(:mod:`dpjax.accountants.composition.pld_numpy`; the rule is :func:`.pld_plan.numpy_applies`).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np

from ... import _validate, _x64
from .. import _convention
from . import pld as _pld
from . import pld_numpy, pld_pairs
from ..curve import PrivacyCurve, Provenance
from .pld_bracket import DEFAULT_TAIL, PLDBracket, PLDEpsilons, RDPFallback, _flag, _trim, compose_plds
from .pld_plan import (KEPT_TILTS, MAX_GRID, TILT_ALWAYS_BELOW, TILT_NEEDED, GridLimitError, _next_pow2, numpy_applies,
                       raise_window_limit as _raise_window_limit, symmetrised_sets, window as _window)

MECHANISMS = ("gaussian", "laplace")
DEFAULT_INTERVAL = 1e-4  # dp_accounting's default value_discretization_interval
CHUNK_ELEMENTS = 2**21  # configurations x grid points per call: fixed chunk shapes (one compilation per grid size)
# configurations x FFT points per call of the composition: its arrays then stay within the
# caches (measured on a 2-core EPYC: 2^19 runs at half the time per point of 2^21), and at
# least 2 configurations per call for the two cores (a single FFT is not parallelised)
COMPOSE_CHUNK_ELEMENTS = 2**19
BLOCKS_PER_CALL = 64  # blocks of DISCRETISE_BLOCK cells per CPU call (2^17 cells: within the caches; 4x as many ran 1.5x slower per cell)


@dataclasses.dataclass(frozen=True)
class ChunkBudget:
    """How much work one compiled call takes: a CPU wants cache-sized calls (the figures above),
    an accelerator as few launches as memory allows. The numbers never depend on it (tested)."""

    elements: int  # configurations x grid points per discretisation call
    compose_elements: int  # configurations x FFT points per composition call
    blocks_per_call: int  # blocks of DISCRETISE_BLOCK cells per call
    max_configurations: int  # configurations per call at most
    parallel_scans: bool = False  # the eps query's suffix sums by associative scans (pld.epsilon_blocked)


CPU_BUDGET = ChunkBudget(CHUNK_ELEMENTS, COMPOSE_CHUNK_ELEMENTS, BLOCKS_PER_CALL, 64)
# 2^25 complex128 points = 512 MiB per array of a composition call; a few such arrays fit an
# H100's 80 GB many times over. Measured on an H200: 1000 configurations in 0.23 s (220x
# dp_accounting; BENCHMARKS.md), of which the associative scans saved 0.55 s; the sizes
# themselves were not tuned (the device is no longer the limit there: Python dispatch is).
ACCELERATOR_BUDGET = ChunkBudget(2**25, 2**25, 4096, 1024, parallel_scans=True)


def chunk_budget() -> ChunkBudget:
    """The budget for JAX's default backend."""
    return CPU_BUDGET if jax.default_backend() == "cpu" else ACCELERATOR_BUDGET


# --- the batched engine ---------------------------------------------------------------------------
# The grid interval ``step`` is traced, never static, in every jitted function here: the shapes
# (grid lengths, FFT sizes) decide what compiles, not the value of h.
@functools.partial(jax.jit, static_argnames=("kind",))
def _blocks_batch(sigma, q, k_first, offset, cells, kind, step, mirrored):
    """The blocks of :func:`_pld._discretise_block` for ``kind``'s pair, or its mirror where
    ``mirrored`` (traced: an add pair shares its remove pair's program, which costs 0.5-0.8 s
    to compile on a 2-core CPU, measured)."""
    fn = lambda s, r, k, o, c: _pld._discretise_block(kind, step, s, r, k, o, c, mirrored)  # noqa: E731
    return jax.vmap(fn)(sigma, q, k_first, offset, cells)


@functools.partial(jax.jit, static_argnames=("width", "optimistic"))
def _assemble_rows(pess_b, opt_b, log_below, log_above, block0, last_block, cells, width, optimistic):
    """Each item's PMF (on the device): its blocks are consecutive and tile its grid, so its
    row is one contiguous slice of the blocks laid end to end, cut at its own length (what
    follows belongs to the next item)."""
    flat_p = jnp.concatenate([pess_b.reshape(-1), jnp.zeros(width)])
    flat_o = jnp.concatenate([opt_b.reshape(-1), jnp.zeros(width)]) if optimistic else None
    j = jnp.arange(width)

    def row(start, c, lo_mass, hi_mass):
        own = j <= c  # the grid's points 0..cells
        p = jnp.where(own, jax.lax.dynamic_slice(flat_p, (start,), (width,)), 0.0)
        p = p.at[0].add(jnp.exp(lo_mass))  # the mass below the grid, moved up to its lowest point
        if not optimistic:
            return p, jnp.exp(hi_mass), jnp.zeros(0)
        o = jnp.where(own, jax.lax.dynamic_slice(flat_o, (start,), (width,)), 0.0)
        o = o + jnp.where(j == c, jnp.exp(hi_mass), 0.0)  # the mass above the grid, rounded down to its top point
        return p, jnp.exp(hi_mass), o

    return jax.vmap(row)(block0 * pess_b.shape[-1], cells, log_below[block0], log_above[last_block])




def _discretise_exact(kind, sigma, q, k_lo, k_hi, width, step, optimistic=True):
    """One step's pessimistic and optimistic PMFs for every (configuration, stage) item of the
    (B, S) arrays, each on its own grid k_lo..k_hi (work proportional to its length, by blocks:
    :func:`dpjax.accountants.composition.pld._discretise_block`), returned zero-padded to ``width`` points,
    as device arrays (nothing is copied to the host): (pess (B', S, width), pess_inf (B', S),
    opt (B', S, width), opt_inf (B', S) = 0), B' >= B the power of two above B (rows beyond B
    repeat the last); opt has width 0 unless ``optimistic``."""
    nconf, stages = np.shape(sigma)
    sig, qq, lo, hi = (np.asarray(a).reshape(-1) for a in (sigma, q, k_lo, k_hi))
    b = _pld.DISCRETISE_BLOCK
    cells = (hi - lo).astype(np.int64)  # points - 1 (>= 1)
    nb = cells // b + 1  # blocks of b points covering the points 0..cells
    item = np.repeat(np.arange(sig.size), nb)
    block0 = np.cumsum(nb) - nb
    off = (np.arange(int(nb.sum())) - block0[item]) * b
    base, mirrored = pld_pairs.unmirrored(kind)
    pess_b, opt_b, log_below, log_above = _in_chunks_device(
        _blocks_batch, (sig[item], qq[item], lo[item] + off, off, cells[item]), chunk_budget().blocks_per_call,
        fit=_fit_blocks, kind=base, step=step, mirrored=np.bool_(mirrored))
    # rows for a power of two of configurations (the last item repeated): the row arrays' shapes
    # depend on the batch size's bucket alone
    rows = _next_pow2(nconf) * stages
    keep = np.minimum(np.arange(rows), sig.size - 1)
    pess, pess_inf, opt = _assemble_rows(pess_b, opt_b, log_below, log_above, block0[keep], (block0 + nb - 1)[keep], cells[keep],
                                         width=int(width), optimistic=bool(optimistic))
    padded = (rows // stages, stages)
    return (pess.reshape(padded + (width,)), pess_inf.reshape(padded), opt.reshape(padded + opt.shape[-1:]),
            np.zeros(padded))


@functools.partial(jax.jit, static_argnames=("k_top", "length", "base"))
def _symmetrised_batch(sigma, q, k_top, length, step, base):
    fn = lambda s, r: _pld._symmetrised_one(length, step, k_top, s, r, base)  # noqa: E731
    return jax.vmap(jax.vmap(fn))(sigma, q)


def _in_chunks_device(fn, arrays, chunk, total=None, fit=None, **static):
    """Apply a jitted ``fn`` to fixed-size chunks of the first ``total`` rows (default: all) of
    the arrays (the last chunk padded by repetition, so every call has the same shapes: one
    compilation per shape, not per batch); the results stay on the device, joined along that
    axis. Nothing waits for the device: an accelerator's queue stays full.

    The joined results have at least ``total`` rows: the chunks' count rounded up by
    :func:`_bucket_count` (zero chunks appended) times the chunk size; the rows beyond ``total``
    are padding (zeros or repeats). Their number depends on the batch only through a few buckets,
    so the device arrays built from them never compile anew when only the values change."""
    total = arrays[0].shape[0] if total is None else int(total)
    chunk = (_fit_chunk if fit is None else fit)(chunk, total)
    pending = [fn(*(a[pad] for a in arrays), **static) for _, pad in _padded_chunks(np.arange(total), chunk)]
    if len(pending) == 1:
        return pending[0]
    fill = _bucket_count(len(pending)) - len(pending)
    return jax.tree_util.tree_map(lambda *xs: jnp.concatenate(list(xs) + [jnp.zeros_like(xs[0])] * fill, axis=0), *pending)


def _padded_chunks(indices: np.ndarray, chunk: int):
    """(part, padded) for consecutive chunks of ``indices``: ``padded`` is ``part`` with its
    last index repeated up to ``chunk`` entries, so every call on a chunk has one shape."""
    for c0 in range(0, indices.size, chunk):
        part = indices[c0 : c0 + chunk]
        yield part, np.concatenate([part, np.full(chunk - part.size, part[-1])])


def _bucket_count(k: int) -> int:
    """k rounded up to one of four values per octave (4, 5, 6, 7, 8, 10, 12, 14, 16, 20, ...):
    at most 25% padding, a few shapes per octave."""
    if k <= 4:
        return k
    unit = 1 << (k.bit_length() - 3)
    return -(-k // unit) * unit


def _chunk_for(length):
    budget = chunk_budget()
    return int(max(1, min(budget.max_configurations, budget.elements // _next_pow2(int(length)))))


def _fit_chunk(chunk: int, total: int) -> int:
    """The chunk size for ``total`` items: ``chunk``, or the power of two just above ``total``
    when fewer (one configuration is computed once, not padded to 64 copies; the sizes stay
    powers of two, so the compiled shapes stay few)."""
    return int(min(chunk, _next_pow2(total)))


def _fit_blocks(chunk: int, total: int) -> int:
    """The chunk size for ``total`` blocks of the discretisation: ``chunk``, or an eighth of it
    when that holds them all. Two shapes per pair (an add pair shares its remove pair's), not
    one per power of two: its program (the pair's log-tails on 2^11 cells a block) is among the
    engine's slowest to compile (5-7 s each on a loaded 2-core CPU, measured; several times a
    small grid's whole run), while an eighth of a CPU call (8 blocks, 2^14 cells) is computed
    in about a millisecond. Padding blocks repeat the last
    and are cut off (:func:`_assemble_rows` reads each item's own blocks), so no number
    depends on it (tests/test_pld.py::test_chunk_budget_changes_no_number)."""
    small = max(1, chunk // 8)
    return int(small if total <= small else chunk)


def _next_pow4(x: int) -> int:
    k = max(0, int(math.ceil(math.log2(max(int(x), 1)))))
    return 1 << (k + (k % 2))


@jax.jit
def _chernoff_batch_step(pmf, k_lo, steps, step):
    return jax.vmap(lambda p, k, t: _pld.chernoff_log_mgf(p, k, t, step))(pmf, k_lo, steps)


@functools.partial(jax.jit, static_argnames=("n",))
def _rows_at_length(pmf, rows, take, n):
    """pmf[rows] cut or zero-padded to ``n`` points (beyond a PMF's real length it is 0), zero
    where not ``take``: the rows of one group in a composition chunk, with fixed shapes (the
    rows are padded to the chunk size), so nothing compiles per batch."""
    x = pmf[rows]
    w = x.shape[-1]
    x = x[..., :n] if w >= n else jnp.pad(x, ((0, 0), (0, 0), (0, n - w)))
    return jnp.where(take[:, None, None], x, 0.0)


@functools.partial(jax.jit, static_argnames=("n", "keep", "nbits", "parallel", "tilts"))
def _compose_batch(pmf, inf, k_lo, steps, k_hi, start, lambdas, lm_pos, lm_neg, delta, n, step, keep, nbits, parallel,
                   pessimistic, tilts):
    """Compose a chunk of configurations and query eps at ``delta``. Returns per configuration
    (the side's PMF on the window if ``keep``, its mass at +inf, tau_up, tau_lo, R, eps).
    Pessimistic: the PMF and mass of :func:`pld.pessimistic_window`, each mass also bounded
    through the tilted compositions aimed at the upper-tail masses ``tilts`` (a tuple; each
    None stands for the asked ``delta``; pessimistic side only); optimistic: the clipped
    composed PMF and the exact mass at +inf, eps from delta minus (tau_lo + R) (see
    :func:`pld.remove_from_top`). ``nbits``: the bit length of the largest step count (static:
    the squarings are unrolled and fused).

    ``pessimistic`` is traced, not static: both sides' windows are formed (a few elementwise
    passes over n points, beside the FFTs) and one is selected, exactly (a select copies its
    operand), and the tilted compositions sit in a conditional that only the pessimistic side
    takes, so the two sides of a set share one compiled program. XLA on a CPU compiles each
    of a program's ~50-70 kernels separately (~40-100 ms each, whatever its size), so a second
    program per FFT length cost as much as the first (measured: 1.5-2.5 s each; 0.25-0.3 s
    for the optimistic side's program without tilts)."""

    def tilted_bound(p, lo, t, hi, st):
        # the tilts as one batch (vmapped): one copy of the composition in the program, not one per tilt
        targets = jnp.stack([jnp.asarray(delta if target is None else target, jnp.float64) for target in tilts])
        lam_t = jax.vmap(lambda target: _pld.tilt_order(p, lo, t, step, target))(targets)
        bounds = jax.vmap(lambda lam: _pld.tilted_upper_bound(n, step, p, lo, t, hi, st, lam, nbits))(lam_t)
        return jnp.min(bounds, axis=0)

    def one(p, i, lo, t, hi, st, lam, lp, ln):
        out, inf_out, tau_up, tau_lo, roundoff = _pld._compose_one(n, step, p, i, lo, t, hi, st, lam, lp, ln, nbits)
        bound = None
        if tilts:  # the optimistic side reads no bound: its branch writes +inf, computing nothing
            bound = jax.lax.cond(pessimistic, tilted_bound, lambda *_: jnp.full(n, jnp.inf), p, lo, t, hi, st)
        out_p, inf_p = _pld.pessimistic_window(out, inf_out, tau_up, tau_lo, roundoff, bound)
        out = jnp.where(pessimistic, out_p, out)
        inf_side = jnp.where(pessimistic, inf_p, inf_out)
        inf_eff = jnp.where(pessimistic, inf_p, inf_out - tau_lo - roundoff)
        eps = jnp.zeros(()) if keep else _pld.epsilon_blocked(out, st, inf_eff, step, delta, parallel)
        return (out if keep else None), inf_side, tau_up, tau_lo, roundoff, eps

    return jax.vmap(one)(pmf, inf, k_lo, steps, k_hi, start, lambdas, lm_pos, lm_neg)


@dataclasses.dataclass
class _Plan:
    kind: str  # a pair kind, or "symmetrised_<base>"
    sigma: np.ndarray  # (B, S)
    q: np.ndarray
    steps: np.ndarray  # (B, S) int
    k_lo: np.ndarray  # (B, S): one step's grid, from loss_range
    k_hi: np.ndarray


def _plan(kind, sigma, q, steps, step, tail):
    total = np.sum(steps, axis=-1, keepdims=True).astype(np.float64)
    per_step_tail = np.maximum(tail / (10.0 * total), 1e-300)
    if kind.startswith("symmetrised_"):
        base = kind.split("_", 1)[1]
        _, hi_r = pld_pairs.loss_range(f"{base}_remove", sigma, q, per_step_tail)
        _, hi_a = pld_pairs.loss_range(f"{base}_add", sigma, q, per_step_tail)
        k_hi = np.maximum(np.ceil(np.maximum(hi_r, hi_a) / step), 1).astype(np.int64)
        return _Plan(kind, sigma, q, steps, -k_hi, k_hi)
    lo, hi = pld_pairs.loss_range(kind, sigma, q, per_step_tail)
    k_lo = np.floor(lo / step).astype(np.int64)
    k_hi = np.maximum(np.ceil(hi / step).astype(np.int64), k_lo + 1)
    return _Plan(kind, sigma, q, steps, k_lo, k_hi)


@_x64.float64
def _run(kind, sigma, q, steps, step, tail, deltas, keep, max_grid=MAX_GRID, optimistic=True, skip_over_limit=False):
    """Compose each configuration (rows of the (B, S) arrays: S stages) for one pair kind.
    Returns dict of numpy arrays: eps_pess (B, D) and eps_opt (B, D) at ``deltas`` and, if
    ``keep``, the pessimistic and optimistic DiscretePLD (batch B). A configuration whose PLD
    needs more than ``max_grid`` points raises :class:`GridLimitError`, or with
    ``skip_over_limit`` (eps only) gets NaN eps, the others computed."""
    plan = _plan(kind, sigma, q, steps, step, tail)
    nconf = sigma.shape[0]
    length_each = np.max(plan.k_hi - plan.k_lo + 1, axis=-1)
    over = length_each > max_grid
    if np.any(over):
        if not skip_over_limit:
            worst = int(np.argmax(length_each))
            raise GridLimitError(
                f"value_discretization_interval={step:g} is too fine for noise_multiplier={float(np.min(sigma[worst])):.4g}: "
                f"one step's loss range needs {int(length_each[worst])} grid points (> {max_grid}); use a coarser interval",
                np.flatnonzero(over), length_each[over])
        return _skipping(over, lambda keep_idx: _run(kind, sigma[keep_idx], q[keep_idx], steps[keep_idx], step, tail, deltas, keep,
                                                     max_grid, optimistic, skip_over_limit=True), nconf, len(deltas))
    # one step's grid length is shared by the configurations of a chunk: group by its power of
    # two (the symmetrised pairs by powers of 4: each length compiles their discretisation)
    if kind.startswith("symmetrised_"):
        length_pow2 = np.array([_next_pow4(x) for x in length_each])
    else:
        length_pow2 = np.array([max(_next_pow2(x), 1024) for x in length_each])
    groups = [np.flatnonzero(length_pow2 == length) for length in np.unique(length_pow2)]
    idx = np.concatenate(groups)
    # a few configurations in numpy (no compilation: pld_numpy), more by the jitted engine
    engine = pld_numpy.composed_sets if numpy_applies(nconf, length_each) else _composed_sets
    try:
        composed = engine(plan, groups, np.unique(length_pow2), step, tail, deltas, keep, max_grid, optimistic, skip_over_limit)
    except GridLimitError as err:  # its positions are in the order of idx
        raise GridLimitError(str(err), idx[err.configurations], err.points) from None
    results = {int(i): {} for i in idx}
    opt_parts = []
    for pessimistic, res in composed:
        if pessimistic:
            for j, i in enumerate(idx):
                results[int(i)].update(eps_pess=res["eps"][j], grid=res["n"][j], tau_up=res["tau_up"][j], roundoff=res["roundoff"][j])
                if keep:
                    results[int(i)]["pess"] = res["pld"][j]
        else:
            opt_parts.append(res)
    for j, i in enumerate(idx):
        results[int(i)]["eps_opt"] = np.max([r["eps"][j] for r in opt_parts], axis=0) if opt_parts else np.full(len(deltas), np.nan)
        if keep:
            results[int(i)]["opt"] = [r["pld"][j] for r in opt_parts]
    order = [results[i] for i in range(nconf)]
    out = {
        "eps_pess": np.stack([r["eps_pess"] for r in order]),
        "eps_opt": np.stack([r["eps_opt"] for r in order]),
        "grid": np.array([r["grid"] for r in order]),
        "tau_up": np.array([r["tau_up"] for r in order]),
        "roundoff": np.array([r["roundoff"] for r in order]),
    }
    if keep:
        out["pess"] = _stack_plds([r["pess"] for r in order], step)
        out["opt"] = [_stack_plds([r["opt"][j] for r in order], step) for j in range(len(order[0]["opt"]))]
    return out


def _composed_sets(plan, groups, lengths, step, tail, deltas, keep, max_grid, optimistic, skip_over_limit):
    """(pessimistic?, :func:`_compose_set`'s result) of each set of stage PMFs (the pessimistic
    set, then the optimistic ones) of the configurations of ``groups`` (grids of at most
    ``lengths`` points) in their order. Each group of grid lengths is discretised apart, then
    each set is composed over all groups at once: the configurations sharing an FFT length
    share chunks whatever their group (fewer partial chunks, one compiled composition per FFT
    length)."""
    sets_by_group = [_discretise_group(plan, idx, int(length), step, optimistic) for idx, length in zip(groups, lengths)]
    idx = np.concatenate(groups)
    out = []
    for s_i in range(len(sets_by_group[0])):
        parts = [sets[s_i] for sets in sets_by_group]
        pessimistic = parts[0][4]
        out.append((pessimistic, _compose_set([p[0] for p in parts], [g.size for g in groups], [p[1] for p in parts],
                                              *(np.concatenate([p[j] for p in parts]) for j in (2, 3)), plan.steps[idx], step,
                                              tail, pessimistic, deltas, keep, max_grid, skip_over_limit=skip_over_limit)))
    return out


def _skipping(over, run_rest, nconf, ndeltas):
    """_run's eps results with NaN for the configurations ``over`` the grid limit and those of
    ``run_rest(indices of the others)`` elsewhere."""
    rest = np.flatnonzero(~over)
    out = {"eps_pess": np.full((nconf, ndeltas), np.nan), "eps_opt": np.full((nconf, ndeltas), np.nan),
           "grid": np.zeros(nconf, np.int64), "tau_up": np.zeros(nconf), "roundoff": np.zeros(nconf)}
    if rest.size:
        res = run_rest(rest)
        for key in out:
            out[key][rest] = res[key]
    return out


def _stack_plds(items, step):
    width = max(p[0].shape[-1] for p in items)
    pmf = np.stack([np.pad(p[0], (0, width - p[0].shape[-1])) for p in items])
    return _pld.DiscretePLD(pmf, np.array([p[1] for p in items], dtype=np.int64), np.array([p[2] for p in items]), step)


def _discretise_group(plan, idx, length, step, optimistic=True):
    """One step's PMFs of the configurations ``idx`` (grids of at most ``length`` points): a list
    of sets (pmf (B, S, W), mass at +inf (B, S), grid index of pmf[..., 0] (B, S), of the last
    point that may carry mass (B, S), pessimistic?) to be composed."""
    sigma, q = plan.sigma[idx], plan.q[idx]
    if plan.kind.startswith("symmetrised_"):
        k_top = int(np.max(plan.k_hi[idx]))
        base = plan.kind.split("_", 1)[1]
        disc_len = max(length, 2 * k_top + 1)
        pess, pess_inf, (opt_r, opt_a) = _in_chunks_device(_symmetrised_batch, (sigma, q), _chunk_for(disc_len * sigma.shape[1]),
                                                    k_top=k_top, length=disc_len, step=step, base=base)
        sets = symmetrised_sets(pess, pess_inf, opt_r, opt_a, sigma.shape, k_top, disc_len)
    else:
        k_lo, k_hi = plan.k_lo[idx], plan.k_hi[idx]  # k_hi: the real top of each grid (the arrays are padded to ``length``)
        pess, pess_inf, opt, opt_inf = _discretise_exact(plan.kind, sigma, q, k_lo, k_hi, length, step, optimistic)
        sets = [(pess, pess_inf, k_lo, k_hi, True), (opt, opt_inf, k_lo, k_hi, False)]
    return sets if optimistic else [st for st in sets if st[4]]


def _compose_set(pmfs, sizes, inf, k_lo, k_hi, steps, step, tail, pessimistic, deltas, keep, max_grid, tilt=True,
                 skip_over_limit=False):
    """Compose every configuration of one set of stage PMFs, given as groups ``pmfs`` (device
    arrays (B_g, S, W_g); the configurations are the groups' rows in order): Chernoff window,
    then FFT in chunks of configurations sharing an FFT length; ``sizes``: the groups' numbers
    of configurations B_g (their arrays may have more rows: padding). ``inf`` (a list of
    (B_g, S) device arrays, likewise padded): mass at +inf; ``k_lo``, ``k_hi`` (B, S): grid
    index of each PMF's first point and of its last one that may carry mass.

    For eps alone the host waits for the device twice: for the Chernoff data (the windows set
    the FFT lengths, hence the compiled shapes), and for the answers once every chunk is
    dispatched."""
    nconf = k_lo.shape[0]
    stepsf = steps.astype(np.float64)
    bounds = np.cumsum([0] + list(sizes))
    chernoff = [_in_chunks_device(_chernoff_batch_step, (p, k_lo[b0:b1], stepsf[b0:b1]), _chunk_for(p.shape[-1] * p.shape[1]),
                                  total=b1 - b0, step=step)
                for p, b0, b1 in zip(pmfs, bounds[:-1], bounds[1:])]
    chernoff, inf = jax.device_get((chernoff, list(inf)))
    lambdas, lm_pos, lm_neg = (np.concatenate([c[j][:size] for c, size in zip(chernoff, sizes)]) for j in range(3))
    inf = np.concatenate([x[:size] for x, size in zip(inf, sizes)])
    group_of = np.repeat(np.arange(len(pmfs)), np.diff(bounds))
    row_of = np.arange(nconf) - bounds[group_of]
    offset = np.sum(steps * k_lo, axis=-1)
    top_support = np.sum(steps * k_hi, axis=-1)
    real_len = np.max(k_hi - k_lo, axis=-1) + 1  # the FFT must hold each stage's PMF: n >= this, not the padded width
    start, n_conf = _window(lambdas, lm_pos, lm_neg, offset, top_support, real_len, step, tail)
    over = n_conf > max_grid
    if np.any(over) and not skip_over_limit:
        _raise_window_limit(over, n_conf, steps, step, max_grid)
    deltas = np.asarray(deltas, dtype=np.float64)
    # squarings of the binary powering: the bit length of the largest step count, rounded up to
    # a multiple of 4 (fewer compiled programs; the surplus squarings leave the powers unchanged)
    nbits = int(-(-max(1, int(np.max(steps)).bit_length()) // 4) * 4)
    budget = chunk_budget()
    res = {"eps": [None] * nconf, "n": n_conf, "tau_up": np.zeros(nconf), "roundoff": np.zeros(nconf), "pld": [None] * nconf}

    def collect(part, outs):
        p_out, inf_out, tau_up, tau_lo, roundoff, _ = outs[0]
        for j, i in enumerate(part):
            if tau_up[j] > tail * 1.0001 or tau_lo[j] > tail * 1.0001:  # the window from _window guarantees this
                raise AssertionError(f"Chernoff window too small: tau_up={tau_up[j]:.3g}, tau_lo={tau_lo[j]:.3g}")
            res["eps"][i] = np.array([o[5][j] for o in outs])
            res["tau_up"][i] = tau_up[j]
            res["roundoff"][i] = roundoff[j]
            if keep:
                if pessimistic:
                    kept = (p_out[j], inf_out[j])
                else:
                    kept = (_pld.remove_from_top(p_out[j], tau_lo[j] + roundoff[j]), inf_out[j])
                res["pld"][i] = _trim(kept[0], start[i], np.asarray(kept[1]), tail, pessimistic)

    for i in np.flatnonzero(over):  # skipped (skip_over_limit): no answer
        res["eps"][i] = np.full(len(deltas), np.nan)

    def dispatch(todo, tilts):
        """Compose the configurations ``todo`` in chunks of one FFT length each."""
        pending = []
        for n in np.unique(n_conf[todo]):
            sel = todo[n_conf[todo] == n]
            n = int(n)
            chunk = _fit_chunk(int(max(2, min(budget.max_configurations, budget.compose_elements // n))), sel.size)
            for part, pad in _padded_chunks(sel, chunk):
                # the stage PMFs of the chunk, gathered on the device from their groups
                pmf_n = None
                for g in np.unique(group_of[pad]):
                    take = group_of[pad] == g
                    rows = np.where(take, row_of[pad], row_of[pad][take][0])
                    x = _rows_at_length(pmfs[g], rows, take, n=n)
                    pmf_n = x if pmf_n is None else pmf_n + x
                outs = [_compose_batch(
                    pmf_n, inf[pad], k_lo[pad], stepsf[pad], k_hi[pad], start[pad], lambdas[pad], lm_pos[pad], lm_neg[pad],
                    d, n=n, step=step, keep=keep and d_i == 0, nbits=nbits, parallel=budget.parallel_scans,
                    pessimistic=bool(pessimistic), tilts=tilts) for d_i, d in enumerate(deltas)]
                if keep:
                    collect(part, jax.device_get(outs))
                else:
                    pending.append((part, outs))
        for part, outs in jax.device_get(pending):
            collect(part, outs)

    # eps alone: every chunk is dispatched before any answer is read (the device's queue stays
    # full); kept PLDs: each chunk is read and trimmed at once (its untrimmed window is n points
    # per configuration, too large to hold for a whole batch). A kept pessimistic PLD is always
    # bounded through tilted compositions aimed at KEPT_TILTS (it may be asked any delta later);
    # for eps alone one tilt aimed at the asked delta, where TILT_NEEDED / TILT_ALWAYS_BELOW say
    # (both sides of a set dispatch the same tilts: one compiled program, the optimistic side skips them)
    todo = np.flatnonzero(~over)
    at_once = tilt and not keep and float(np.min(deltas)) < TILT_ALWAYS_BELOW
    dispatch(todo, tilts=KEPT_TILTS if (tilt and keep) else ((None,) if at_once else ()))
    if pessimistic and tilt and not keep and not at_once and todo.size:
        need = todo[res["roundoff"][todo] > TILT_NEEDED * float(np.min(deltas))]
        if need.size:
            dispatch(need, tilts=(None,))  # aimed at the asked delta
    return res


# --- public API -----------------------------------------------------------------------------------
def _normalise_options(adjacency, sampling, mechanism):
    """The convention's spellings (:mod:`dpjax.accountants._convention`), checked."""
    adjacency = _convention.adjacency(adjacency)
    sampling = _convention.sampling(sampling)
    _validate.one_of("mechanism", mechanism, MECHANISMS)
    return adjacency, sampling


def _kinds(adjacency, sampling, mechanism, subsampled):
    """The pair kinds whose composed curves are maxed over, and the result's description."""
    if not subsampled:
        return [f"{mechanism}_remove"], f"{mechanism} mechanism, {mechanism.capitalize()} pair of shift 1 (no subsampling)"
    if sampling == "poisson" and adjacency == "add-remove":
        return [f"{mechanism}_remove", f"{mechanism}_add"], (
            f"Poisson-subsampled {mechanism} mechanism, remove and add pairs (Zhu, Dong & Wang 2022, Thm 11)")
    if sampling == "poisson" and adjacency == "replace-one":
        if mechanism != "gaussian":
            raise ValueError(f"mechanism={mechanism!r} with sampling='poisson' and adjacency='replace-one' has no dominating pair "
                             "in dpjax (only the Gaussian's mixture-vs-mixture pair); use adjacency='add-remove'")
        return ["gaussian_replace"], "Poisson-subsampled Gaussian mechanism, replace-one mixture-vs-mixture pair (as dp_accounting)"
    if sampling == "without-replacement" and adjacency == "replace-one":
        return [f"symmetrised_{mechanism}"], (
            f"{mechanism} mechanism on fixed-size batches (sampling without replacement), replace-one: "
            "C_q(f) = min(f_q, f_q^-1)** (Dong, Roth & Su 2022, Thm 4.2)")
    raise ValueError(
        "sampling='without-replacement' with adjacency='add-remove' has no sound dominating pair: a fixed batch size of a "
        "data set whose size changes is not defined (Lebeda et al. 2024); use adjacency='replace-one' (noise multiplier "
        "relative to the replace-one sensitivity 2C) or sampling='poisson'")


def _validate_common(noise_multiplier, sampling_rate, steps, value_discretization_interval, tail_mass):
    for name, value in (("noise_multiplier", noise_multiplier), ("sampling_rate", sampling_rate), ("steps", steps)):
        if np.size(value) == 0:
            raise ValueError(f"{name}={_validate._fmt(value)} violates {name} a number or a non-empty array: it is empty")
    sigma = np.asarray(noise_multiplier, dtype=np.float64)
    q = np.asarray(sampling_rate, dtype=np.float64)
    if np.any(~((sigma > 0) & np.isfinite(sigma))):
        raise ValueError(f"noise_multiplier={noise_multiplier!r} violates noise_multiplier > 0 (finite)")
    if np.any(~((q > 0) & (q <= 1))):
        raise ValueError(f"sampling_rate={sampling_rate!r} violates 0 < sampling_rate <= 1")
    t = np.asarray(steps)
    if t.dtype.kind not in "iu" or np.any(t < 1):
        raise ValueError(f"steps={steps!r} violates steps an integer >= 1")
    h = _validate.in_range("value_discretization_interval", value_discretization_interval, 0.0, 1.0, low_open=True)
    tail = _validate.in_range("tail_mass", tail_mass, 0.0, 1e-3, low_open=True)
    return sigma, q, t.astype(np.int64), h, tail


def _check_tolerance(bracket, tolerance, tolerance_delta):
    if tolerance is None:
        return
    low, high = bracket.epsilon_bracket(tolerance_delta)
    gap = np.max(np.where(np.isfinite(high), high - low, 0.0))
    if gap > tolerance:
        raise ValueError(
            f"epsilon_tolerance={tolerance:g} not met: the pessimistic and optimistic eps at delta={tolerance_delta:g} differ "
            f"by up to {gap:.3g} at value_discretization_interval={bracket.step:g}; the discretisation is too coarse for the "
            "requested accuracy: use a smaller interval")


@_validate.arguments(noise_multiplier="numbers", sampling_rate="numbers", steps="ints",
                     value_discretization_interval="number", tail_mass="number")
def pld_curve(
    noise_multiplier,
    sampling_rate,
    steps,
    *,
    adjacency: str = "add-remove",
    sampling: str = "poisson",
    mechanism: str = "gaussian",
    value_discretization_interval: float = DEFAULT_INTERVAL,
    tail_mass: float = DEFAULT_TAIL,
    epsilon_tolerance: Optional[float] = None,
    tolerance_delta: float = 1e-5,
) -> PrivacyCurve:
    """Privacy curve of ``steps`` subsampled Gaussian (or Laplace) steps by a PLD accountant.

    Args:
        noise_multiplier: noise std (Laplace: scale) over the step's sensitivity under
            ``adjacency`` (C for add/remove, 2C for replace-one with clip norm C).
        sampling_rate: q in (0, 1]: Poisson probability, or batch size / data set size for
            ``sampling="without-replacement"``; 1 = full batch.
        steps: number of steps (integer >= 1). The three broadcast: a batch of configurations,
            computed together.
        adjacency: "add-remove" or "replace-one" (docs/guide/conventions.md; the underscore
            spellings still work for this release, with a DeprecationWarning).
        sampling: "poisson" or "without-replacement" (fixed batch size; replace-one only).
        mechanism: "gaussian" or "laplace".
        value_discretization_interval: grid step h of the privacy loss (nats), as dp_accounting.
        tail_mass: mass allowed outside the composed window (added to delta on the
            pessimistic side).
        epsilon_tolerance: if given, raise ``ValueError`` unless h <= epsilon_tolerance and the
            pessimistic and optimistic eps at ``tolerance_delta`` differ by at most it.

    Returns:
        A :class:`PrivacyCurve` whose ``epsilon(delta)`` / ``delta(epsilon)`` are pessimistic
        (never below the truth for the dominating pair); ``curve.optimistic()`` is the
        companion that is never above it, ``curve.pld.epsilon_bracket(delta)`` both at once.
        ``curve.compose(other)`` composes PLD curves (FFT convolution).
    """
    adjacency, sampling = _normalise_options(adjacency, sampling, mechanism)
    sigma, q, t, h, tail = _validate_common(noise_multiplier, sampling_rate, steps, value_discretization_interval, tail_mass)
    if epsilon_tolerance is not None:
        tol = _validate.positive("epsilon_tolerance", epsilon_tolerance)
        _validate.in_range("tolerance_delta", tolerance_delta, 0.0, 1.0, low_open=True, high_open=True)
        if h > tol:
            raise ValueError(f"value_discretization_interval={h:g} is too coarse for epsilon_tolerance={tol:g}: "
                             "the grid cannot resolve eps more finely than its step; use an interval <= the tolerance")
    shape = np.broadcast_shapes(sigma.shape, q.shape, t.shape)
    sigma_b, q_b, t_b = (np.broadcast_to(a, shape).reshape(-1, 1) for a in (sigma, q, t))
    subsampled = bool(np.any(q_b < 1))
    kinds, result = _kinds(adjacency, sampling, mechanism, subsampled)
    fallback = _rdp_applies(adjacency, sampling, mechanism, q_b)
    bracket = _bracket_for(kinds, sigma_b, q_b, t_b, h, tail, shape, adjacency, fallback)
    _check_tolerance(bracket, epsilon_tolerance, tolerance_delta)
    steps_txt = f"{int(t.flat[0])}" if t.size == 1 else "per-configuration"
    prov = Provenance(
        result=f"PLD accountant: {result}, {steps_txt}-fold composition by FFT (pessimistic connect-the-dots, "
               f"h={h:g}; Doroshenko et al. 2022){_floor_text(bracket)}{_FALLBACK_TEXT if fallback else ''}",
        mode="bound",
        assumptions=_assumptions(adjacency, sampling, mechanism, subsampled),
    )
    return PrivacyCurve.from_pld(bracket, prov)


def _floor_text(bracket: PLDBracket) -> str:
    """The delta floor (PLDBracket.delta_floor), stated in the provenance: below it eps is inf."""
    floor = float(np.max(bracket.delta_floor))
    return f"; certified for delta >= {floor:.2g} (its delta floor; eps = inf below)" if floor > 0 else ""


def _assumptions(adjacency, sampling, mechanism, subsampled):
    out = [f"{adjacency} adjacency; noise_multiplier = noise {'std' if mechanism == 'gaussian' else 'scale'} / the step's sensitivity under it",
           "noise independent across steps"]
    if subsampled:
        out.append("Poisson sampling (each record independently with probability q)" if sampling == "poisson"
                   else "fixed-size batches drawn uniformly without replacement (q = batch size / data set size)")
    if subsampled and sampling == "poisson" and adjacency == "replace-one":
        out.append("replace-one worst case: record contributions +C and -C (exact for scalar contributions)")
    if mechanism == "laplace":
        out.append("scalar query (Laplace noise)")
    return tuple(out)


def _bracket_for(kinds, sigma, q, steps, h, tail, shape, adjacency, rdp_applies: bool = False):
    pess, opt = [], []
    for kind in kinds:
        res = _run(kind, sigma, q, steps, h, tail, deltas=np.array([1e-5]), keep=True)
        pess.append(_reshape(res["pess"], shape))
        opt.extend(_reshape(o, shape) for o in res["opt"])
    fallback = RDPFallback.for_run(sigma, q, steps, shape) if rdp_applies else None
    return PLDBracket(tuple(pess), tuple(opt), adjacency, h, fallback)


def _rdp_applies(adjacency: str, sampling: str, mechanism: str, q) -> bool:
    """Whether the RDP accountant bounds this run too (Gaussian noise, Poisson sampling,
    add/remove adjacency or full batches): then a wide PLD bracket falls back on it."""
    return mechanism == "gaussian" and sampling == "poisson" and (adjacency == "add-remove" or bool(np.all(np.asarray(q) >= 1)))


_FALLBACK_TEXT = ("; where its bracket is wider than 5% of the pessimistic value the RDP bound (Mironov, Talwar & Zhang "
                  "2019) answers if smaller: curve.pld.source(delta) says which, curve.pld.pld_epsilon(delta) is the PLD's own")


def _reshape(p: _pld.DiscretePLD, shape):
    return _pld.DiscretePLD(p.pmf.reshape(shape + p.pmf.shape[-1:]), p.start.reshape(shape), p.infinity_mass.reshape(shape), p.step)


@_validate.arguments(noise_multipliers="array", sampling_rates="array", steps="ints", value_discretization_interval="number")
def pld_sequence_curve(
    noise_multipliers,
    sampling_rates,
    steps,
    *,
    adjacency: str = "add-remove",
    sampling: str = "poisson",
    mechanism: str = "gaussian",
    value_discretization_interval: float = DEFAULT_INTERVAL,
    tail_mass: float = DEFAULT_TAIL,
) -> PrivacyCurve:
    """One curve for a heterogeneous run: stage k is ``steps[k]`` steps at noise multiplier
    ``noise_multipliers[k]`` and sampling rate ``sampling_rates[k]`` (1-D, same length), all
    composed in one FFT (products of the stages' transforms raised to their step counts)."""
    adjacency, sampling = _normalise_options(adjacency, sampling, mechanism)
    sigma, q, t, h, tail = _validate_common(noise_multipliers, sampling_rates, steps, value_discretization_interval, tail_mass)
    if not (sigma.ndim == q.ndim == t.ndim == 1 and sigma.size == q.size == t.size):
        raise ValueError(f"noise_multipliers, sampling_rates and steps must be 1-D of the same length; got shapes "
                         f"{sigma.shape}, {q.shape}, {t.shape}")
    subsampled = bool(np.any(q < 1))
    kinds, result = _kinds(adjacency, sampling, mechanism, subsampled)
    fallback = _rdp_applies(adjacency, sampling, mechanism, q)
    bracket = _bracket_for(kinds, sigma[None, :], q[None, :], t[None, :], h, tail, (), adjacency, fallback)
    prov = Provenance(
        result=f"PLD accountant: {result}, {sigma.size} stages ({int(t.sum())} steps) composed by FFT (h={h:g}){_floor_text(bracket)}"
               f"{_FALLBACK_TEXT if fallback else ''}",
        mode="bound",
        assumptions=_assumptions(adjacency, sampling, mechanism, subsampled),
    )
    return PrivacyCurve.from_pld(bracket, prov)


@_validate.arguments(noise_multiplier="numbers", sampling_rate="numbers", steps="ints", delta="numbers")
def pld_epsilons(
    noise_multiplier,
    sampling_rate,
    steps,
    delta,
    *,
    adjacency: str = "add-remove",
    sampling: str = "poisson",
    mechanism: str = "gaussian",
    value_discretization_interval: float = DEFAULT_INTERVAL,
    tail_mass: float = DEFAULT_TAIL,
    optimistic: bool = True,
) -> PLDEpsilons:
    """The pessimistic and optimistic eps at ``delta`` (a scalar) for a batch of configurations,
    as a :class:`~dpjax.accountants.composition.pld_bracket.PLDEpsilons` (``.epsilon``,
    ``.optimistic_epsilon``), without keeping the PLDs (the fast path for many configurations:
    nothing but the answers leaves the device). ``optimistic=False`` skips the optimistic side
    (NaN there), halving the work when only the bound is wanted."""
    adjacency, sampling = _normalise_options(adjacency, sampling, mechanism)
    sigma, q, t, h, tail = _validate_common(noise_multiplier, sampling_rate, steps, value_discretization_interval, tail_mass)
    optimistic = _flag("optimistic", optimistic)
    d = np.asarray(delta, dtype=np.float64)
    if d.ndim != 0 or not (0 < d < 1):
        raise ValueError(f"delta={delta!r} violates 0 < delta < 1 (a scalar)")
    shape = np.broadcast_shapes(sigma.shape, q.shape, t.shape)
    pess, opt = _epsilons(*(np.broadcast_to(a, shape).reshape(-1) for a in (sigma, q, t)), float(d), adjacency, sampling,
                          mechanism, h, tail, optimistic)
    return PLDEpsilons(pess.reshape(shape), opt.reshape(shape), float(d), h)


def _epsilons(sigma, q, steps, delta: float, adjacency: str, sampling: str, mechanism: str, step: float, tail: float,
              optimistic: bool, skip_over_limit: bool = False, max_grid: int = MAX_GRID):
    """(pessimistic, optimistic) eps at ``delta`` of flat arrays of checked, normalised
    arguments; with ``skip_over_limit``, NaN for configurations whose PLD needs more grid points
    than MAX_GRID (:class:`GridLimitError` otherwise)."""
    kinds, _ = _kinds(adjacency, sampling, mechanism, bool(np.any(q < 1)))
    pess = opt = None
    for kind in kinds:
        res = _run(kind, sigma.reshape(-1, 1), q.reshape(-1, 1), steps.reshape(-1, 1), step, tail, deltas=np.array([delta]),
                   keep=False, max_grid=max_grid, optimistic=optimistic, skip_over_limit=skip_over_limit)
        p, o = res["eps_pess"][:, 0], res["eps_opt"][:, 0]
        pess = p if pess is None else np.maximum(pess, p)  # NaN (over the limit) stays NaN
        opt = o if opt is None else np.maximum(opt, o)
    return pess, opt


__all__ = ["PLDBracket", "pld_curve", "pld_sequence_curve", "pld_epsilons", "compose_plds"]
