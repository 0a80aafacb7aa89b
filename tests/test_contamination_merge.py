"""``--merge`` of paper 003's regression experiments: runs over different n (or d) combine into
one result whose rate fit equals a fit over all the per-dataset values at once; runs that do
not belong together are refused, naming the difference."""
import argparse
import json
import math

import numpy as np
import pytest

from dpjax.cli import main, to_jsonable
from dpjax.estimators.contamination_rate import decay_rate_fit
from dpjax.experiments.contamination import _regression as common

FIT_ARGS = argparse.Namespace(rate_exponent=0.125, extrapolate_to=1e7, quantile=0.99, seed=0)


def arm(values, p, inf=False):
    values = [math.inf] * len(values) if inf else list(values)
    eps = float(np.sort(values)[math.ceil(0.99 * len(values)) - 1])
    return dict(epsilon_hat=eps, interval=(eps * 0.9, eps * 1.1), interval_confidence=0.95, bootstrap_se=0.01, contamination_rate=p,
                num_failed=0, seconds=1.0, num_unresolved_tail=0, median_epsilon=float(np.median(values)), mean_phi=0.1,
                min_particles_outside_box=3, min_effective_sample_size=50.0, epsilons=values)


def fake_run(kind, n_values, K=40, dims=(5,), rng_seed=0, **setting_overrides):
    """A result with the layout `dpjax reproduce` writes, eps_hat ~ 6 (n/1000)^-0.4 with noise."""
    rng = np.random.default_rng(rng_seed)
    per_dim = {}
    for d in dims:
        rows = []
        for n in n_values:
            base = 6.0 * (n / 1000.0) ** -0.4
            p = n ** -0.125
            rows.append({"n": n, "contaminated": arm(base * rng.lognormal(0, 0.1, K), p),
                         "uncontaminated": arm(1.2 * base * rng.lognormal(0, 0.1, K), 0.0, inf=kind == "linear")})
        res = common.arm_columns(rows, n_values)
        res["delta"] = [1 / (10 * n) for n in n_values]
        res["ratio_uncontaminated_over_contaminated"] = [
            u / c for u, c in zip(res["epsilon_hat_uncontaminated"], res["epsilon_hat_contaminated"])]
        res["settings"] = {"K": K, "particles": 1000, "quantile": 0.99, "quick": False, "seed": 0, "dim": d, "rate": "p_n = n^-0.125",
                           **setting_overrides}
        per_dim[str(d)] = res
    return {"dims": list(dims), "n": list(n_values), "by_dim": per_dim, "total_seconds": 10.0, "settings": {"kind": kind, "K": K}}


def test_merged_fit_equals_a_fit_over_all_the_data():
    a, b = fake_run("cauchy", [1000, 10000], rng_seed=1), fake_run("cauchy", [3000, 30000], rng_seed=2)
    merged = common.merge_results("cauchy", [("a", a), ("b", b)], FIT_ARGS)
    res = merged["by_dim"]["5"]
    assert res["n"] == [1000, 3000, 10000, 30000]
    # every per-n column follows its n
    want = [a["by_dim"]["5"]["per_dataset_epsilon_contaminated"][0], b["by_dim"]["5"]["per_dataset_epsilon_contaminated"][0],
            a["by_dim"]["5"]["per_dataset_epsilon_contaminated"][1], b["by_dim"]["5"]["per_dataset_epsilon_contaminated"][1]]
    assert res["per_dataset_epsilon_contaminated"] == want
    assert res["diagnostics_contaminated"]["median_epsilon"] == [float(np.median(v)) for v in want]
    direct = decay_rate_fit(res["n"], want, quantile=0.99, extrapolate_to=[1e5, 1e6, 1e7], bootstrap=1000, seed=0)
    fit = merged["rate_fit"]["d5_contaminated"]
    assert fit["slope"] == pytest.approx(direct.slope, rel=1e-12) and fit["ok"]
    assert fit["slope_interval"][0] == pytest.approx(direct.slope_interval[0], rel=1e-12)
    assert -0.5 < fit["slope"] < -0.3  # the simulated law's -0.4
    assert merged["settings"]["merged_from"] == ["a", "b"] and merged["settings"]["K"] == 40


def test_different_K_is_recorded_per_n_and_dims_are_united():
    a = fake_run("cauchy", [1000, 3000], K=40, dims=(5,))
    b = fake_run("cauchy", [10000], K=20, dims=(5, 10))
    merged = common.merge_results("cauchy", [("a", a), ("b", b)], FIT_ARGS)
    assert merged["dims"] == [5, 10]
    assert merged["by_dim"]["5"]["settings"]["K_by_n"] == [40, 40, 20]
    assert merged["by_dim"]["10"]["n"] == [10000]
    assert "d10_contaminated" not in merged["rate_fit"] or merged["rate_fit"]["d10_contaminated"] is None


