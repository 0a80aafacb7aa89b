"""Samples of a mechanism's output, read in row chunks: the split and the counting that every
threshold-based estimator shares.

A GPU audit holds 1e7-1e8 chain outputs on the device. The certified estimators
(:func:`~dpjax.estimators.epsilon_lower_bound`, :func:`~dpjax.estimators.gdp_lower_bound`,
:func:`~dpjax.estimators.tradeoff_upper_bound`, :func:`~dpjax.estimators.rdp_lower_bound`) need
only two things from the samples:

1. a *selection* part (a random subset of the rows, at most :data:`MAX_SELECTION` of them) on
   which the 1-D statistic is fitted and the tests (thresholds, directions) are chosen, and
2. the *held-out* rows' statistic values counted into the intervals cut by those thresholds.

:class:`SamplePair` does both with memory O(chunk + selection): the arrays (numpy or JAX) are
never copied whole to the host; each chunk of :data:`CHUNK_ROWS` rows is moved, checked finite,
mapped through the statistic, counted and dropped. Coupled samples (row i of each side from one
chain pair, ``n_p == n_q``) keep their pairing: both sides share the selection rows.

Up to :data:`PERMUTATION_ROWS` rows the selection is the head of one random permutation of the
rows (the recipe dpjax has always used, so results at those sizes are unchanged); above it the
selection is ``rng.choice(n, m, replace=False)``, which needs O(m) memory instead of O(n).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Iterator, Optional

import numpy as np

from .. import _validate
from .statistics import Statistic, fit_statistic

# Rows moved to the host at a time: 2^20 rows of d floats (8 MiB per side for d = 1).
CHUNK_ROWS = 1 << 20
# The random permutation of all rows (the historical split) costs 8n bytes: above this many
# rows the selection is drawn as a subset instead.
PERMUTATION_ROWS = 1 << 23
# The selection part never exceeds this many rows: fitting a statistic and choosing a set need
# thousands of samples, not tens of millions, and every other row then counts towards the bound.
MAX_SELECTION = 1 << 20


def _shape_of(name: str, value) -> tuple:
    if value is None or isinstance(value, (str, bytes)):
        raise _validate.ArgumentKindError(f"{name}={value!r} violates {name} an array of real numbers: got {type(value).__name__}")
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is None or dtype is None:
        return np.shape(_validate.real_array(name, value))
    if np.dtype(dtype).kind not in "biuf":
        raise _validate.ArgumentKindError(f"{name} has dtype {dtype}; {name} must be an array of real numbers")
    return tuple(shape)


class Samples:
    """One side's samples, shape (n,) or (n, d), read as float64 host chunks of rows.

    ``value`` may be a numpy array, a JAX array (it stays where it is; chunks are sliced on its
    device and copied one at a time) or a nested list. Non-finite entries raise when their chunk
    is read, naming the row: a NaN means a chain diverged and is never dropped silently.
    """

    def __init__(self, name: str, value):
        shape = _shape_of(name, value)
        if len(shape) not in (1, 2):
            raise ValueError(f"{name} has shape {shape}; expected (n,) or (n, d)")
        if shape[0] == 0 or (len(shape) == 2 and shape[1] == 0):
            raise ValueError(f"{name} has shape {shape}; it must hold at least one sample of dimension >= 1")
        self.name = name
        self._value = value if hasattr(value, "shape") and hasattr(value, "dtype") else _validate.real_array(name, value)
        self.num_rows = int(shape[0])
        self.dim = 1 if len(shape) == 1 else int(shape[1])

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as a float64 (rows, d) host array, checked finite."""
        if isinstance(self._value, np.ndarray):
            chunk = self._value[start:stop]
        else:  # a device array: slice on its device (in x64, so float64 samples stay float64)
            import jax

            with jax.enable_x64(True):
                chunk = np.asarray(self._value[start:stop])
        chunk = np.asarray(chunk, dtype=np.float64).reshape(stop - start, self.dim)
        self._check_finite(chunk, np.arange(start, stop))
        return chunk

    def _check_finite(self, rows: np.ndarray, index: np.ndarray) -> None:
        if not np.all(np.isfinite(rows)):
            row, col = np.argwhere(~np.isfinite(rows))[0]
            raise ValueError(
                f"{self.name} has a non-finite value {rows[row, col]!r} at index {[int(index[row]), int(col)]}; all values must be finite"
            )

    def take(self, index: np.ndarray) -> np.ndarray:
        """The rows at ``index`` (a small integer array) as a float64 (k, d) host array, checked finite."""
        index = np.asarray(index, dtype=np.int64)
        if isinstance(self._value, np.ndarray):
            picked = self._value[index]
        else:  # a device array: gather on its device, copy only the picked rows
            import jax
            import jax.numpy as jnp

            with jax.enable_x64(True):
                picked = np.asarray(self._value[jnp.asarray(index)])
        out = np.asarray(picked, dtype=np.float64).reshape(index.size, self.dim)
        self._check_finite(out, index)
        return out

    def chunks(self, chunk_rows: Optional[int] = None) -> Iterator[tuple[int, np.ndarray]]:
        chunk_rows = chunk_rows or CHUNK_ROWS  # read at call time (tests shrink it)
        for start in range(0, self.num_rows, chunk_rows):
            stop = min(start + chunk_rows, self.num_rows)
            yield start, self.rows(start, stop)


