"""`dpjax demo` at a reduced size: the story holds and every number is consistent."""
import argparse

import numpy as np

from dpjax.cli import main
from dpjax.demo import DEFAULTS, add_arguments, compute_demo


def test_demo_story_at_small_size(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--n", "200", "--c", "203", "--epochs", "16", "--chains", "6000", "--out", str(tmp_path), "--no-progress"])
    out = compute_demo(args)
    printed = capsys.readouterr().out
    assert "SGLD iterate at epoch" in printed and out["figure_path"].exists()
    exact = out["exact_curve"]
    peak = out["peak_epoch"]
    # the interim iterate leaks far more than the posterior: rise, peak, return
    assert exact[peak - 1] > 1.0 > 10 * out["posterior_exact"]
    assert exact[0] < exact[peak - 1] and exact[-1] < exact[peak - 1]
    # measured 95% lower bound is below the exact value and certifies a real leak
    assert 0.5 * exact[peak - 1] < out["lower_bound"].epsilon <= exact[peak - 1]
    # the Girsanov path bound covers the measured path eps, which covers the last iterate
    assert out["girsanov_path_bound"] >= out["path_epsilon"] >= exact[peak - 1]
    assert out["num_nonfinite"] == 0


def test_demo_cli_flags_default_to_figure_one_ratio():
    assert DEFAULTS["c"] / DEFAULTS["n"] == np.float64(1014.0 / 1000)
    assert abs(DEFAULTS["c"] / DEFAULTS["n"] - 1165165 / 1149019) < 1e-3
