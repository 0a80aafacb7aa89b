"""Paper 000, "Can SGLD provide differential privacy for deep learning?": interim iterates of
cyclic SGLD leak although the posterior is private.

- :mod:`.figure1` — ``dpjax reproduce sgld-interim``: Figure 1 computed exactly, Theorem 1,
  Propose-Test-Sample.
- :mod:`.monte_carlo` — the sampling checks behind it (coupled chains against the exact law).
- :mod:`.lemmas` — the lower-bound chain of the proof (Lemmas 4.4–4.6, A.2–A.6) and Theorem 1's
  instance sizes; :mod:`.proof` — ``dpjax reproduce sgld-interim-proof``, their table.
- :mod:`.wasserstein` — §5's Theorem 2 and Claims 5.1, E.1–E.2 as functions;
  :mod:`.wasserstein_bound` — ``dpjax reproduce wasserstein-bound``.

``dpjax.experiments.sgld_interim`` was the Figure 1 module before it became this package; its
names are forwarded to :mod:`.figure1` with a warning.
"""
from ... import _moved


def __getattr__(name: str):
    return _moved.forward_attribute(__name__, name)
