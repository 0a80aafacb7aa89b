"""dpjax's privacy-loss-distribution accountant against Microsoft's prv_accountant (Gopi, Lee &
Wutschitz 2021), an independent composition algorithm (a privacy random variable truncated and
discretised on its own grid, composed by FFT, with its own error analysis), a test extra.

prv_accountant returns (eps_lower, eps_estimate, eps_upper), a bracket of the true eps of width
2 eps_error; dpjax returns [optimistic, pessimistic], another bracket of the same true value.
Both contain it, so they must intersect; and dpjax's pessimistic value must sit within
prv_accountant's eps_error of its estimate plus dpjax's own bracket width (triangle inequality
through the true value). Configurations: a fixed random draw of DP-SGD settings (Poisson-
subsampled Gaussian, add/remove), and composed Laplace mechanisms."""
import math

import jax
import numpy as np
import pytest

from dpjax.accountants import pld_epsilons

prv = pytest.importorskip("prv_accountant")
EPS_ERROR = 2e-3
DELTA = 1e-5


@pytest.fixture(autouse=True)
def x64():
    with jax.enable_x64(True):
        yield


def prv_bracket(mechanism, steps):
    acc = prv.PRVAccountant(prvs=mechanism, max_self_compositions=int(steps), eps_error=EPS_ERROR, delta_error=1e-11)
    return acc.compute_epsilon(delta=DELTA, num_self_compositions=[int(steps)])


def check(prv_values, optimistic, pessimistic):
    low, estimate, high = prv_values
    assert 0 < high - low <= 2 * EPS_ERROR * 1.001  # what prv_accountant promises (its width carries ~1e-4 relative slack)
    # two brackets of one true eps intersect
    assert max(low, optimistic) <= min(high, pessimistic) + 1e-12, (prv_values, optimistic, pessimistic)
    assert abs(pessimistic - estimate) <= EPS_ERROR + (pessimistic - optimistic) + 1e-12


def test_poisson_subsampled_gaussian_against_prv_accountant():
    rng = np.random.default_rng(2024)
    n = 5
    q = np.exp(rng.uniform(math.log(1e-3), math.log(0.1), n))
    sigma = rng.uniform(0.8, 3.0, n)
    steps = np.exp(rng.uniform(0.0, math.log(300.0), n)).astype(int)
    res = pld_epsilons(sigma, q, steps, DELTA)
    pess, opt = res.epsilon, res.optimistic_epsilon
    for i in range(n):
        mech = prv.PoissonSubsampledGaussianMechanism(noise_multiplier=float(sigma[i]), sampling_probability=float(q[i]))
        check(prv_bracket(mech, steps[i]), float(opt[i]), float(pess[i]))


@pytest.mark.parametrize("scale,steps", [(2.0, 10), (1.0, 3)])
def test_composed_laplace_against_prv_accountant(scale, steps):
    res = pld_epsilons(scale, 1.0, steps, DELTA, mechanism="laplace")
    pess, opt = res.epsilon, res.optimistic_epsilon
    check(prv_bracket(prv.LaplaceMechanism(mu=1.0 / scale), steps), float(opt), float(pess))
