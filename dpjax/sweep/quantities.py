"""The quantities a sweep point asks for, as result rows (step, quantity, argument, value, lower, upper).

Measurements use only the pairs that stayed finite (``num_nonfinite`` is always reported as
its own row, at step = num_steps). At every recorded step t:

* ``epsilon_lower_bound`` (argument delta): :func:`dpjax.estimators.epsilon_lower_bound` on
  the last iterates (theta_t on D vs on D'); value = lower = the bound, upper = NaN.
* ``epsilon_estimate`` (argument delta): :func:`dpjax.estimators.epsilon_estimate`; value =
  plug-in estimate, (lower, upper) = its bootstrap interval.
* ``path_delta`` (argument eps): :func:`dpjax.estimators.privacy_loss_profile` on the recorded
  path loss L_t = log dP_D/dP_D'(x_{0:t}) under D (direction D vs D' only); value = mean,
  (lower, upper) = empirical-Bernstein interval. Skipped at t = 0 (L_0 = 0).
* ``exact_epsilon`` (argument delta): the tight eps(delta) of ULA's last iterate on a
  quadratic potential, :func:`dpjax.accountants.exact.exact_last_iterate_epsilon` (both
  directions); value = lower = upper. Skipped at t = 0 (point mass).
* ``girsanov_path_epsilon`` (argument delta): paper 001 Theorem 5.4 (ULA path, beta = 1) with
  c = |g - g'|, exact when the two potentials' Hessians agree (then grad U_D - grad U_D' =
  g' - g is constant); value = upper = the bound, lower = NaN. Skipped at t = 0.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from .build import Problem
from .chains import ChainRecord
from .config import ConfigError

NAN = float("nan")


def _quadratic(problem: Problem):
    from ..models import quadratic_form

    h1, g1 = quadratic_form(problem.model, problem.pair.dataset)
    h2, g2 = quadratic_form(problem.model, problem.pair.neighbour)
    return h1, g1, h2, g2


def _euler_step(sampler) -> float:
    # exact.py and Theorem 5.4 use the Euler step gamma (drift coefficient): Welling-Teh eta = 2 gamma
    return float(sampler.step_size) / 2 if sampler.parameterisation == "welling-teh" else float(sampler.step_size)


def girsanov_grad_gap(problem: Problem, where: str = "point") -> float:
    """c = sup_x |grad U_D(x) - grad U_D'(x)| = |g - g'| for equal Hessians; raises otherwise."""
    h1, g1, h2, g2 = _quadratic(problem)
    if not np.array_equal(h1, h2):
        raise ConfigError(
            f"{where}.quantities: girsanov_path_epsilon needs grad U_D - grad U_D' bounded, i.e. equal Hessians on D and D' "
            f"(true for gaussian_mean with replace-one); here they differ by {np.abs(h1 - h2).max():.3g}"
        )
    return float(np.linalg.norm(g1 - g2))


def check_quantities(point: Mapping[str, Any], problem: Problem, where: str = "point") -> None:
    """Up-front checks that need the built problem (run before any chains)."""
    for q in point["quantities"]:
        if q["name"] == "girsanov_path_epsilon":
            girsanov_grad_gap(problem, where)


def compute_rows(point: Mapping[str, Any], problem: Problem, record: ChainRecord) -> list[dict]:
    from ..estimators import epsilon_estimate, epsilon_lower_bound, privacy_loss_profile

    seed = point["seed"]
    finite = record.finite
    rows: list[dict] = [dict(step=point["num_steps"], quantity="num_nonfinite", argument=NAN, value=float((~finite).sum()), lower=NAN, upper=NAN)]
    pos = record.positions[:, finite].astype(np.float64)
    npos = record.neighbour_positions[:, finite].astype(np.float64)
    loss = record.path_loss[:, finite].astype(np.float64)
    steps = [int(t) for t in record.steps]
    for q in point["quantities"]:
        name = q["name"]
        if name == "epsilon_lower_bound":
            for r, t in enumerate(steps):
                res = epsilon_lower_bound(pos[r], npos[r], q["delta"], q["confidence"], seed=seed)
                rows.append(dict(step=t, quantity=name, argument=q["delta"], value=res.epsilon, lower=res.epsilon, upper=NAN))
        elif name == "epsilon_estimate":
            for r, t in enumerate(steps):
                res = epsilon_estimate(pos[r], npos[r], q["delta"], confidence=q["confidence"], num_bootstrap=q["num_bootstrap"], seed=seed)
                lo, hi = res.interval if q["num_bootstrap"] > 0 else (NAN, NAN)
                rows.append(dict(step=t, quantity=name, argument=q["delta"], value=res.epsilon, lower=lo, upper=hi))
        elif name == "path_delta":
            for r, t in enumerate(steps):
                if t == 0:
                    continue
                res = privacy_loss_profile(loss[r], q["epsilons"], (), confidence=q["confidence"], seed=seed)
                for e, eps in enumerate(q["epsilons"]):
                    rows.append(dict(step=t, quantity=name, argument=eps, value=res.delta[e], lower=res.delta_lower[e], upper=res.delta_upper[e]))
        elif name == "exact_epsilon":
            from ..accountants.exact import exact_last_iterate_epsilon

            h1, g1, h2, g2 = _quadratic(problem)
            positive = [t for t in steps if t > 0]
            if positive:
                mean0 = 0.0 if problem.init is None else problem.init
                eps = exact_last_iterate_epsilon(
                    h1, g1, h2, g2, _euler_step(problem.sampler), positive, q["delta"], mean0=mean0, cov0=0.0, temperature=problem.sampler.temperature
                )
                for t, e in zip(positive, eps):
                    rows.append(dict(step=t, quantity=name, argument=q["delta"], value=float(e), lower=float(e), upper=float(e)))
        elif name == "girsanov_path_epsilon":
            from ..accountants.girsanov import thm54_ula_path

            gap = girsanov_grad_gap(problem)
            for t in steps:
                if t == 0:
                    continue
                curve = thm54_ula_path(gap, _euler_step(problem.sampler), t)
                e = float(np.asarray(curve.epsilon(q["delta"])).reshape(-1)[0])
                rows.append(dict(step=t, quantity=name, argument=q["delta"], value=e, lower=NAN, upper=e))
        else:  # unreachable after validation
            raise ConfigError(f"quantity {name!r} has no implementation")
    for row in rows:  # plain floats (inf is a legitimate bound value; Parquet stores it)
        for key in ("value", "lower", "upper", "argument"):
            row[key] = float(row[key])
    return rows
