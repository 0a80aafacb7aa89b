"""Old module paths (before issue 25's reorganisation) keep working for one release: the same
module object as the new path, and one DeprecationWarning that names the new path.

Each check runs in a fresh interpreter: Python caches a module under its old name after the
first import, so "warns once" is only observable from a clean start.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from dpjax import _moved

# what ``dpjax.accountants`` exported before the grouping; every name must still resolve there
OLD_ACCOUNTANTS_ALL = [
    "PrivacyCurve", "Provenance", "rdp_to_epsilon", "rdp_to_epsilon_per_order", "rdp_to_delta", "zcdp_to_epsilon",
    "zcdp_rdp", "tv_corrected_delta", "gaussian_rdp", "subsampled_gaussian_rdp", "DEFAULT_ORDERS",
    "langevin_noise_multiplier", "noisy_sgd_curve", "DiscretePLD", "PLDBracket", "pld_curve", "pld_epsilons",
    "pld_sequence_curve", "contamination", "cyclic_sgld", "exact", "expfam", "gaussian_divergence", "gibbs",
    "girsanov", "mixture", "posterior", "exact_last_iterate_curve", "exact_last_iterate_epsilon", "exact_path_curve",
    "analytic_gaussian_epsilon", "gaussian_epsilon", "gaussian_renyi", "calibration", "fdp", "group", "laplace",
    "Calibration", "calibrate_noise_multiplier", "calibrate_sampling_rate", "calibrate_steps", "GDPSummary",
    "gdp_delta", "gdp_tradeoff", "laplace_curve", "laplace_delta", "laplace_rdp",
]


def _run(code: str) -> dict:
    """Run ``code`` in a fresh interpreter with every warning recorded; it fills ``out`` (a
    dict), and the recorded warnings come back under ``"warnings"`` as (category, message, file)."""
    script = textwrap.dedent(
        """
        import json, sys, warnings
        out = {}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
        {body}
        out["warnings"] = [(w.category.__name__, str(w.message), w.filename) for w in caught
                           if issubclass(w.category, DeprecationWarning) and "moved to" in str(w.message)]
        print(json.dumps(out))
        """
    ).replace("{body}", textwrap.indent(textwrap.dedent(code), " " * 4))
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("first", [
    "import dpjax.accountants.girsanov as g",
    "from dpjax.accountants.girsanov import thm54_ula_path",
    "from dpjax.accountants import girsanov",
])
def test_an_old_accountant_path_works_in_every_import_form_and_warns_once(first):
    out = _run(f"""
        {first}
        import dpjax.accountants.girsanov as g
        from dpjax.accountants.girsanov import thm54_ula_path
        from dpjax.accountants import girsanov
        import dpjax.accountants
        from dpjax.accountants.samplers import girsanov as new
        out["same"] = g is new and girsanov is new and dpjax.accountants.girsanov is new
        out["function"] = thm54_ula_path is new.thm54_ula_path
        out["name"] = g.__name__
        out["spec"] = g.__spec__.name
    """)
    assert out["same"] and out["function"]
    assert out["name"] == out["spec"] == "dpjax.accountants.samplers.girsanov"  # the module keeps its identity
    assert len(out["warnings"]) == 1, out["warnings"]
    category, message, filename = out["warnings"][0]
    assert "dpjax.accountants.girsanov moved to dpjax.accountants.samplers.girsanov" in message
    assert filename == "<string>"  # attributed to the importing code, not to the import machinery


def test_every_old_path_resolves_to_its_new_module():
    pairs = sorted(_moved.MOVED.items())
    out = _run(f"""
        import importlib
        out["checked"] = []
        for old, new in {pairs!r}:
            out["checked"].append([old, importlib.import_module(old) is importlib.import_module(new)])
    """)
    assert all(same for _, same in out["checked"]), [old for old, same in out["checked"] if not same]
    warned = {m.split(" moved to ")[0] for _, m, _ in out["warnings"]}
    assert warned == set(_moved.MOVED)  # one warning per old path
    for old, new in pairs:  # each message names the new path
        assert any(m.startswith(f"{old} moved to {new};") for _, m, _ in out["warnings"]), old


def test_everything_dpjax_accountants_exported_still_resolves_there():
    out = _run(f"""
        import dpjax.accountants as A
        out["missing"] = [n for n in {OLD_ACCOUNTANTS_ALL!r} if getattr(A, n, None) is None]
    """)
    assert out["missing"] == []
    # the modules that moved away warn; the names that stayed (and posterior, now a group) do not
    moved = {m.split(" moved to ")[0].rsplit(".", 1)[-1] for _, m, _ in out["warnings"]}
    assert moved == {"contamination", "cyclic_sgld", "exact", "expfam", "gaussian_divergence", "gibbs", "girsanov",
                     "mixture", "laplace"}


def test_an_old_module_that_became_a_package_forwards_its_names():
    out = _run("""
        from dpjax.accountants import posterior
        from dpjax.accountants.posterior import gaussian
        out["public"] = posterior.gaussian_posterior_curve is gaussian.gaussian_posterior_curve
        import dpjax.experiments.sgld_interim as si
        from dpjax.experiments.sgld_interim import figure1
        out["run"] = si.run is figure1.run
        try:
            si.no_such_name
        except AttributeError as e:
            out["missing"] = str(e)
    """)
    assert out["public"] and out["run"]
    assert "no_such_name" in out["missing"]
    messages = [m for _, m, _ in out["warnings"]]
    assert any(m.startswith("dpjax.experiments.sgld_interim.run moved to dpjax.experiments.sgld_interim.figure1.run") for m in messages)
    assert not any("gaussian_posterior_curve" in m for m in messages)  # re-exported by the group: no warning


def test_unknown_names_still_raise_attribute_error():
    import dpjax.accountants

    with pytest.raises(AttributeError, match="no_such_accountant"):
        dpjax.accountants.no_such_accountant  # noqa: B018