def test_headline_and_figure_name_each_n_with_its_own_K():
    from dpjax.experiments.contamination import logistic as contamination_logistic

    a = fake_run("logistic", [1000, 3000], K=40)
    b = fake_run("logistic", [10000], K=20)
    merged = common.merge_results("logistic", [("a", a), ("b", b)], FIT_ARGS)
    notes = [r["note"] for r in contamination_logistic.headline(merged) if "without / with" in r["quantity"]]
    assert [note.endswith(f"(K = {k})") for note, k in zip(notes, [40, 40, 20])] == [True] * 3
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2)
    contamination_logistic.draw_panel(left, merged["by_dim"]["5"])
    common.draw_panel(right, merged, 5, "Logistic")
    plt.close(fig)
    assert left.get_title().endswith("K=20/40") and right.get_title().endswith("K = 20/40")


@pytest.mark.parametrize("change,message", [
    (dict(particles=2000), "'particles'"),
    (dict(seed=3), "'seed'"),
])
def test_runs_with_other_settings_are_refused(change, message):
    a, b = fake_run("linear", [1000]), fake_run("linear", [3000], **change)
    with pytest.raises(ValueError, match=message):
        common.merge_results("linear", [("a", a), ("b", b)], FIT_ARGS)


def test_repeated_n_other_kind_and_other_rate_are_refused():
    a, b = fake_run("linear", [1000, 3000]), fake_run("linear", [3000])
    with pytest.raises(ValueError, match=r"n = \[3000\] appear in more than one file"):
        common.merge_results("linear", [("a", a), ("b", b)], FIT_ARGS)
    with pytest.raises(ValueError, match="is a 'linear' result; this experiment is 'cauchy'"):
        common.merge_results("cauchy", [("a", a), ("b", fake_run("linear", [10000]))], FIT_ARGS)
    other = argparse.Namespace(**{**vars(FIT_ARGS), "rate_exponent": 0.2})
    with pytest.raises(ValueError, match="--rate-exponent"):
        common.merge_results("linear", [("a", a), ("b", fake_run("linear", [10000]))], other)
    with pytest.raises(ValueError, match="at least two"):
        common.merge_results("linear", [("a", a)], FIT_ARGS)


def test_merge_from_the_command_line(tmp_path, capsys):
    """Through the CLI's own JSON (where +inf is written as a string): the linear model's
    uncontaminated arm stays +inf and its fit is reported as undefined, not as a number."""
    paths = []
    for i, ns in enumerate(([1000, 3000], [10000, 30000])):
        path = tmp_path / f"run{i}.json"
        path.write_text(json.dumps(to_jsonable(fake_run("linear", ns, rng_seed=i))))
        paths.append(str(path))
    assert main(["reproduce", "contamination-linear", "--merge", ",".join(paths), "--out", str(tmp_path / "out")]) == 0
    out = json.loads((tmp_path / "out" / "contamination-linear.json").read_text())
    res = out["by_dim"]["5"]
    assert res["n"] == [1000, 3000, 10000, 30000]
    assert res["epsilon_hat_uncontaminated"] == ["inf"] * 4
    assert out["rate_fit"]["d5_contaminated"]["ok"] is True
    assert out["rate_fit"]["d5_uncontaminated"]["ok"] is False
    assert (tmp_path / "out" / "contamination-linear.png").is_file()
    with pytest.raises(ValueError, match="is not a file"):
        main(["reproduce", "contamination-linear", "--merge", f"{paths[0]},{tmp_path / 'missing.json'}", "--out", str(tmp_path)])


def test_logistic_merge_from_the_command_line(tmp_path):
    paths = []
    for i, ns in enumerate(([1000, 5000], [20000])):
        path = tmp_path / f"run{i}.json"
        run = fake_run("logistic", ns, rng_seed=i)
        path.write_text(json.dumps(to_jsonable(run)))
        paths.append(str(path))
    assert main(["reproduce", "contamination-logistic", "--merge", ",".join(paths), "--out", str(tmp_path / "out")]) == 0
    out = json.loads((tmp_path / "out" / "contamination-logistic.json").read_text())
    assert out["by_dim"]["5"]["n"] == [1000, 5000, 20000]
    assert out["rate_fit"]["d5_uncontaminated"]["ok"] is True
