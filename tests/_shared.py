"""Helpers several test modules share (not a test module: pytest collects nothing here).

Each is an independent reference or a small piece of set-up written once: the step-by-step
cyclic-SGLD recursion that paper 000's closed forms are checked against, the comparison of
paper 003's Algorithm 1 with its numpy reference, dp_accounting's RDP eps of noisy SGD (the
peer the RDP accountant is checked against), the Bayesian
linear-regression model of the sampler tests, the argument namespaces of the reproductions'
small runs, and the sweep tests' two tiny problems.
"""
from __future__ import annotations

import argparse
import copy

import jax.numpy as jnp
import numpy as np

import dpjax


def dp_accounting_rdp_epsilon(q, sigma, steps, delta, orders=None) -> float:
    """dp_accounting's RdpAccountant eps at ``delta`` after ``steps`` Poisson-subsampled
    Gaussian steps (rate ``q``, noise multiplier ``sigma``), at ``orders`` (its default orders
    if None): the peer implementation of the same RDP accounting."""
    import dp_accounting

    acc = dp_accounting.rdp.RdpAccountant() if orders is None else dp_accounting.rdp.RdpAccountant([float(a) for a in orders])
    acc.compose(dp_accounting.PoissonSampledDpEvent(float(q), dp_accounting.GaussianDpEvent(float(sigma))), int(steps))
    return acc.get_epsilon(delta)


def cyclic_sgld_brute_force(p, r, epochs):
    """Mean and variance after ``epochs`` epochs of cyclic SGLD on paper 000's problem ``p``,
    step by step, with the odd record at position r (r = 0: D1)."""
    m, v = p.init_mean, p.v0
    for _ in range(epochs):
        for pos in range(1, p.n + 1):
            x = p.x_low if pos == r else p.x_high
            lam = 1 - 0.5 * p.eta * (p.alpha + p.n * x * x * p.beta)
            m = lam * m + 0.5 * p.eta * p.n * p.beta * p.c * x * x
            v = lam * lam * v + p.eta
    return m, v


def assert_algorithm1_matches_reference(got, ref, *, extremes_atol: float) -> None:
    """Paper 003's Algorithm 1 on one dataset (``got``, dpjax) against the numpy reference
    (``ref``): the MAP to 1e-7, phi to 1e-6 relative, log eta / log a / log b / eps to
    ``extremes_atol``, and at least one particle outside the box."""
    np.testing.assert_allclose(np.asarray(got["theta_map"]), ref["theta_map"], atol=1e-7)
    np.testing.assert_allclose(float(got["phi"]), ref["phi"], rtol=1e-6)
    for key_ in ("log_eta", "log_a", "log_b", "epsilon"):
        np.testing.assert_allclose(float(got[key_]), ref[key_], atol=extremes_atol, err_msg=key_)
    assert bool(got["ok"]) and int(got["num_outside"]) >= 1


def blr_model(alpha, beta, dim=1):
    """Bayesian linear regression: log p(y|theta, x) = -beta/2 (y - x.theta)^2, prior N(0, I/alpha)."""
    return dpjax.Model(
        lambda th, r: -beta / 2 * (r["y"] - r["x"] @ th) ** 2,
        lambda th: -alpha / 2 * jnp.sum(th**2),
        dim=dim,
        name="blr",
    )


def experiment_args(module, argv, *, with_run_flags: bool = False, **fixed):
    """``module.add_arguments``'s parser applied to ``argv``. ``with_run_flags`` adds the CLI's
    own ``--quick`` and ``--seed`` (default 0) to the parser; ``fixed`` sets attributes after
    parsing (as the CLI sets ``quick`` and ``seed``)."""
    parser = argparse.ArgumentParser()
    if with_run_flags:
        parser.add_argument("--quick", action="store_true")
        parser.add_argument("--seed", type=int, default=0)
    module.add_arguments(parser)
    args = parser.parse_args(list(argv))
    for name, value in fixed.items():
        setattr(args, name, value)
    return args


def tiny_regression_contamination_args(module, *extra):
    """Paper 003's regression reproductions at the smallest size that exercises them."""
    return experiment_args(module, ["--n-values", "150,300", "--dims", "3", "--K", "4", "--particles", "100", "--dataset-batch", "4", *extra],
                           with_run_flags=True)


# The sweep tests' tiny problems: (model, data with the record that differs, sampler), written
# once for test_sweep_faults, test_sweep_run, test_sweep_cli and test_engine.
SWEEP_PROBLEMS = {
    "gaussian-mean": ({"name": "gaussian_mean", "dim": 1}, {"generator": "gaussian", "n": 6, "seed": 1, "record": {"x": [3.0]}},
                      {"name": "ula", "step_size": 0.05}),
    "regression": ({"name": "bayesian_linear_regression", "dim": 2},
                   {"generator": "regression", "n": 8, "seed": 2, "record": {"x": [3.0, -3.0], "y": 5.0}},
                   {"name": "cyclic-sgld", "step_size": 0.02}),
}


def sweep_point(problem: str, num_pairs: int, num_steps: int, record_steps, quantities, *, data=None, sampler=None, **top) -> dict:
    """A fresh raw sweep point (or a config's ``defaults``) on ``SWEEP_PROBLEMS[problem]``:
    ``data`` and ``sampler`` entries replace the problem's own, ``top`` adds keys (``seed``)
    before the rest."""
    model, base_data, base_sampler = copy.deepcopy(SWEEP_PROBLEMS[problem])
    return {**top, "model": model, "data": {**base_data, **copy.deepcopy(data or {})}, "sampler": {**base_sampler, **(sampler or {})},
            "num_pairs": num_pairs, "num_steps": num_steps, "record_steps": list(record_steps), "quantities": copy.deepcopy(quantities)}
