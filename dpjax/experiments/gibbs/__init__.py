"""Paper 002, Minami, Arai, Sato, Nakagawa, "Differential privacy without sensitivity" (NeurIPS
2016): Gibbs posteriors (the accountants are :mod:`dpjax.accountants.posterior.gibbs`).

- :mod:`.gaussian_mean` — ``dpjax reproduce gibbs-gaussian-mean``: the printed thresholds
  (App. B, Example 17) against exact values.
- :mod:`.lmc` — ``dpjax reproduce gibbs-lmc``: App. D.2, the Gibbs posterior sampled
  approximately by Langevin Monte Carlo.
- :mod:`.utility` — App. C's utility results: Theorem 16's Gaussian limit, the PAC-Bayes bounds,
  Example 19's temperature.
"""
