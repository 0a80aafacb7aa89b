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
    runner.choose_engine(engine, runner.recognised_model(engine, model, pair), sampler)  # an impossible engine choice fails before any compute

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=num_steps, desc=f"{sampler.name} x {num_pairs} pairs", unit="step")
    try:
        rec = runner.run_pairs(
            seed, model, pair, sampler, num_pairs=num_pairs, num_steps=num_steps, record_steps=steps,
            init=init if callable(init) else given, dtype=dtype, mesh=mesh, chunk_size=chunk_size,
            progress=None if bar is None else bar.update, engine=engine, unroll=unroll,
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
