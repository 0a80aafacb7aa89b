"""Paper 001 Theorem 5.2 beyond convexity (a double well) and the gamma -> 0 constant C4."""
from __future__ import annotations

import argparse
import math

import numpy as np
import pytest

from dpjax.accountants.samplers import girsanov


def test_c4_is_the_limit_of_c3_with_its_square():
    for c, mu, L in ((1.0, 1.0, 1.0), (0.3, 2.0, 5.0), (4.0, 0.5, 0.5)):
        for mode in ("paper", "strict"):
            assert girsanov.thm52_limit_constant(c, mu, L, mode) == pytest.approx(girsanov.thm52_constant(c, mu, L, 1e-12, mode), rel=1e-9)
        assert girsanov.thm52_limit_constant_as_printed(c, mu, L) == pytest.approx(c * (2 * (L + 1) / mu + 1))
    # the closed-form case: posterior N(a_D/mu, 1/mu) with a_D - a_D' = 2c has RDP_a / a = 2 c^2 / mu
    c, mu = 1.0, 1.0
    exact = 2 * c * c / mu
    assert girsanov.thm52_limit_constant(c, mu, mu) / 4 >= exact
    assert girsanov.thm52_limit_constant_as_printed(c, mu, mu) / 4 < exact  # the printed C4 is not a bound
    curve = girsanov.thm52_posterior_limit(c, mu, mu, orders=[2.0])
    assert float(curve.rdp_at([2.0])[0]) == pytest.approx(2.0 * 25.0 / 4)
    with pytest.raises(ValueError, match="smoothness"):
        girsanov.thm52_limit_constant(1.0, 2.0, 1.0)
    with pytest.raises(ValueError, match="mode"):
        girsanov.thm52_limit_constant(1.0, 1.0, 1.0, "loose")


def test_girsanov_quadratic_reports_the_c4_limit():
    from dpjax.experiments.girsanov import quadratic as gq

    parser = argparse.ArgumentParser()
    gq.add_arguments(parser)
    results = gq.compute(parser.parse_args(["--steps", "1,10"]))
    post = results["posterior_limit"]
    assert post["exact_rdp_per_order"] == pytest.approx(2.0)
    assert post["as_printed_is_below_exact"] and post["c4_paper_squared"] >= post["exact_rdp_per_order"]
    limit_row = gq.headline(results)[-1]  # the C4 row: the squared constant beside the printed one
    assert limit_row["quantity"].startswith("posterior (gamma -> 0)")
    assert limit_row["dpjax"] == pytest.approx(post["c4_paper_squared"], abs=1e-6)
    assert f"{post['c4_as_printed']:.4g}" in limit_row["paper"]


def test_double_well_grid_laws_match_ula_chains_and_sit_below_the_bound():
    from dpjax.experiments.girsanov import double_well as ex

    parser = argparse.ArgumentParser()
    ex.add_arguments(parser)
    args = parser.parse_args(["--steps", "5,40", "--pairs", "2000", "--grid-spacing", "0.04", "--confidence", "0.999999"])
    args.quick, args.seed = True, 0
    results = ex.compute(args)
    assert all(results["checks"].values()), results["checks"]
    assert results["exact"]["mass_off_grid"] < 1e-8
    # the exact last-iterate eps is far below Theorem 5.2's, and rises with n toward the posterior's
    eps = results["exact"]["epsilon"]
    assert eps[0] < eps[1] < results["bounds"]["paper"]["epsilon"] / 5
    # the barrier raises the bound (through c) much more than the exact privacy
    sens = results["sensitivity"]
    assert sens[-1]["thm52_rdp"] / sens[0]["thm52_rdp"] > 10 * sens[-1]["exact_renyi"] / sens[0]["exact_renyi"]
    assert len(ex.headline(results)) == 4


def test_double_well_grid_law_against_direct_ula_simulation():
    from scipy import stats

    from dpjax.accountants.samplers import markov_grid as mg
    from dpjax.experiments.girsanov.double_well import DoubleWell

    dw = DoubleWell(1.0, 2.0, 0.7, 0.5)
    grid = mg.uniform_grid(-8, 8, 801)
    P, _ = mg.langevin_transition(grid, dw.drift(1.0), 0.1)
    masses = mg.propagate(mg.gaussian_masses(grid, 0.0, 1.0), P, [30])[0]
    rng = np.random.default_rng(0)
    x = rng.standard_normal(20000)
    for _ in range(30):  # ULA in numpy, an independent implementation
        x = x + 0.1 * dw.drift(1.0)(x) + math.sqrt(0.2) * rng.standard_normal(x.size)
    cdf = lambda t: np.interp(t, grid.points, np.cumsum(masses) - 0.5 * masses)
    assert stats.kstest(x, cdf).pvalue > 1e-4
    with pytest.raises(ValueError, match="tilt"):
        DoubleWell(1.0, 2.0, 0.7, 0.0)
