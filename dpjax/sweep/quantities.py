"""The quantities a sweep point asks for, as result rows (step, quantity, argument, value, lower, upper).

Measurements at a recorded step t use only the pairs still finite at t (and at every earlier
recorded step; at t = num_steps, finite over the whole run); ``num_nonfinite`` is reported as its
own row at every recorded step and at step = num_steps. A quantity that cannot be computed at a
step (e.g. too few finite pairs) gives a row with NaN numbers and the reason in ``error``,
instead of stopping the sweep. At every recorded step t:

* ``epsilon_lower_bound`` (argument delta): :func:`dpjax.estimators.epsilon_lower_bound` on
  the last iterates (theta_t on D vs on D'); value = lower = the bound, upper = NaN.
* ``epsilon_estimate`` (argument delta): :func:`dpjax.estimators.epsilon_estimate`; value =
  plug-in estimate, (lower, upper) = its bootstrap interval.
* ``path_delta`` (argument eps): :func:`dpjax.estimators.privacy_loss_profile` on the recorded
  path loss L_t = log dP_D/dP_D'(x_{0:t}) under D (direction D vs D' only); value = mean,
  (lower, upper) = empirical-Bernstein interval. Skipped at t = 0 (L_0 = 0).
* ``exact_epsilon`` (argument delta): the tight eps(delta) of ULA's last iterate on a
  quadratic potential, :func:`dpjax.accountants.samplers.exact.exact_last_iterate_epsilon` (both
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
    """Up-front checks that need the built problem (run before any chains): the closed-form
    quantities are computed once here, so a configuration they do not cover (e.g.
    exact_epsilon in d = 2 with unequal Hessians) fails before the chains run."""
    for i, q in enumerate(point["quantities"]):
        if q["name"] == "girsanov_path_epsilon":
            girsanov_grad_gap(problem, where)
        elif q["name"] == "exact_epsilon":
            positive = [t for t in point["record_steps"] if t > 0]
            if positive:
                try:
                    _exact_epsilons(problem, positive, q["delta"])
                except (ValueError, TypeError, np.linalg.LinAlgError) as err:
                    raise ConfigError(f"{where}.quantities[{i}] (exact_epsilon): {err}") from None


def _exact_epsilons(problem: Problem, steps, delta: float) -> np.ndarray:
    from ..accountants.samplers.exact import exact_last_iterate_epsilon

    h1, g1, h2, g2 = _quadratic(problem)
    mean0 = 0.0 if problem.init is None else problem.init
    return exact_last_iterate_epsilon(h1, g1, h2, g2, _euler_step(problem.sampler), steps, delta, mean0=mean0, cov0=0.0, temperature=problem.sampler.temperature)


def finite_by_step(record: ChainRecord, num_steps: int) -> np.ndarray:
    """(R, K): pair k finite at recorded step r and at every earlier one (and over the whole
    run when step r is the last step)."""
    now = (
        np.all(np.isfinite(record.positions), axis=-1)
        & np.all(np.isfinite(record.neighbour_positions), axis=-1)
        & np.isfinite(record.path_loss)
    )
    out = np.logical_and.accumulate(now, axis=0) if now.size else now
    for r, t in enumerate(record.steps):
        if int(t) == num_steps:
            out[r] &= np.asarray(record.finite, bool)
    return out


def _error_row(t, name, argument, reason) -> dict:
    return dict(step=t, quantity=name, argument=argument, value=NAN, lower=NAN, upper=NAN, error=reason)


def compute_rows(point: Mapping[str, Any], problem: Problem, record: ChainRecord) -> list[dict]:
    """Every quantity's rows (see the module docstring); never raises for what the chains
    produced: a quantity that fails at a step becomes rows with NaN numbers and an ``error``."""
    from ..estimators import epsilon_estimate, epsilon_lower_bound, privacy_loss_profile

    seed = point["seed"]
    num_steps = point["num_steps"]
    steps = [int(t) for t in record.steps]
    keep = finite_by_step(record, num_steps)
    num_pairs = keep.shape[1] if keep.ndim == 2 else int(np.size(record.finite))
    rows: list[dict] = []
    for r, t in enumerate(steps):
        if t != num_steps:
            rows.append(dict(step=t, quantity="num_nonfinite", argument=NAN, value=float((~keep[r]).sum()), lower=NAN, upper=NAN))
    rows.append(dict(step=num_steps, quantity="num_nonfinite", argument=NAN, value=float((~np.asarray(record.finite, bool)).sum()), lower=NAN, upper=NAN))

    def samples(r, need):
        k = int(keep[r].sum())
        if k < need:
            raise ValueError(f"only {k} of {num_pairs} chain pairs are finite at step {steps[r]} ({need} needed): the chains diverged")
        return (
            record.positions[r][keep[r]].astype(np.float64),
            record.neighbour_positions[r][keep[r]].astype(np.float64),
            record.path_loss[r][keep[r]].astype(np.float64),
        )

    for q in point["quantities"]:
        name = q["name"]
        if name == "epsilon_lower_bound":
            for r, t in enumerate(steps):
                try:
                    p, n, _ = samples(r, 4)
                    res = epsilon_lower_bound(p, n, q["delta"], q["confidence"], seed=seed)
                    rows.append(dict(step=t, quantity=name, argument=q["delta"], value=res.epsilon, lower=res.epsilon, upper=NAN))
                except Exception as err:
                    rows.append(_error_row(t, name, q["delta"], f"{type(err).__name__}: {err}"))
        elif name == "epsilon_estimate":
            for r, t in enumerate(steps):
                try:
                    p, n, _ = samples(r, 4)
                    res = epsilon_estimate(p, n, q["delta"], confidence=q["confidence"], num_bootstrap=q["num_bootstrap"], seed=seed)
                    lo, hi = res.interval
                    rows.append(dict(step=t, quantity=name, argument=q["delta"], value=res.epsilon, lower=lo, upper=hi))
                except Exception as err:
                    rows.append(_error_row(t, name, q["delta"], f"{type(err).__name__}: {err}"))
        elif name == "path_delta":
            for r, t in enumerate(steps):
                if t == 0:
                    continue
                try:
                    _, _, loss = samples(r, 2)
                    res = privacy_loss_profile(loss, q["epsilons"], (), confidence=q["confidence"], seed=seed)
                    for e, eps in enumerate(q["epsilons"]):
                        rows.append(dict(step=t, quantity=name, argument=eps, value=res.delta[e], lower=res.delta_lower[e], upper=res.delta_upper[e]))
                except Exception as err:
                    rows.extend(_error_row(t, name, eps, f"{type(err).__name__}: {err}") for eps in q["epsilons"])
        elif name == "exact_epsilon":
            positive = [t for t in steps if t > 0]
            if positive:
                try:
                    eps = _exact_epsilons(problem, positive, q["delta"])
                    for t, e in zip(positive, eps):
                        rows.append(dict(step=t, quantity=name, argument=q["delta"], value=float(e), lower=float(e), upper=float(e)))
                except Exception as err:
                    rows.extend(_error_row(t, name, q["delta"], f"{type(err).__name__}: {err}") for t in positive)
        elif name == "girsanov_path_epsilon":
            from ..accountants.samplers.girsanov import thm54_ula_path

            for t in steps:
                if t == 0:
                    continue
                try:
                    curve = thm54_ula_path(girsanov_grad_gap(problem), _euler_step(problem.sampler), t)
                    e = float(np.asarray(curve.epsilon(q["delta"])).reshape(-1)[0])
                    rows.append(dict(step=t, quantity=name, argument=q["delta"], value=e, lower=NAN, upper=e))
                except Exception as err:
                    rows.append(_error_row(t, name, q["delta"], f"{type(err).__name__}: {err}"))
        else:  # unreachable after validation
            raise ConfigError(f"quantity {name!r} has no implementation")
    for row in rows:  # plain floats (inf is a legitimate bound value; Parquet stores it)
        for key in ("value", "lower", "upper", "argument"):
            row[key] = float(row[key])
        row.setdefault("error", None)
    return rows


def row_errors(rows) -> list[str]:
    """The distinct error messages of a point's rows (empty when every row was computed)."""
    seen: list[str] = []
    for row in rows:
        err = row.get("error")
        if err and err not in seen:
            seen.append(err)
    return seen
