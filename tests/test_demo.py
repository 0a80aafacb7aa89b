"""`dpjax demo` at a reduced size: the story holds, every number is consistent, and the
printed report and the figure say it."""
import argparse

import numpy as np
import pytest

from dpjax.demo import DEFAULTS, FIGURE1_C, FIGURE1_N, add_arguments, compute_demo, measured_epochs


def _args(tmp_path, *extra):
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--n", "100", "--c", "101.4", "--epochs", "24", "--chains", "4000", "--out", str(tmp_path), *extra])


def test_demo_story_at_small_size(tmp_path, capsys):
    out = compute_demo(_args(tmp_path))
    captured = capsys.readouterr()
    exact, peak = out["exact_curve"], out["peak_epoch"]
    # the interim iterate leaks far more than the posterior (exact eps 0 here): rise, peak, return
    assert out["posterior_exact"] == 0.0
    assert exact[peak - 1] > 1.0
    assert exact[0] < exact[peak - 1] and exact[-1] < 0.1 * exact[peak - 1]
    # the measured epochs cover the rise, the peak and the return
    epochs = out["measured_epochs"]
    assert peak in epochs and min(epochs) < peak < max(epochs)
    # certified lower bounds (Bonferroni: all hold together with probability >= 95%) lie below
    # the exact values; at the peak the leak is certified: with 4,000 pairs at 99.3% confidence
    # (Bonferroni over 7 epochs) the bound lies at 0.45-0.63 of the exact value over seeds 0-3
    lbs = np.array([lb.epsilon for lb in out["lower_bounds"]])
    assert np.all(lbs <= exact[np.array(epochs) - 1])
    assert out["lower_bound"].epsilon > 0.4 * exact[peak - 1]
    # a different release: the Girsanov path bound covers the measured path eps, which covers the last iterate
    assert out["girsanov_path_bound"] >= out["path_epsilon"] >= exact[peak - 1]
    assert out["num_nonfinite"] == 0
    # the printed report carries the numbers, the explanation of the path and the takeaway
    printed = captured.out
    assert f"{exact[peak - 1]:.4g}" in printed and f">= {out['lower_bound'].epsilon:.4g}" in printed
    assert "a different, far larger release" in printed.lower() and "Takeaway:" in printed
    assert out["takeaway"].split(";")[0][:60] in " ".join(printed.split())
    assert max(len(line) for line in printed.splitlines()) <= 100
    # progress lines go to stderr, one per long step with its time
    assert captured.err.count("... ") == 3 and captured.err.count("done in") == 3
    assert out["figure_path"].exists() and out["figure_path"].stat().st_size > 10_000


def test_demo_without_progress_prints_nothing_on_stderr(tmp_path, capsys):
    from dpjax.demo import _stage

    with _stage(_args(tmp_path, "--no-progress"), "a long step"):
        pass
    with _stage(_args(tmp_path), "a long step"):
        pass
    assert capsys.readouterr().err.startswith("... a long step\n    done in")


def test_demo_rejects_bad_arguments(tmp_path):
    for flag, value, match in (("--n", "0", "n=0"), ("--chains", "-5", "chains=-5"), ("--delta", "1.5", "delta=1.5"), ("--epochs", "0", "epochs=0")):
        with pytest.raises(ValueError, match=match):
            compute_demo(_args(tmp_path, flag, value))


def test_measured_epochs_cover_rise_peak_and_return():
    assert measured_epochs(15, 36) == [5, 9, 13, 15, 16, 20, 24]
    assert measured_epochs(15, 18)[-1] == 18  # capped at the exact curve's length
    assert measured_epochs(1, 1) == [1]


def test_demo_cli_flags_default_to_figure_one_ratio():
    assert abs(DEFAULTS["c"] / DEFAULTS["n"] - FIGURE1_C / FIGURE1_N) < 1e-3