def sample_pair(samples_p, samples_q, min_samples: int = 2) -> tuple[Samples, Samples]:
    """Both sides as :class:`Samples` with the same dimension and at least ``min_samples`` rows."""
    p, q = Samples("samples_p", samples_p), Samples("samples_q", samples_q)
    if p.dim != q.dim:
        raise ValueError(f"samples_p has dimension {p.dim} and samples_q has dimension {q.dim}; they must match")
    for side in (p, q):
        if side.num_rows < min_samples:
            raise ValueError(f"{side.name} has {side.num_rows} samples; this estimator needs at least {min_samples}")
    return p, q


def _selection_rows(rng: np.random.Generator, n: int, m: int) -> np.ndarray:
    """The rows of the selection part in draw order (the head of a permutation up to
    PERMUTATION_ROWS rows, as dpjax always drew it; a subset draw above)."""
    if n <= PERMUTATION_ROWS:
        return rng.permutation(n)[:m]
    return rng.choice(n, size=m, replace=False)


def _selection_size(n: int, fraction: float) -> int:
    return min(max(1, int(fraction * n)), n - 1, MAX_SELECTION if n > PERMUTATION_ROWS else n - 1)


@dataclasses.dataclass(frozen=True)
class SplitPair:
    """Samples split into a selection part and a held-out part, with the 1-D statistic fitted on
    the selection part.

    ``t_sel_p``, ``t_sel_q``: the statistic on the selection rows, sorted. ``m_p``, ``m_q``,
    ``h_p``, ``h_q``: selection and held-out sizes. ``statistic``: its name; ``dim``: the
    samples' dimension; ``value_range``: (min, max) of the raw samples over all rows.
    :meth:`holdout_tail_counts` and :meth:`holdout_bins` count the held-out rows in chunks.
    """

    p: Samples
    q: Samples
    selected_p: np.ndarray  # sorted row indices of the selection part
    selected_q: np.ndarray
    t_sel_p: np.ndarray
    t_sel_q: np.ndarray
    m_p: int
    m_q: int
    h_p: int
    h_q: int
    statistic_fn: Callable[[np.ndarray], np.ndarray]
    statistic: str
    dim: int
    paired: bool

    def _held_out(self, side: Samples, selected: np.ndarray, chunk_rows: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """(start, statistic of the chunk's rows, True where a row is held out) per chunk."""
        for start, rows in side.chunks(chunk_rows):
            stop = start + rows.shape[0]
            keep = np.ones(rows.shape[0], dtype=bool)
            lo, hi = np.searchsorted(selected, [start, stop])
            keep[selected[lo:hi] - start] = False
            yield start, _statistic_values(self.statistic_fn, rows), keep

    def holdout_tail_counts(self, thresholds: np.ndarray, chunk_rows: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """Held-out counts of {t > c} and {t < c} for every threshold c (sorted, unique):
        arrays (len(thresholds), 2) over ("upper", "lower") for each side."""
        thresholds = np.asarray(thresholds, dtype=np.float64)
        out = []
        for side, selected in ((self.p, self.selected_p), (self.q, self.selected_q)):
            below = np.zeros(thresholds.size + 1, dtype=np.int64)  # by #{c < t}
            at_or_below = np.zeros(thresholds.size + 1, dtype=np.int64)  # by #{c <= t}
            for _, t, keep in self._held_out(side, selected, chunk_rows):
                t = t[keep]
                below += np.bincount(np.searchsorted(thresholds, t, side="left"), minlength=thresholds.size + 1)
                at_or_below += np.bincount(np.searchsorted(thresholds, t, side="right"), minlength=thresholds.size + 1)
            j = np.arange(thresholds.size)
            # t > c_j  <=>  #{c < t} >= j + 1;   t < c_j  <=>  #{c <= t} <= j
            upper = np.cumsum(below[::-1])[::-1][j + 1]
            lower = np.cumsum(at_or_below)[j]
            out.append(np.stack([upper, lower], axis=-1).astype(np.float64))
        return out[0], out[1]

    def holdout_bins(self, edges: np.ndarray, chunk_rows: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
        """Held-out counts per bin of the sorted ``edges`` (bin k: #{edges <= t} = k), each side."""
        edges = np.asarray(edges, dtype=np.float64)
        out = []
        for side, selected in ((self.p, self.selected_p), (self.q, self.selected_q)):
            counts = np.zeros(edges.size + 1, dtype=np.int64)
            for _, t, keep in self._held_out(side, selected, chunk_rows):
                counts += np.bincount(np.searchsorted(edges, t[keep], side="right"), minlength=edges.size + 1)
            out.append(counts)
        return out[0], out[1]

    def paired_holdout_bins(self, edges: np.ndarray, chunk_rows: Optional[int] = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """For coupled samples: per chunk, the bins of the held-out rows of both sides, row by
        row (the same rows: pairs stay together)."""
        if not self.paired:
            raise ValueError("paired_holdout_bins needs coupled samples (as many rows on each side)")
        edges = np.asarray(edges, dtype=np.float64)
        for (_, t_p, keep), (_, rows_q) in zip(self._held_out(self.p, self.selected_p, chunk_rows), self.q.chunks(chunk_rows)):
            t_q = _statistic_values(self.statistic_fn, rows_q)
            yield np.searchsorted(edges, t_p[keep], side="right"), np.searchsorted(edges, t_q[keep], side="right")


def _statistic_values(fn: Callable[[np.ndarray], np.ndarray], rows: np.ndarray) -> np.ndarray:
    return np.asarray(fn(rows), dtype=np.float64).reshape(-1)


def split_pair(
    samples_p,
    samples_q,
    statistic: Statistic = "auto",
    selection_fraction: float = 0.2,
    seed: int = 0,
    min_samples: int = 4,
    paired: Optional[bool] = None,
) -> SplitPair:
    """Validate, split into selection and held-out parts, and fit the statistic on the selection.

    Rows are chosen for the selection part at random (``seed``), a ``selection_fraction`` of each
    side (at most :data:`MAX_SELECTION` above :data:`PERMUTATION_ROWS` rows). When both sides
    have the same number of rows (coupled chains: ``paired`` None or True) the same rows are
    selected on both sides, so pairs never straddle the split.
    """
    selection_fraction = _validate.in_range("selection_fraction", selection_fraction, 0.0, 1.0, low_open=True, high_open=True)
    seed = _validate.seed("seed", seed)
    p, q = sample_pair(samples_p, samples_q, min_samples=min_samples)
    n_p, n_q = p.num_rows, q.num_rows
    if paired is None:
        paired = n_p == n_q
    elif paired and n_p != n_q:
        raise ValueError(f"paired=True needs as many samples on each side; got {n_p} and {n_q}")
    rng = np.random.default_rng(seed)
    m_p, m_q = _selection_size(n_p, selection_fraction), _selection_size(n_q, selection_fraction)
    order_p = _selection_rows(rng, n_p, m_p)
    order_q = order_p if n_q == n_p else _selection_rows(rng, n_q, m_q)
    sel_p, sel_q = p.take(order_p), q.take(order_q)
    t_fn = fit_statistic(statistic, sel_p, sel_q)
    name = statistic if isinstance(statistic, str) else getattr(statistic, "__name__", "callable")
    if name == "auto":
        name = "identity" if p.dim == 1 else "lda"
    return SplitPair(
        p=p, q=q,
        selected_p=np.sort(order_p), selected_q=np.sort(order_q),
        t_sel_p=np.sort(_statistic_values(t_fn, sel_p)), t_sel_q=np.sort(_statistic_values(t_fn, sel_q)),
        m_p=m_p, m_q=m_q, h_p=n_p - m_p, h_q=n_q - m_q,
        statistic_fn=t_fn, statistic=name, dim=p.dim, paired=bool(paired),
    )


def value_range(p: Samples, q: Samples, chunk_rows: Optional[int] = None) -> tuple[float, float]:
    """(min, max) of every entry of both sides, in chunks."""
    lo, hi = np.inf, -np.inf
    for side in (p, q):
        for _, rows in side.chunks(chunk_rows):
            lo, hi = min(lo, float(rows.min())), max(hi, float(rows.max()))
    return lo, hi
