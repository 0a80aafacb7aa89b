"""The real-data workflow (`dpjax reproduce breast-cancer-audit`): each piece against an
independent computation (scikit-learn, scipy, numpy, dp_accounting), then end to end at the
--quick size.

Chain output is tested only through guarantees (a certified lower bound never above a valid
upper bound) and against independent recomputation, never against pinned numbers."""
import json
import math

import numpy as np
import pytest
from scipy import special, stats

pytest.importorskip("sklearn")

from dpjax import samplers  # noqa: E402
from dpjax.accountants.composition.rdp import DEFAULT_ORDERS, langevin_noise_multiplier  # noqa: E402
from dpjax.experiments import breast_cancer_audit as bca  # noqa: E402
from _shared import dp_accounting_rdp_epsilon  # noqa: E402

PRIOR_SCALE = 3.0


@pytest.fixture(scope="module")
def data():
    return bca.load_data(0.2, 0)


@pytest.fixture(scope="module")
def baseline(data):
    return bca.map_baseline(data, PRIOR_SCALE)


def test_split_is_stratified_and_standardised_on_the_training_records(data):
    from sklearn.datasets import load_breast_cancer

    raw = load_breast_cancer()
    assert data["x_train"].shape == (455, 30) and data["x_test"].shape == (114, 30)
    np.testing.assert_allclose(data["x_train"].mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(data["x_train"].std(axis=0), 1.0, rtol=1e-12)
    assert np.any(np.abs(data["x_test"].mean(axis=0)) > 1e-3)  # the test split is not standardised on itself
    share = raw.target.mean()
    assert abs(data["y_train"].mean() - share) < 1.0 / 455 and abs(data["y_test"].mean() - share) < 1.0 / 114


def test_numpyro_model_is_the_closed_form_logistic_posterior(data):
    """from_numpyro on the real records: log-likelihood and log-prior against scipy's formulas."""
    import jax

    model = bca.make_model(data["x_train"], data["y_train"], PRIOR_SCALE)
    assert model.dim == 31 and model.latent_sites == ("b", "w")
    rng = np.random.default_rng(1)
    theta = rng.normal(size=31)
    with jax.enable_x64(True):
        lat = model.constrain(theta)
        b, w = float(lat["b"]), np.asarray(lat["w"])
        assert b == theta[0] and np.array_equal(w, theta[1:])  # theta = (b, w)
        x, y = data["x_train"], data["y_train"]
        got = np.asarray(jax.jit(jax.vmap(model.log_likelihood, in_axes=(None, 0)))(theta, {"x": x, "y": y}))
        log_prior = float(jax.jit(model.log_prior)(theta))
    z = x @ w + b
    np.testing.assert_allclose(got, y * special.log_expit(z) + (1 - y) * special.log_expit(-z), rtol=1e-12, atol=1e-12)
    assert log_prior == pytest.approx(stats.norm(0, PRIOR_SCALE).logpdf(theta).sum(), rel=1e-12)


def test_test_accuracy_agrees_with_scikit_learn(data, baseline):
    model = bca.make_model(data["x_train"], data["y_train"], PRIOR_SCALE)
    theta = np.concatenate([[baseline["intercept"]], baseline["weights"]])
    rng = np.random.default_rng(2)
    thetas = np.vstack([theta, theta + rng.normal(scale=0.5, size=(3, 31))])
    acc = bca.test_accuracy(model, thetas, data["x_test"], data["y_test"])
    assert acc[0] == pytest.approx(baseline["test_accuracy"], abs=1e-12)  # scikit-learn's own score of its fit
    from sklearn.metrics import accuracy_score

    for a, t in zip(acc[1:], thetas[1:]):
        assert a == pytest.approx(accuracy_score(data["y_test"], (data["x_test"] @ t[1:] + t[0]) > 0))


def test_canary_lies_off_the_data_and_against_the_fit(data, baseline):
    canary = bca.make_canary(data["x_train"], baseline, 4.0)
    # the least-variance principal axis, recomputed by an eigendecomposition of the covariance
    values, vectors = np.linalg.eigh(np.cov(data["x_train"].T))
    assert abs(canary["axis"] @ vectors[:, 0]) == pytest.approx(1.0, abs=1e-8)
    assert canary["axis_sd"] == pytest.approx(math.sqrt(values[0]), rel=1e-8)
    assert np.linalg.norm(canary["x"]) == pytest.approx(4.0)
    # out of distribution: every training record lies far closer to the mean along that axis
    assert np.max(np.abs(data["x_train"] @ canary["axis"])) < 0.1 * 4.0
    # labelled against the non-private fit's prediction at the canary
    assert (canary["fitted_logit"] > 0) != (canary["y"] == 1.0)
    with pytest.raises(ValueError, match="canary_scale=0"):
        bca.make_canary(data["x_train"], baseline, 0.0)


def test_temperature_gives_the_requested_noise_multiplier():
    sigma, gamma, clip, q = 1.3, 2e-3, 0.7, 0.05
    temperature = bca.temperature_for(sigma, gamma, clip, q)
    assert langevin_noise_multiplier(gamma, 1.0 / temperature, clip, 1.0 / q) == pytest.approx(sigma, rel=1e-12)
    sampler = samplers.sgld(gamma, batching="poisson", sampling_rate=q, temperature=temperature, parameterisation="euler", clip_norm=clip)
    import jax

    with jax.enable_x64(True):
        drift, noise = (float(v) for v in sampler.coefficients(0))
    assert noise / (drift * clip / q) == pytest.approx(sigma, rel=1e-12)  # noise sd over the add/remove sensitivity


def test_rdp_bounds_against_dp_accounting():
    steps, sigma, q, delta = [10, 200], 1.0, 0.05, 1e-3
    bounds = bca.accountant_bounds(steps, sigma, q, delta)
    for t, eps in zip(steps, bounds["rdp"]):
        peer = dp_accounting_rdp_epsilon(q, sigma, t, delta, [a for a in DEFAULT_ORDERS if a == round(a)])
        # dpjax's orders include the peer's integer orders and finer fractional ones: never looser
        assert eps <= peer * (1 + 1e-9) and eps > 0.9 * peer


def test_bad_arguments_are_rejected_before_any_compute(tmp_path):
    from dpjax.cli import main

    for flag, value, match in (
        ("--rate", "0", "rate=0"), ("--rate", "1.5", "rate=1.5"), ("--noise-multiplier", "0", "noise_multiplier=0"),
        ("--clip", "-1", "clip=-1"), ("--delta", "1", "delta=1"), ("--canary-scale", "0", "canary_scale=0"),
        ("--test-fraction", "1", "test_fraction=1"), ("--pairs", "0", "pairs=0"),
    ):
        with pytest.raises(ValueError, match=match):
            main(["reproduce", "breast-cancer-audit", "--out", str(tmp_path), flag, value])
    with pytest.raises(SystemExit):
        main(["reproduce", "breast-cancer-audit", "--out", str(tmp_path), "--steps", "0,5"])
    assert not any(tmp_path.iterdir())


def test_quick_sizes_and_defaults():
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    bca.add_arguments(parser)
    quick, full = bca._check(parser.parse_args(["--quick"])), bca._check(parser.parse_args([]))
    assert (quick["pairs"], quick["steps"]) == (500, [25, 50, 100])
    assert (full["pairs"], full["steps"]) == (5000, [50, 100, 200, 400])
    assert bca._check(parser.parse_args(["--quick", "--pairs", "7", "--steps", "9,3"]))["steps"] == [3, 9]


def test_small_run_end_to_end(tmp_path, capsys):
    """The command end to end at a smaller size than --quick (the notebook runs the pieces at
    another): JSON, figure, progress lines and the headline table."""
    from dpjax.cli import main

    assert main(["reproduce", "breast-cancer-audit", "--out", str(tmp_path), "--pairs", "100", "--steps", "10,30"]) == 0
    captured = capsys.readouterr()
    res = json.loads((tmp_path / "breast-cancer-audit.json").read_text())
    assert (tmp_path / "breast-cancer-audit.png").stat().st_size > 20_000
    assert res["steps"] == [10, 30] and res["num_pairs"] == 100 and res["num_nonfinite"] == 0
    upper, lower = np.array(res["epsilon_upper_rdp"]), np.array(res["epsilon_lower_certified"])
    # a certified lower bound (95% each) never above a valid upper bound; the audit agrees
    assert np.all(lower <= upper) and res["audit_ok"]
    assert np.all(np.diff(upper) > 0)  # composition over more steps: more leakage allowed
    # the released iterate is a useful classifier (far above the majority class), below or near the MAP
    acc = np.array(res["test_accuracy_mean"])
    assert np.all(acc > res["baseline"]["majority_rate"] + 0.2) and np.all(acc <= 1.0)
    # stderr: one line per long step and its time; stdout: files, then the headline table
    assert captured.err.count("... ") == 4 == captured.err.count("done in")
    assert f"{upper[-1]:.4g}" in captured.out and "test accuracy" in captured.out
