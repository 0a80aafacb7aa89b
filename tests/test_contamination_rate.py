"""The decay-rate fit of eps_hat (paper 003 §4.3, Figures 2-3) against exact power laws and a
simulated one whose 99% quantile is known in closed form."""
import math

import numpy as np
import pytest
from scipy import stats

from dpjax.estimators.contamination_rate import decay_rate_fit, theorem4_rate


def test_exact_power_law_is_recovered_exactly():
    n = [1000, 3000, 10000, 100000]
    # every dataset gives the same value C n^b: the quantile is that value, so is every bootstrap replicate
    c, b = 40.0, -0.375
    per = [np.full(50, c * m**b) for m in n]
    fit = decay_rate_fit(n, per, extrapolate_to=(1e6, 1e7), bootstrap=50)
    assert fit.ok
    np.testing.assert_allclose(fit.slope, b, rtol=1e-12)
    np.testing.assert_allclose(math.exp(fit.intercept), c, rtol=1e-10)
    np.testing.assert_allclose(fit.extrapolated, [c * 1e6**b, c * 1e7**b], rtol=1e-10)
    np.testing.assert_allclose(fit.slope_interval, (b, b), rtol=1e-12)
    np.testing.assert_allclose(fit.predict([1e4]), [c * 1e4**b], rtol=1e-10)
    assert fit.residual_sd < 1e-12 and fit.slope_bootstrap_se < 1e-12


def test_quantile_is_the_order_statistic_and_noisy_slope_is_covered():
    rng = np.random.default_rng(0)
    n = np.array([1000, 4000, 16000, 64000])
    b, c, sigma, k = -0.3, 10.0, 0.4, 3000
    # per-dataset eps = C n^b exp(sigma Z): the 99% quantile is C n^b exp(sigma z_0.99) exactly,
    # so the true log-log slope of the quantile is b
    per = [c * m**b * np.exp(sigma * rng.normal(size=k)) for m in n]
    fit = decay_rate_fit(n, per, bootstrap=400, seed=1)
    # the fit uses the ceil(0.99 K)-th order statistic
    q = [np.sort(p)[math.ceil(0.99 * k) - 1] for p in per]
    slope_ols = np.polyfit(np.log(n), np.log(q), 1)[0]
    np.testing.assert_allclose(fit.slope, slope_ols, rtol=1e-12)
    # the slope is within 4 bootstrap standard errors of the truth (a 4-sigma band; the SE of a
    # 99% quantile of 3000 lognormals is ~3% in log, over a 64x range in n: SE(slope) ~ 0.01)
    assert abs(fit.slope - b) < 4 * fit.slope_bootstrap_se and 0.002 < fit.slope_bootstrap_se < 0.05
    lo, hi = fit.slope_interval
    assert lo < fit.slope < hi
    z = stats.norm.ppf(0.99)
    truth_1e7 = c * 1e7**b * math.exp(sigma * z)
    elo, ehi = fit.extrapolated_interval[0]
    assert elo < fit.extrapolated[0] < ehi
    # the extrapolation 156x beyond the data: truth within the bootstrap interval widened by 2x in log
    assert math.log(elo) - math.log(ehi / elo) < math.log(truth_1e7) < math.log(ehi) + math.log(ehi / elo)


def test_infinite_quantile_gives_no_fit_and_bad_input_is_rejected():
    per = [np.array([1.0, 2.0, np.inf]), np.array([0.5, 0.6, 0.7])]
    fit = decay_rate_fit([100, 1000], per, quantile=0.99)
    assert not fit.ok and math.isnan(fit.slope) and math.isnan(fit.extrapolated[0])
    with pytest.raises(ValueError, match="violates at least two distinct dataset sizes"):
        decay_rate_fit([100, 100], [[1.0], [1.0]])
    with pytest.raises(ValueError, match="per_dataset has 1 entries; it needs one per n"):
        decay_rate_fit([100, 200], [[1.0]])
    with pytest.raises(ValueError, match="quantile=1.5 violates"):
        decay_rate_fit([100, 200], [[1.0], [1.0]], quantile=1.5)
    assert theorem4_rate(0.125) == -0.125
    with pytest.raises(ValueError, match="rate_exponent=0 violates"):
        theorem4_rate(0)
