"""Paper 003, Hu, Aslett, Dai, Pollock, Roberts, "Privacy guarantees in posterior sampling under
contamination". Algorithm 1 itself is library code (:mod:`dpjax.estimators.contamination`,
with the contaminated models in :mod:`dpjax.models.contamination`); here are the paper's results.

- :mod:`.mean` — ``dpjax reproduce contamination-mean``: Table 1 (and the §4.3 logistic
  comparison).
- :mod:`.logistic`, :mod:`.linear`, :mod:`.cauchy` — ``dpjax reproduce contamination-logistic``,
  ``-linear``, ``-cauchy``: §4.3, Figure 2 (sharing the runner :mod:`._regression`).
- :mod:`.mean_estimation` — ``dpjax reproduce contamination-mean-estimation``: §4.2, Figure 1
  (with :mod:`._rwm`, random-walk Metropolis on the contaminated posterior, and
  :mod:`._private_mean`, the frequentist baselines).
- :mod:`.theory` — the closed forms: Theorem 4, Lemma 14, Theorem 5, the zCDP budgets.
"""
