"""Paper 001, Bertazzi, Johnston, Roberts, Durmus, "DP guarantees of MCMC algorithms".

- :mod:`.quadratic` — ``dpjax reproduce girsanov-quadratic``: the Girsanov bounds (in
  :mod:`dpjax.accountants.samplers.girsanov`) against the exact closed-form case.
- :mod:`.double_well` — ``dpjax reproduce girsanov-double-well``: Theorem 5.2 on a non-convex
  potential.
- :mod:`.mcmc_convergence` — §3.1: from convergence to privacy and back (Propositions 3.2, 3.4,
  A.2, A.3, Corollary 3.3); :mod:`.mcmc_asymptotic` — ``dpjax reproduce mcmc-asymptotic``.
- :mod:`.noisy_monte_carlo_bounds` — §3.2: the noisy Monte Carlo estimator (Propositions 3.7,
  3.10, A.5) and its exact law; :mod:`.noisy_monte_carlo` — ``dpjax reproduce noisy-monte-carlo``.
"""
