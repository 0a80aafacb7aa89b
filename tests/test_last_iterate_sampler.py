"""From a dpjax run to the last-iterate constants (issue 22, item 3): hand computations for each
sampler, batching and parameterisation, and the exact ULA law where the bound is exact."""
import math

import numpy as np
import pytest

import dpjax.models as M
import dpjax.samplers as S
from dpjax.accountants import ConstantsUnavailable, last_iterate_gdp_mu, sampler_last_iterate_curve
from dpjax.accountants.samplers import exact
from dpjax.accountants.samplers.sampler_constants import describe_run
from dpjax.data import add_remove, replace_one
from dpjax.models.constants import certify

N = 8
X = np.array([[0.1, 0.2], [-0.3, 0.5], [1.0, -1.0], [0.4, 0.4], [0.0, 0.7], [-0.6, -0.1], [0.2, -0.5], [0.9, 0.3]])


def _gaussian_pair(adjacency="replace-one"):
    model = M.gaussian_mean(dim=2, prior_precision=0.5, inverse_temperature=2.0)  # w = 2
    ds = M.gaussian_mean_dataset(X)
    if adjacency == "add-remove":
        return model, add_remove(ds, 3)
    return model, replace_one(ds, 3, {"x": X[3] + np.array([0.3, -0.4])})  # ||x - x'|| = 0.5


# hand computation: w = 2, lambda = 0.5, n = 8: gap = n w 0.5 = 8, M = m = 0.5 + 8 * 2 = 16.5
@pytest.mark.parametrize("sampler,expect", [
    (S.ula(0.01, temperature=1.5, parameterisation="euler"), dict(step_size=0.01, noise_std=math.sqrt(300.0), batching="full", batch_size=None)),
    (S.ula(0.02, temperature=1.5, parameterisation="welling-teh"), dict(step_size=0.01, noise_std=math.sqrt(300.0), batching="full", batch_size=None)),
    (S.sgld(0.02, batching="reshuffle", batch_size=3), dict(step_size=0.01, noise_std=2 * math.sqrt(1 / 0.02), batching="shuffled", batch_size=3)),
    (S.cyclic_sgld(0.02), dict(step_size=0.01, noise_std=2 * math.sqrt(50.0), batching="cyclic-random", batch_size=1)),
    (S.cyclic_sgld(0.02, order=np.arange(N)), dict(step_size=0.01, noise_std=2 * math.sqrt(50.0), batching="cyclic", batch_size=1)),
    (S.sgld(0.004, batching="without-replacement", batch_size=4, parameterisation="euler"),
     dict(step_size=0.004, noise_std=math.sqrt(2 / 0.004), batching="sampled", batch_size=4)),
])
def test_run_constants_by_hand(sampler, expect):
    model, pair = _gaussian_pair()
    run = describe_run(model, pair, sampler, 100)
    assert run.step_size == pytest.approx(expect["step_size"], rel=1e-12)
    assert run.noise_std == pytest.approx(expect["noise_std"], rel=1e-12)
    assert run.batching == expect["batching"] and run.batch_size == expect["batch_size"]
    assert run.gradient_sensitivity == pytest.approx(8.0, rel=1e-6)
    assert run.smoothness == pytest.approx(16.5, rel=1e-12) and run.strong_convexity == pytest.approx(16.5, rel=1e-12)


def test_poisson_constants_cover_the_fullest_and_the_emptiest_batch():
    model, pair = _gaussian_pair()
    run = describe_run(model, pair, S.sgld(0.02, batching="poisson", sampling_rate=0.25), 100)
    assert run.batching == "poisson" and run.batch_size == pytest.approx(2.0)
    assert run.smoothness == pytest.approx(0.5 + (N / 0.25) * 2.0)  # all n records at scale 1/q
    assert run.strong_convexity == pytest.approx(0.5)  # the empty batch: the prior alone


def test_clipping_and_add_remove_by_hand():
    model, pair = _gaussian_pair()
    run = describe_run(model, pair, S.ula(0.01, clip_norm=0.3, parameterisation="euler"), 10)
    assert run.gradient_sensitivity == pytest.approx(N * 0.6)  # min(2C, w ||x - x'||) = 0.6
    assert run.strong_convexity == pytest.approx(0.5) and run.smoothness == pytest.approx(16.5)  # Huber: no curvature
    model, pair = _gaussian_pair("add-remove")
    with pytest.raises(ConstantsUnavailable, match="gradient_sensitivity .* infinite: the removed record's gradient"):
        describe_run(model, pair, S.ula(0.01), 10)
    run = describe_run(model, pair, S.ula(0.01, clip_norm=0.3, parameterisation="euler"), 10)
    assert run.gradient_sensitivity == pytest.approx(N * 0.3)


