"""Paper 004, Geumlek, Song, Chaudhuri, "Rényi DP mechanisms for posterior sampling" (NeurIPS
2017); the accountants are :mod:`dpjax.accountants.posterior.expfam` and
:mod:`dpjax.accountants.posterior.glm`.

- :mod:`.beta` — ``dpjax reproduce expfam-beta``: the Beta–Bernoulli experiments (§A.5,
  Figures 1–2).
- :mod:`.glm` — ``dpjax reproduce expfam-glm``: §A.8, Figures 3–4, Bayesian logistic regression
  by diffuse, concentrated and OPS posteriors on scikit-learn data sets.
"""
