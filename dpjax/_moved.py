"""Old module paths, kept working for one release after the reorganisation of issue 25.

The accountants were grouped by what they bound (``dpjax.accountants.mechanisms``,
``.composition``, ``.samplers``, ``.posterior``), the single-paper checks moved next to their
paper's experiments (``dpjax.experiments.<paper>``), and MALA got one home
(``dpjax.samplers.mala``). Importing an old path still works and gives the module at its new
home, with one :class:`DeprecationWarning` naming that home (Python caches the module under the
old name, so later imports are silent). No shim files: one import hook serves every old path.

Two old paths are now packages themselves (``dpjax.accountants.posterior`` and
``dpjax.experiments.sgld_interim``); their ``__getattr__`` hands the old module's names over
through :func:`forward_attribute`.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys
import warnings

_A, _E = "dpjax.accountants", "dpjax.experiments"

# old module path -> new module path
MOVED = {
    f"{_A}.gaussian": f"{_A}.mechanisms.gaussian",
    f"{_A}.laplace": f"{_A}.mechanisms.laplace",
    f"{_A}.mixture": f"{_A}.mechanisms.mixture",
    f"{_A}.gaussian_divergence": f"{_A}.mechanisms.gaussian_divergence",
    f"{_A}.gaussian_tv": f"{_A}.mechanisms.gaussian_tv",
    f"{_A}.noisy_sgd": f"{_A}.composition.rdp",
    f"{_A}.pld": f"{_A}.composition.pld",
    f"{_A}.pld_accountant": f"{_A}.composition.pld_accountant",
    f"{_A}.pld_pairs": f"{_A}.composition.pld_pairs",
    f"{_A}.girsanov": f"{_A}.samplers.girsanov",
    f"{_A}.exact": f"{_A}.samplers.exact",
    f"{_A}.cyclic_sgld": f"{_A}.samplers.cyclic_sgld",
    f"{_A}.lmc": f"{_A}.samplers.lmc",
    f"{_A}.markov_grid": f"{_A}.samplers.markov_grid",
    f"{_A}.gibbs": f"{_A}.posterior.gibbs",
    f"{_A}.expfam": f"{_A}.posterior.expfam",
    f"{_A}.glm_posterior": f"{_A}.posterior.glm",
    f"{_A}.cyclic_sgld_proof": f"{_E}.sgld_interim.lemmas",
    f"{_A}.wasserstein": f"{_E}.sgld_interim.wasserstein",
    f"{_A}.mcmc_convergence": f"{_E}.girsanov.mcmc_convergence",
    f"{_A}.noisy_monte_carlo": f"{_E}.girsanov.noisy_monte_carlo_bounds",
    f"{_A}.gibbs_utility": f"{_E}.gibbs.utility",
    f"{_A}.contamination": f"{_E}.contamination.theory",
    f"{_E}.sgld_interim_mc": f"{_E}.sgld_interim.monte_carlo",
    f"{_E}.sgld_interim_proof": f"{_E}.sgld_interim.proof",
    f"{_E}.wasserstein_bound": f"{_E}.sgld_interim.wasserstein_bound",
    f"{_E}.girsanov_quadratic": f"{_E}.girsanov.quadratic",
    f"{_E}.girsanov_double_well": f"{_E}.girsanov.double_well",
    f"{_E}.mcmc_asymptotic": f"{_E}.girsanov.mcmc_asymptotic",
    f"{_E}.noisy_monte_carlo": f"{_E}.girsanov.noisy_monte_carlo",
    f"{_E}.gibbs_gaussian_mean": f"{_E}.gibbs.gaussian_mean",
    f"{_E}.gibbs_lmc": f"{_E}.gibbs.lmc",
    f"{_E}.contamination_mean": f"{_E}.contamination.mean",
    f"{_E}.contamination_logistic": f"{_E}.contamination.logistic",
    f"{_E}.contamination_linear": f"{_E}.contamination.linear",
    f"{_E}.contamination_cauchy": f"{_E}.contamination.cauchy",
    f"{_E}.contamination_mean_estimation": f"{_E}.contamination.mean_estimation",
    f"{_E}._contamination_regression": f"{_E}.contamination._regression",
    f"{_E}._contaminated_rwm": f"{_E}.contamination._rwm",
    f"{_E}._private_mean": f"{_E}.contamination._private_mean",
    f"{_E}.expfam_beta": f"{_E}.expfam.beta",
    f"{_E}.expfam_glm": f"{_E}.expfam.glm",
    "dpjax.mala": "dpjax.samplers.mala",
}

# old module path that is now a package -> the module that holds the old module's names
BECAME_PACKAGE = {
    f"{_A}.posterior": f"{_A}.posterior.gaussian",
    f"{_E}.sgld_interim": f"{_E}.sgld_interim.figure1",
}

# frames stepped over so that the warning points at the user's import: dpjax's own (the hook, a
# package's __getattr__) and importlib's. ``warnings`` itself skips importlib's frozen bootstrap
# frames when it counts ``stacklevel``, so those are not counted here.
_STEP_OVER = (os.path.dirname(os.path.abspath(__file__)) + os.sep, os.path.dirname(importlib.__file__) + os.sep)


def _bootstrap_frame(frame) -> bool:
    name = frame.f_code.co_filename
    return "importlib" in name and "_bootstrap" in name


def _warn(old: str, new: str) -> None:
    frame, level = sys._getframe(0), 1
    while True:
        frame = frame.f_back
        while frame is not None and _bootstrap_frame(frame):
            frame = frame.f_back
        level += 1
        if frame is None or not frame.f_code.co_filename.startswith(_STEP_OVER):
            break
    warnings.warn(f"{old} moved to {new}; the old path works for one release only: import {new}",
                  DeprecationWarning, stacklevel=level)


class _OldPathFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Resolves an old module path to the module at its new home (the same object)."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def __init__(self):
        self._own_specs = {}

    def create_module(self, spec):
        new = MOVED[spec.name]
        _warn(spec.name, new)
        module = importlib.import_module(new)
        self._own_specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module):
        # the import system stamped the old path's spec on the shared module: give it back its
        # own, so that its identity (pickling, reload, multiprocessing) stays the new path
        module.__spec__ = self._own_specs.pop(module.__name__, module.__spec__)


def install() -> None:
    """Put the old-path finder on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, _OldPathFinder) for f in sys.meta_path):
        sys.meta_path.append(_OldPathFinder())


def old_attribute(package: str, name: str):
    """For a package's ``__getattr__``: a submodule that used to live at ``package.name`` (imported
    through its old path, so it warns once), or an :class:`AttributeError`."""
    old = f"{package}.{name}"
    if old in MOVED:
        return importlib.import_module(old)
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def forward_attribute(package: str, name: str):
    """For the ``__getattr__`` of a package that replaced a module of the same path: a name of the
    old module, from where it lives now (with a warning), or an :class:`AttributeError`."""
    home = BECAME_PACKAGE[package]
    module = importlib.import_module(home)
    if name.startswith("__") or not hasattr(module, name):
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    _warn(f"{package}.{name}", f"{home}.{name}")
    return getattr(module, name)
