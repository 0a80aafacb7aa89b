"""Posterior sampling: the privacy of releasing one draw from a (tempered) posterior.

Gaussian posteriors, exactly, and paper 000's bound for Bayesian linear regression
(:mod:`.gaussian`); Gibbs posteriors exp(-beta sum loss) pi, by the exponential mechanism and
log-Sobolev arguments (:mod:`.gibbs`, paper 002); conjugate exponential families in Rényi DP
(:mod:`.expfam`, paper 004); and tempered or sharpened GLM posteriors with their calibration
(:mod:`.glm`, paper 004 §A.7). ``dpjax.accountants.posterior`` was one module before this
package: its names are re-exported here (the rest of it is forwarded, with a warning).
"""
from ... import _moved
from . import expfam, gaussian, gibbs, glm
from .expfam import expfam_renyi, glm_tempered_posterior_curve
from .gaussian import (
    PaperPosteriorExact,
    PosteriorEpsilon,
    bayesian_linear_regression_posterior,
    gaussian_posterior_curve,
    gaussian_posterior_epsilon,
    gaussian_posterior_rdp,
    sgld_paper_posterior_curve,
    sgld_paper_posterior_epsilon_bound,
    sgld_paper_posterior_exact,
    sgld_paper_posterior_pair,
    sgld_paper_posterior_rdp_bound,
    sgld_paper_posterior_threshold,
)
from .gibbs import exponential_mechanism_curve, lsi_profile_curve, lsi_zcdp_curve
from .glm import calibrate_glm, lemma1_rdp

__all__ = [
    "expfam",
    "gaussian",
    "gibbs",
    "glm",
    "PaperPosteriorExact",
    "PosteriorEpsilon",
    "bayesian_linear_regression_posterior",
    "gaussian_posterior_curve",
    "gaussian_posterior_epsilon",
    "gaussian_posterior_rdp",
    "sgld_paper_posterior_curve",
    "sgld_paper_posterior_epsilon_bound",
    "sgld_paper_posterior_exact",
    "sgld_paper_posterior_pair",
    "sgld_paper_posterior_rdp_bound",
    "sgld_paper_posterior_threshold",
    "exponential_mechanism_curve",
    "lsi_profile_curve",
    "lsi_zcdp_curve",
    "expfam_renyi",
    "glm_tempered_posterior_curve",
    "calibrate_glm",
    "lemma1_rdp",
]


def __getattr__(name: str):
    return _moved.forward_attribute(__name__, name)