def test_linear_and_logistic_regression_constants_by_hand():
    x = np.array([0.5, -1.0, 2.0, 0.3])
    y = np.array([1.0, 0.0, -1.0, 0.5])
    lin = M.bayesian_linear_regression(noise_precision=4.0, prior_precision=0.1)
    pair = replace_one(M.regression_dataset(x, y), 1, {"x": np.array([-1.0]), "y": np.array(2.0)})
    rc = certify(lin, pair)
    assert rc.gradient_difference == pytest.approx(4.0 * 2.0 * 1.0)  # beta |y - y'| |x|
    assert rc.record_smoothness == pytest.approx(4.0 * 4.0) and rc.record_strong_convexity == pytest.approx(4.0 * 0.09)
    with pytest.raises(ConstantsUnavailable, match="different x"):
        certify(lin, replace_one(M.regression_dataset(x, y), 1, {"x": np.array([0.7]), "y": np.array(2.0)}))
    logi = M.logistic_regression(prior_precision=2.0, dim=2)
    xs = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]])
    ds = M.logistic_regression_dataset(xs, np.array([1.0, 0.0, 1.0]))
    rc = certify(logi, replace_one(ds, 0, {"x": np.array([0.0, 1.0]), "y": np.array(0.0)}))
    assert rc.gradient_difference == pytest.approx(1.0 + 1.0)  # ||x|| + ||x'||
    assert rc.record_smoothness == pytest.approx(25.0 / 4.0) and rc.record_strong_convexity == 0.0
    rc = certify(logi, add_remove(ds, 2), clip_norm=1.5)
    assert rc.gradient_difference == pytest.approx(1.5) and rc.prior_precision == 2.0


def test_sampler_curve_is_the_exact_ula_law_for_a_strongly_convex_quadratic():
    """ULA on the Gaussian-mean Gibbs posterior: a strongly convex quadratic, full batch, so the
    shifted-interpolation bound is exact; dpjax's exact accountant gives the same Renyi values."""
    model, pair = _gaussian_pair()
    orders = np.array([2.0, 8.0])
    for steps in (1, 30, 2000):
        for sampler in (S.ula(0.01, temperature=1.5, parameterisation="euler"), S.ula(0.02, temperature=1.5, parameterisation="welling-teh")):
            curve = sampler_last_iterate_curve(model, pair, sampler, steps)
            ref = exact.ula_exact_curve_for_pair(model, pair, 0.01, [steps], orders, temperature=1.5)
            assert curve.rdp_at(orders)[...] == pytest.approx(ref.rdp[0], rel=1e-6)
            assert curve.provenance.released == "last iterate"


def test_cyclic_sampler_bound_never_below_the_exact_law():
    """Cyclic SGLD (b = 1, a known fixed order) on the Gaussian mean: every iterate is Gaussian
    (dpjax.accountants.exact.propagate over the per-step affine maps); the bound holds at every
    position of the differing record."""
    model = M.gaussian_mean(dim=1, prior_precision=0.5, inverse_temperature=2.0)
    x = np.linspace(-1, 1, 5)
    ds = M.gaussian_mean_dataset(x)
    steps = 23
    sampler = S.cyclic_sgld(0.02, temperature=1.0, order=np.arange(5))  # a known order: the worst case over positions
    eta, sd = 0.01, math.sqrt(0.02)
    worst = 0.0
    for index in range(5):
        pair = replace_one(ds, index, {"x": np.array([x[index] + 0.8])})
        mu = float(last_iterate_gdp_mu(**_kw(describe_run(model, pair, sampler, steps), steps)).shifted_interpolation)
        maps = []
        for t in range(steps):  # position t mod 5 holds record t mod 5 (cyclic with the identity order)
            i = t % 5
            h = 0.5 + 5 * 2.0
            maps.append((1 - eta * h, eta * 5 * 2.0, i))
        m1 = m2 = 0.0
        v = 0.0
        for slope, gain, i in maps:
            xi = x[i]
            m1 = slope * m1 + gain * xi
            m2 = slope * m2 + gain * (xi + 0.8 if i == index else xi)
            v = slope * slope * v + sd * sd
        exact_mu = abs(m1 - m2) / math.sqrt(v)
        assert mu >= exact_mu * (1 - 1e-12)
        worst = max(worst, exact_mu)
    assert worst > 0


