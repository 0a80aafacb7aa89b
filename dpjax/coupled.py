"""The coupled runner: K chain pairs on neighbouring datasets (D, D'), synchronously coupled.

Pair k runs one chain on D and one on D'. Both start at the same point, and at every step use
the same batch indices and the same Gaussian draw (synchronous coupling, paper 001 §4).
All randomness of pair k derives from (seed, k, step) (see :mod:`dpjax.engine.randomness`), so
the numbers do not depend on how pairs are laid out over devices, on the chunk sizes, or on the
engine path that runs them (:mod:`dpjax.engine.runner`: reference, quadratic, Pallas).

Path privacy loss (NOTES 001, "exact discrete-path privacy loss"). With Delta_t the
difference of the two datasets' drift displacements at D's current point x_t with the same
batch, Delta_t = drift_coef_t * (f_D(x_t) - f_D'(x_t)), sigma_t the step's noise std and z_t
its normal draw, the log-likelihood ratio of D's path under the two transition laws is

    L_t = sum_{s < t} |Delta_s|^2 / (2 sigma_s^2) + <Delta_s, z_s> / sigma_s

(Euler form: beta gamma |h|^2/4 + sqrt(beta gamma/2) <h, z>, h = f_D - f_D'). The batches are
shared, i.e. the loss is conditional on the batch sequence (the batch indices are treated as
released with the path, as in paper 001, where the differing record is assumed in the batch).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, NamedTuple, Optional, Sequence, Union

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh

from . import _validate
from .data import NeighbouringPair, make_pair
from .engine import runner
from .models.base import Model
from .samplers.kernel import LangevinSampler
from ._result_methods import drawn_by, printed_by


class CoupledResult(NamedTuple):
    """What :func:`run_coupled` records (host numpy arrays, float64 unless ``dtype`` says otherwise).

    steps: (R,) step counts t at which the chains were recorded (0 = the shared start).
    positions: (R, K, d) D's chains after t steps.
    neighbour_positions: (R, K, d) D''s chains after t steps.
    path_loss: (R, K) log dP_D / dP_D'(x_{0:t}) of D's chain (the exact discrete-path
        privacy loss; see the module docstring).
    finite: (K,) True where both chains and the loss stayed finite at every step of the run.
    num_nonfinite: number of pairs with ``finite`` False.
    config: a dict describing the run (seed, model, sampler, pair, sizes) and its timing
        (``compile_seconds``; ``run_seconds`` = stepping and recording only).

    Downstream code must use only the finite pairs, e.g. ``positions[:, result.finite]``, and
    report ``num_nonfinite`` beside any estimate: a diverged pair is never averaged in and
    never silently dropped. :meth:`finite_only` returns that selection.
    """

    steps: np.ndarray
    positions: np.ndarray
    neighbour_positions: np.ndarray
    path_loss: np.ndarray
    finite: np.ndarray
    num_nonfinite: int
    config: dict

    def finite_only(self) -> "CoupledResult":
        """The same result restricted to the pairs that stayed finite."""
        f = self.finite
        return self._replace(
            positions=self.positions[:, f],
            neighbour_positions=self.neighbour_positions[:, f],
            path_loss=self.path_loss[:, f],
            finite=self.finite[f],
        )

    # --- presentation (dpjax._display) ----------------------------------------------------
    summary, __repr__ = printed_by("coupled_summary", "What ran and how far apart the two chains' laws are at each recorded step (100 columns).")
    figure, save = drawn_by("coupled_figure", "Histograms of D's and D''s chains at up to four recorded steps.")


def _validate_pair(pair: Any, model: Model) -> None:
    if not isinstance(pair, NeighbouringPair):
        raise TypeError(f"pair={type(pair).__name__} must be a dpjax.NeighbouringPair (see replace_one / add_remove / make_pair)")
    if not isinstance(model, Model):
        raise TypeError(f"model={type(model).__name__} must be a dpjax.Model")
    for which, ds in (("pair.dataset", pair.dataset), ("pair.neighbour", pair.neighbour)):
        for name, value in ds.fields.items():
            _validate.finite_array(f"{which} field {name!r}", value)
    # the model's own check of the records (fields, shapes, label values), on both datasets
    model.check_dataset(pair.dataset)
    model.check_dataset(pair.neighbour)
    # The runner's path loss only looks at slot pair.index: make sure that is the only difference.
    checked = make_pair(pair.dataset, pair.neighbour, pair.adjacency)
    if checked.index != pair.index:
        raise ValueError(f"pair.index={pair.index} but the datasets differ in record {checked.index}")


def _check_init(init, num_pairs: int, dim: int):
    """Validate a non-callable init; returns a float64 numpy array (d,) or (K, d), or None."""
    if init is None or callable(init):
        return None
    x0 = _validate.finite_array("init", _validate.real_array("init", init))
    if x0.shape not in ((dim,), (num_pairs, dim)):
        raise ValueError(f"init has shape {x0.shape}; it must be ({dim},), ({num_pairs}, {dim}), a callable key -> ({dim},), or None")
    return x0


def run_coupled(
    seed: int,
    model: Model,
    pair: NeighbouringPair,
    sampler: LangevinSampler,
    *,
    num_pairs: int,
    num_steps: int,
    record_steps: Optional[Sequence[int]] = None,
    init: Union[None, np.ndarray, Callable[[jax.Array], jax.Array]] = None,
    chunk_size: int = 10_000,
    progress: bool = True,
    dtype=jnp.float64,
    mesh: Optional[Mesh] = None,
    engine: str = "auto",
    unroll: Optional[int] = None,
) -> CoupledResult:
    """Run ``num_pairs`` synchronously coupled chain pairs on (D, D') for ``num_steps`` steps.

    seed: integer seed; pair k's randomness is a function of (seed, k, step) only.
    model: a :class:`dpjax.Model` (its ``check_dataset`` is applied to both datasets).
    pair: a :class:`dpjax.NeighbouringPair` (checked to differ in exactly the record
        ``pair.index``). sampler: from :mod:`dpjax.samplers`.
    record_steps: step counts t in [0, num_steps] at which to record (default: [num_steps]);
        t = 0 records the shared start.
    init: the shared start of each pair: None (zeros), a position (d,), positions (K, d), or a
        callable ``key -> (d,)`` called with a per-pair key (e.g. a prior draw).
    chunk_size: at most this many steps per compiled call (the progress bar's granularity);
        memory is O(K d) whatever num_steps is.
    dtype: float64 (default; JAX's x64 mode is switched on for the call only) or float32.
    mesh: a ``jax.sharding.Mesh`` with a "chains" axis; default: all of ``jax.devices()``.
        Pairs are padded to a multiple of the number of devices and the padding dropped.
    engine: "auto" (default), "reference" (any model), "quadratic" (closed-form quadratic
        models) or "pallas" (quadratic models in a fused Pallas kernel; GPU, or interpret mode
        on CPU); see :mod:`dpjax.engine.runner`. All give the same numbers to rounding.
    unroll: steps per loop iteration of the XLA paths (default 1 on CPU, 8 on accelerators).

    A second call with the same shapes and structure reuses the compiled programs: a new seed,
    step size, data values, or start point costs no compilation.

    Returns a :class:`CoupledResult`.
    """
    dtype = jnp.dtype(dtype)
    if dtype not in (jnp.dtype(jnp.float64), jnp.dtype(jnp.float32)):
        raise ValueError(f"dtype={dtype} must be float64 or float32")
    num_pairs = _validate.dimension("num_pairs", num_pairs)  # an array axis: 10**30 failed inside numpy
    if isinstance(num_steps, bool) or not isinstance(num_steps, (int, np.integer)) or num_steps < 0:
        raise ValueError(f"num_steps={num_steps!r} violates num_steps a non-negative integer")
    num_steps = int(num_steps)
    if num_steps >= 2**31:
        raise ValueError(f"num_steps={num_steps} violates num_steps < 2**31 (step counters are int32)")
    chunk_size = _validate.positive_int("chunk_size", chunk_size)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed={seed!r} must be an integer")
    if not -(2**63) <= int(seed) < 2**64:  # beyond 64 bits numpy raised a bare OverflowError
        raise ValueError(f"seed={int(seed)} violates -2**63 <= seed < 2**64 (a 64-bit seed)")
    if not isinstance(sampler, LangevinSampler):
        raise TypeError(f"sampler={type(sampler).__name__} must be a dpjax.samplers.LangevinSampler (ula / sgld / cyclic_sgld)")
    if unroll is not None:
        unroll = _validate.positive_int("unroll", unroll)
    if not isinstance(progress, (bool, np.bool_)):
        raise TypeError(f"progress={progress!r:.80} violates the rule that progress is True or False (show a progress bar or not)")
    _validate_pair(pair, model)
    steps = _validate.record_steps(record_steps, num_steps)
    n, dim = pair.dataset.num_slots, model.dim
    sampler.validate(n, num_steps)
    given = _check_init(init, num_pairs, dim)
    if callable(init):
        shape = jax.eval_shape(init, jax.random.key(0)).shape
        if shape != (dim,):
            raise ValueError(f"init(key) returned shape {shape}; it must return a position of shape ({dim},)")
    mesh = runner.check_mesh(mesh)
    plan = runner.plan_engine(engine, model, pair, sampler)  # an impossible engine choice fails before any compute

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_steps, desc=f"{sampler.name} x {num_pairs} pairs", unit="step")
    try:
        rec = runner.run_pairs(
            seed, model, pair, sampler, num_pairs=num_pairs, num_steps=num_steps, record_steps=steps,
            init=init if callable(init) else given, dtype=dtype, mesh=mesh, chunk_size=chunk_size,
            progress=None if bar is None else bar.update, engine=plan, unroll=unroll,
        )
    finally:
        if bar is not None:
            bar.close()
    finite = rec.finite
    config = {
        "seed": int(seed),
        "model": getattr(model, "name", "model"),
        "dim": dim,
        "sampler": sampler.describe(),
        "num_records": n,
        "differing_index": pair.index,
        "adjacency": pair.adjacency,
        "num_pairs": num_pairs,
        "num_steps": num_steps,
        "dtype": str(dtype),
        **rec.timings,
    }
    return CoupledResult(rec.steps, rec.positions, rec.neighbour_positions, rec.path_loss, finite, int(num_pairs - finite.sum()), config)


# --- divergence ----------------------------------------------------------------------------------
# A chain pair whose positions are so large that a float cannot hold the step's noise (or the
# D-D' difference of the step's drift) to two digits has left anything a sampler can mean:
# its next step is rounding, and every number measured from it is rounding too.
RESOLUTION_ULPS = 100.0
# The drift expands where one mean-drift step moves the chain further than the last did; a
# stable step contracts (|1 - drift_coef * curvature| < 1). Margin: a pure translation (clipped
# gradients, flat prior) has a ratio of 1 up to rounding.
EXPANSION_MARGIN = 1e-6
# Pairs per recorded step on which the drift's expansion is evaluated (a full-batch gradient at
# three points each; the median over them decides).
EXPANSION_PAIRS = 256


@dataclasses.dataclass(frozen=True)
class DivergenceCheck:
    """Whether the chains of a :class:`CoupledResult` diverged, per recorded step.

    steps: (R,) the recorded steps. nonfinite: (R,) pairs non-finite at that step or before.
    unresolved: (R,) finite pairs whose largest coordinate (on D or D') is so large that 100 of
        its float spacings exceed both the step's noise std and the D-D' difference of its
        drift: the chain has grown beyond float resolution of what it measures.
    checked, expanding: (R,) pairs on which the mean-drift map was evaluated, and those where it
        expands (one full-batch drift step from the recorded position, then another: the second
        moves further than the first). expansion: (R,) the median ratio of the two moves; above
        1 the step size is beyond the model's stability limit at the chains' positions (for a
        quadratic potential the ratio is |1 - drift_coef * curvature|).
    step_size: the sampler's step size (None for a schedule). num_pairs: pairs run. advice: what
        to change (empty when nothing diverged).
    """

    steps: np.ndarray
    nonfinite: np.ndarray
    unresolved: np.ndarray
    checked: np.ndarray
    expanding: np.ndarray
    expansion: np.ndarray
    step_size: Optional[float]
    num_pairs: int = 0
    advice: str = ""

    def diverged(self) -> np.ndarray:
        """(R,) bool: the step shows non-finite or unresolved pairs, or a drift that expands at
        most of its checked pairs (median ratio above 1)."""
        return (self.nonfinite > 0) | (self.unresolved > 0) | (self.expansion > 1.0 + EXPANSION_MARGIN)

    def diverged_pairs(self) -> np.ndarray:
        """(R,) pairs counted as diverged at each recorded step: the non-finite and the unresolved
        ones, and every pair of a step whose drift expands at most of the pairs checked (the
        whole population then grows geometrically, whether or not it has overflowed yet)."""
        total = self.nonfinite + self.unresolved
        return np.where(self.expansion > 1.0 + EXPANSION_MARGIN, self.num_pairs, total)

    def problems(self, nonfinite: bool = True) -> list:
        """One line per diverged recorded step (step 0, the shared start, is never one);
        ``nonfinite=False`` leaves out the non-finite pairs (a caller that reports them itself)."""
        out = []
        for r, t in enumerate(self.steps):
            if int(t) == 0 or not self.diverged()[r]:
                continue
            parts = []
            if self.nonfinite[r] and nonfinite:
                parts.append(f"{int(self.nonfinite[r]):,} pairs non-finite")
            if self.unresolved[r]:
                parts.append(f"{int(self.unresolved[r]):,} pairs grown beyond float resolution of the step's noise and of the D-D' "
                             "difference")
            if self.expansion[r] > 1.0 + EXPANSION_MARGIN:
                parts.append(f"the drift expands by a median factor {self.expansion[r]:.3g} a step at the chains' positions "
                             f"({int(self.expanding[r])} of {int(self.checked[r])} pairs checked)")
            if parts:
                out.append(f"step {int(t)}: the chains DIVERGED: " + "; ".join(parts))
        return out


def _advice(step_size: Optional[float], expansion: float, unresolved: bool, nonfinite: bool, parameterisation: str) -> str:
    """What to change, in the sampler's own step-size units."""
    if np.isfinite(expansion) and expansion > 1.0 + EXPANSION_MARGIN and step_size is not None:
        # a quadratic's ratio is |1 - c lambda| with c lambda > 2 here, so c lambda = 1 + ratio and
        # the stability limit c lambda < 2 is a step size 2 / (1 + ratio) times this one
        limit = step_size * 2.0 / (1.0 + expansion)
        return (f"lower the step size: {step_size:g} is beyond the stability limit of this model at the chains' positions "
                f"(about {limit:.3g} in the {parameterisation} parameterisation; below {0.5 * limit:.3g} leaves a margin), "
                "or clip the gradients / strengthen the prior")
    if unresolved or nonfinite or (expansion > 1.0 + EXPANSION_MARGIN):
        return ("lower the step size (or, for a schedule, its largest value), clip the gradients or check the model: "
                "the chains left any region a sampler can mean")
    return ""


def check_divergence(result: CoupledResult, model: Model, pair: NeighbouringPair, sampler: LangevinSampler) -> DivergenceCheck:
    """Check every recorded step of ``result`` for diverged chains (see :class:`DivergenceCheck`).

    The check uses what the run recorded (positions of both chains) and the model and sampler
    that made them: non-finite pairs; positions beyond float resolution of the step's noise std
    and of the D-D' drift difference (the differing record's full-batch gradients, clipped as the
    sampler clips, times the step's drift coefficient: the sampler's batch scale n/s only
    enlarges it); and whether the full-batch mean drift expands at the recorded positions of
    D's chains (median over up to :data:`EXPANSION_PAIRS` pairs). A step-size schedule is read
    at the step that produced each recorded position.
    """
    from .samplers.kernel import clip_one, clip_record_grads

    steps = np.asarray(result.steps)
    num_steps = steps.size
    now = (np.all(np.isfinite(result.positions), axis=-1) & np.all(np.isfinite(result.neighbour_positions), axis=-1)
           & np.isfinite(result.path_loss))
    finite = np.logical_and.accumulate(now, axis=0) if num_steps else now
    nonfinite = np.array([int(np.count_nonzero(~finite[r])) for r in range(num_steps)], dtype=np.int64)
    unresolved = np.zeros(num_steps, dtype=np.int64)
    checked = np.zeros(num_steps, dtype=np.int64)
    expanding = np.zeros(num_steps, dtype=np.int64)
    expansion = np.zeros(num_steps)
    idx = pair.index
    with jax.enable_x64(True):
        fields_d = {k: jnp.asarray(v) for k, v in pair.dataset.fields.items()}
        mask_d = jnp.asarray(pair.dataset.mask, dtype=jnp.float64)
        record_d = {k: v[idx] for k, v in fields_d.items()}
        record_n = {k: jnp.asarray(v)[idx] for k, v in pair.neighbour.fields.items()}
        mask_d_i = float(np.asarray(pair.dataset.mask)[idx])
        mask_n_i = float(np.asarray(pair.neighbour.mask)[idx])
        clip = sampler.clip_norm

        def full_grad(theta):
            # the mean of the sampler's gradient estimate over its batches: every record once
            grads = jax.vmap(model.record_grad, in_axes=(None, 0))(theta, fields_d)
            return model.prior_grad(theta) + clip_record_grads(grads, mask_d, clip)

        def moves(theta, coef):
            x1 = theta - coef * full_grad(theta)
            x2 = x1 - coef * full_grad(x1)
            return jnp.sqrt(jnp.sum((x1 - theta) ** 2)), jnp.sqrt(jnp.sum((x2 - x1) ** 2))

        def difference(theta, coef):
            gap = mask_d_i * clip_one(model.record_grad(theta, record_d), clip) - mask_n_i * clip_one(model.record_grad(theta, record_n), clip)
            return coef * jnp.sqrt(jnp.sum(gap**2))

        moves_fn = jax.jit(jax.vmap(moves, in_axes=(0, None)))
        difference_fn = jax.jit(jax.vmap(difference, in_axes=(0, None)))
        for r, t in enumerate(steps):
            t = int(t)
            if t == 0:
                continue
            coef, noise_std = (float(v) for v in sampler.coefficients(jnp.asarray(t - 1, jnp.int32), jnp.float64))
            keep = np.flatnonzero(finite[r])
            if keep.size == 0:
                continue
            x = np.asarray(result.positions[r][keep], dtype=np.float64)
            y = np.asarray(result.neighbour_positions[r][keep])
            # the spacing of the recorded dtype (float32 runs resolve far less)
            largest = np.maximum(np.max(np.abs(result.positions[r][keep]), axis=-1), np.max(np.abs(y), axis=-1))
            spacing = np.spacing(largest.astype(result.positions.dtype)).astype(np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                gap = np.asarray(difference_fn(jnp.asarray(x), coef), dtype=np.float64)
            gap = np.where(np.isfinite(gap), gap, 0.0)
            unresolved[r] = int(np.count_nonzero(RESOLUTION_ULPS * spacing > np.maximum(noise_std, gap)))
            sub = x[: EXPANSION_PAIRS]
            first, second = (np.asarray(v, dtype=np.float64) for v in moves_fn(jnp.asarray(sub), coef))
            with np.errstate(divide="ignore", invalid="ignore"):
                # a second move that overflows where the first did not is expansion (inf)
                ratio = np.where(first > 0, second / first, 0.0)
            ratio = np.where(np.isnan(ratio), np.inf, ratio)
            checked[r] = sub.shape[0]
            expanding[r] = int(np.count_nonzero(ratio > 1.0 + EXPANSION_MARGIN))
            expansion[r] = float(np.median(ratio))
    step_size = None if callable(sampler.step_size) else float(sampler.step_size)
    worst = float(np.max(expansion)) if expansion.size else 0.0
    advice = _advice(step_size, worst, bool(unresolved.any()), bool(nonfinite[steps > 0].any()) if num_steps else False,
                     sampler.parameterisation)
    return DivergenceCheck(steps=steps, nonfinite=nonfinite, unresolved=unresolved, checked=checked, expanding=expanding,
                           expansion=expansion, step_size=step_size, num_pairs=int(result.finite.size),
                           advice=advice)
