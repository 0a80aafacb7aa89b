"""``dpjax bench real-data``: how wide the band is on a user's numpyro model, and what it costs (issue 36).

The audit a new user runs on their own model: a numpyro linear regression (5 features, n = 500
synthetic records, N(0, 1) priors; :func:`dpjax.bench.poisson.numpyro_linear_regression`)
through :func:`dpjax.models.from_numpyro`, DP-SGD-style SGLD (Poisson batches of rate 32 / 500,
per-record clipping at 1, step size 1e-3), a replace-one neighbour (record 0 replaced by an
outlier), and ``audit(..., bounds="auto")`` at 200 steps. It reports the band at delta = 1e-3:
the certified lower bound (95%), the GDP fit and every bound ``auto`` gives, with the wall time
and pairs/s of the run, and which side limits the band: ``pairs_needed`` says how many pairs a
side would certify 90% of the fit (the pairs side); the distance from the fit to the tightest
bound is what no number of pairs closes (the bound side, or a weak neighbour).

The baseline of the ratio is the same audit at ``--baseline-pairs`` (default a tenth of
``--pairs``), run first in the same process: ``pairs_per_s`` of both, and the band of both, so
the gain from ten times the pairs reads off one run.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

STEPS = 200
RATE = 32 / 500
CLIP = 1.0
STEP_SIZE = 1e-3
DELTA = 1e-3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pairs", type=int, default=200_000, help="coupled chain pairs of the main run (default 200,000)")
    parser.add_argument("--baseline-pairs", type=int, default=None, help="pairs of the baseline run (default: a tenth of --pairs)")
    parser.add_argument("--steps", type=int, default=STEPS, help=f"steps (default {STEPS})")


def _band(pairs: int, steps: int) -> dict:
    from dpjax import samplers
    from dpjax.audit import audit
    from dpjax.estimators import planning

    from .poisson import numpyro_linear_regression

    model, pair = numpyro_linear_regression()
    sampler = samplers.sgld(STEP_SIZE, batching="poisson", sampling_rate=RATE, clip_norm=CLIP)
    start = time.perf_counter()
    report = audit(model, pair, sampler, num_pairs=pairs, num_steps=steps, delta=DELTA, bounds="auto", seed=0)
    seconds = time.perf_counter() - start
    table = report.table
    last = table[table["step"] == steps]
    row = {"pairs": pairs, "steps": steps, "wall_seconds": seconds, "pairs_per_s": pairs / seconds, "pair_steps_per_s": pairs * steps / seconds}
    for _, r in last.iterrows():
        key = f"{r['quantity']} ({r['kind']})"
        row[key] = float(r["epsilon"]) if "epsilon" in r and r["epsilon"] is not None and np.isfinite(r["epsilon"]) else None
    row["text"] = str(report)
    certified = _first(last, ("certified", "lower bound"))
    fit = _first(last, ("fit",))
    row["certified"], row["fit"] = certified, fit
    # the pairs side: pairs a side at which the certified bound is expected to reach 90% of the fit
    row["pairs_needed_for_90pct_of_fit"] = float(planning.pairs_needed(fit, DELTA, fraction=0.9).pairs) if fit else None
    return row


def _first(frame, kind_prefixes: tuple):
    """The first row's eps whose kind starts with one of ``kind_prefixes`` (the report's
    "certified" row is named "lower bound" in some releases of its table)."""
    rows = frame[frame["kind"].astype(str).str.startswith(kind_prefixes) & (frame["quantity"] == "last iterate")]
    if rows.empty:
        return None
    value = float(rows.iloc[0]["epsilon"])
    return value if math.isfinite(value) else None


def run(args) -> dict:
    import jax

    baseline = args.baseline_pairs or max(1, args.pairs // 10)
    rows = [_band(baseline, args.steps), _band(args.pairs, args.steps)]
    return {"backend": jax.default_backend(), "device": str(jax.devices()[0]), "rows": rows,
            "pairs_per_s_ratio": rows[1]["pairs_per_s"] / rows[0]["pairs_per_s"]}