def _kw(run, steps):
    return dict(step_size=run.step_size, noise_std=run.noise_std, steps=steps, dataset_size=run.dataset_size,
                gradient_sensitivity=run.gradient_sensitivity, smoothness=run.smoothness, strong_convexity=run.strong_convexity,
                batching=run.batching if run.batching != "sampled" else "poisson", batch_size=run.batch_size)


def test_what_the_bounds_do_not_cover_is_refused_by_name():
    model, pair = _gaussian_pair()
    with pytest.raises(ConstantsUnavailable, match="with replacement"):
        sampler_last_iterate_curve(model, pair, S.sgld(0.01, batching="uniform", batch_size=2), 10)
    with pytest.raises(ConstantsUnavailable, match="step-size schedule"):
        sampler_last_iterate_curve(model, pair, S.ula(lambda t: 0.01 / (1.0 + t)), 10)
    with pytest.raises(ConstantsUnavailable, match=r"violates step_size <= 2 / smoothness"):
        sampler_last_iterate_curve(model, pair, S.ula(0.5, parameterisation="euler"), 10, method="shifted-interpolation")
    with pytest.raises(ValueError, match="num_steps"):
        sampler_last_iterate_curve(model, pair, S.ula(0.01), 0)


def test_a_model_without_certified_constants_gets_composition_only():
    numpyro = pytest.importorskip("numpyro")
    import numpyro.distributions as dist

    def normal_mean(x=None):
        theta = numpyro.sample("theta", dist.Normal(0.0, 1.0))
        numpyro.sample("x", dist.Normal(theta, 1.0), obs=x)

    ds = M.gaussian_mean_dataset(np.linspace(-1, 1, 6))
    model = M.from_numpyro(normal_mean, observed_site="x", example_record={"x": np.array(0.0)})
    ds = M.gaussian_mean_dataset(np.linspace(-1, 1, 6)[:, None])
    pair = add_remove(ds, 2)
    with pytest.raises(ConstantsUnavailable, match="certifies no smoothness"):
        sampler_last_iterate_curve(model, pair, S.ula(0.01, clip_norm=1.0), 50, method="shifted-interpolation")
    with pytest.raises(ConstantsUnavailable, match="certifies no smoothness"):
        sampler_last_iterate_curve(model, pair, S.ula(0.01), 50)  # no clipping: not even composition
    curve = sampler_last_iterate_curve(model, pair, S.ula(0.01, clip_norm=1.0), 50)
    assert "composition only" in " ".join(curve.provenance.assumptions)
    assert curve.provenance.released.startswith("path")


@pytest.mark.slow  # 4,000 coupled chain pairs, 200 steps: ~12 s on a loaded 2-core CPU
def test_coupled_chains_never_certify_more_than_the_bound_on_logistic_regression():
    """End to end on a non-quadratic convex loss: clipped logistic regression with a canary, ULA.
    The audit's certified lower bound (Clopper-Pearson, 95%) must stay below the last-iterate
    bound at every recorded step (here the bound is within 2-3x of the plug-in estimate)."""
    from dpjax.audit import audit

    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 2))
    y = (x[:, 0] > 0).astype(float)
    x[0], y[0] = [3.0, 3.0], 0.0  # the canary
    model = M.logistic_regression(prior_precision=1.0, dim=2)
    pair = add_remove(M.logistic_regression_dataset(x, y), 0)
    sampler = S.ula(0.02, parameterisation="euler", clip_norm=1.0, temperature=0.5)
    report = audit(model, pair, sampler, num_pairs=4000, num_steps=200, record_steps=[10, 50, 200], delta=0.01,
                   bounds={"last iterate": lambda t: sampler_last_iterate_curve(model, pair, sampler, t)}, seed=1, path_loss=False)
    table = report.table
    assert report.ok
    for t in (10, 50, 200):
        rows = table[table["step"] == t]
        lower = float(rows[rows["kind"] == "lower bound"]["epsilon"].iloc[0])
        bound = float(rows[rows["kind"] == "bound"]["epsilon"].iloc[0])
        assert 0 < lower <= bound
    assert float(table[(table["step"] == 200) & (table["kind"] == "bound")]["epsilon"].iloc[0]) < 4.0  # flat, not composition's
