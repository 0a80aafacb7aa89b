"""Paper reproductions, behind ``dpjax reproduce NAME``: one package per paper.

Each package holds its paper's reproductions (one module per ``dpjax reproduce`` result, with
``add_arguments(parser)`` and ``run(args) -> (results, figure)``) and the checks of that paper's
lemmas and closed forms that only its results use:

- :mod:`.sgld_interim` — paper 000, "Can SGLD provide differential privacy for deep learning?"
- :mod:`.girsanov` — paper 001, Bertazzi, Johnston, Roberts, Durmus, "DP guarantees of MCMC algorithms"
- :mod:`.gibbs` — paper 002, Minami, Arai, Sato, Nakagawa, "Differential privacy without sensitivity"
- :mod:`.contamination` — paper 003, Hu, Aslett, Dai, Pollock, Roberts, "Privacy guarantees in
  posterior sampling under contamination"
- :mod:`.expfam` — paper 004, Geumlek, Song, Chaudhuri, "Rényi DP mechanisms for posterior sampling"

:mod:`.breast_cancer_audit` (a privacy audit on real data) and :mod:`._report` (what a
reproduction prints) are shared. The library (``dpjax`` outside this package) imports nothing
from here (tests/test_import_graph.py).
"""
