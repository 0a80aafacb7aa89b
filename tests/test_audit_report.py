"""The audit report labels releases (issue 24 item 5) and keeps fits apart from certified bounds
(issue 23 item 3): every row and figure panel names its release, the sources are the headline
step's, the verdict never counts a fit, a bound's RDP below the certified RDP is a violation,
the sample size's ceiling is reported, and the figure draws what the table says (checked on the
figure's own artists; the PNG written and looked at in the issue note)."""
import math
import warnings

import numpy as np
import pytest

import dpjax
from dpjax import samplers
from dpjax.accountants import PrivacyCurve, Provenance, pld_curve
from dpjax.accountants.samplers.girsanov import thm54_ula_path
from dpjax.audit import FIT_KIND, LAST_ITERATE, PATH, PATH_AND_BATCHES, UNSTATED, PrivacyViolationWarning, audit, release_label
from dpjax.models.gaussian_mean import gaussian_mean, gaussian_mean_dataset

GAMMA, GAP = 0.02, 2.0


def _setup():
    x = np.linspace(-1.0, 1.0, 20)
    pair = dpjax.replace_one(gaussian_mean_dataset(x), 0, {"x": np.array([x[0] + GAP])})
    return gaussian_mean(dim=1, prior_precision=1.0, inverse_temperature=1.0), pair


@pytest.fixture(scope="module")
def report():
    model, pair = _setup()
    sigma = math.sqrt(2 * GAMMA) / (GAMMA * GAP)  # each ULA step: the Gaussian mechanism (replace-one gap 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyViolationWarning)
        return audit(model, pair, samplers.ula(GAMMA), num_pairs=3000, num_steps=30, record_steps=[10, 30], delta=1e-2,
                     bounds={"PLD": lambda t: pld_curve(sigma, 1.0, t, adjacency="replace-one"),
                             "Thm 5.4": lambda t: thm54_ula_path(GAP, GAMMA, t)},
                     seed=4)


def test_every_row_names_its_release(report):
    t = report.table
    # ULA's batches are full, the same every step: its path loss measures the path itself
    assert set(t["released"]) == {LAST_ITERATE, PATH, UNSTATED}
    assert (t[t["quantity"] == "PLD"]["released"] == UNSTATED).all()  # pld_curve's provenance states none
    assert (t[t["quantity"] == "Thm 5.4"]["released"] == "path (every iterate)").all()
    assert set(t[t["kind"].isin(["lower bound", "band", FIT_KIND, "estimate"]) & (t["quantity"] == "last iterate")]["released"]) == {LAST_ITERATE}
    text = report.summary(full=True)
    assert "unspecified" not in text  # issue 24: "a bound for releasing the unspecified"
    assert f"PLD (bound; release: {UNSTATED})" in " ".join(text.split())
    header = next(line for line in text.splitlines() if line.startswith("quantity"))
    assert header.split()[:3] == ["quantity", "kind", "release"]
    # the sources are the headline step's: the PLD row says 30-fold, not the first step's 10-fold
    sources = text[text.index("sources:"):]
    assert "30-fold" in sources and "10-fold" not in sources
    assert "(of the numbers at step 30" in sources


def test_the_fit_is_labelled_and_never_certified(report):
    t = report.table.set_index(["step", "quantity", "kind"])
    fit = t.loc[(30, "last iterate", FIT_KIND)]
    assert "ONLY IF the pair's trade-off is Gaussian" in fit["source"]
    text = " ".join(report.summary().split())  # words, whatever the wrapping
    assert "fit (assumes GDP)" in text and "not certified" in text
    assert "fits are not part of the verdict" in text
    # the band and the certified bound are both below every bound (valid) and finite
    for kind in ("lower bound", "band"):
        assert t.loc[(30, "last iterate", kind), "epsilon"] <= t.loc[(30, "PLD", "bound"), "epsilon"]


def test_a_bound_whose_rdp_is_below_the_certified_rdp_is_a_violation():
    model, pair = _setup()
    too_small = PrivacyCurve.from_rdp([2.0, 4.0, 8.0, 16.0, 32.0], [1e-6] * 5, Provenance("deliberately small RDP", released="last iterate"))
    with pytest.warns(PrivacyViolationWarning, match="RDP at order"):
        rep = audit(model, pair, samplers.ula(GAMMA), num_pairs=3000, num_steps=30, delta=0.5, bounds={"tiny": too_small}, seed=1)
    assert rep.rdp is not None and rep.rdp.certified[0] and rep.rdp.rdp[0] > 1e-6
    assert not rep.ok and any("RDP at order 2" in p for p in rep.problems)
    assert "RDP of the last iterate at step 30" in rep.summary()


def test_the_report_says_when_the_sample_size_limits_the_bound():
    model, pair = _setup()
    loose = PrivacyCurve.from_rdp([2.0], [200.0], Provenance("a loose bound", released="path"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = audit(model, pair, samplers.ula(GAMMA), num_pairs=200, num_steps=10, delta=1e-2, bounds={"loose": loose}, seed=0,
                    path_loss=False)
    note = [n for n in rep.notes if "the sample size, not the mechanism" in n]
    assert note and ("pairs_needed" in note[0] or "no feasible number of pairs" in note[0])
    assert any("GDP fit needs at least 1,000" in n for n in rep.notes)  # 200 pairs: no fit, said so
    assert "notes:" in rep.summary()


def test_the_figure_has_a_panel_per_release_and_the_verdict_in_its_title(report, tmp_path):
    fig = report.figure()
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["release: last iterate", "release: path (every iterate)", f"release: {UNSTATED}"]
    assert fig._suptitle.get_text().startswith("audit: ")
    verdict = "ok" if report.ok else ("PRIVACY VIOLATION" if not report.violations.empty else "NOT OK")
    assert fig._suptitle.get_text().startswith(f"audit: {verdict};")
    # the path-loss estimate's open upper end is drawn as an arrow off the top of its panel
    path = fig.axes[1]
    arrows = [c for c in path.get_children() if type(c).__name__ == "Annotation"]
    assert len(arrows) == int(np.isposinf(report.table[report.table["released"] == PATH]["upper"]).sum())
    # markers are not clipped, so a certified 0 sits visibly on the axis
    assert all(not line.get_clip_on() for line in fig.axes[0].get_lines() if line.get_marker() == "^")
    # legends sit below their panel, not over the data
    fig.canvas.draw() if hasattr(fig.canvas, "draw") else None
    for ax in fig.axes:
        anchor = ax.get_legend().get_bbox_to_anchor().transformed(ax.transAxes.inverted())
        assert anchor.y0 < 0  # anchored under the axes
    path = report.save(tmp_path / "audit.png")
    assert path.stat().st_size > 20_000


def test_release_labels():
    assert release_label("") == UNSTATED
    assert release_label("path (every iterate; the last iterate by post-processing)") == "path (every iterate)"
    assert release_label("path and batches") == PATH_AND_BATCHES
    assert release_label("last iterate") == LAST_ITERATE
    assert release_label("posterior sample") == "posterior sample"
    with pytest.raises(ValueError, match="bounds='auto'|bounds='sometimes'"):
        audit(*_setup(), samplers.ula(GAMMA), num_pairs=10, num_steps=2, bounds="sometimes")
