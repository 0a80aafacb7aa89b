"""Paper 003 §4.3, Figure 2c: eps_hat for Bayesian Cauchy regression with and without a
wider Cauchy contamination, d = 5 and 10, over n, with the decay-rate fit extrapolated to
n = 1e7.

Records are (y, w): w = (1, w_2, ..., w_d) with w_j uniform on [-1, 1] (Remark 14), y =
theta*.w + a standard Cauchy error; contamination replaces y with probability p_n = n^{-1/8}
by a Cauchy(0, lambda) draw (g centred at 0, as printed); prior N(0, 10^2 I); delta_n =
1/(10 n); eps_hat is the 99% quantile over K simulated datasets of Algorithm 1's estimate.
d(x; theta) is bounded with and without contamination (both tails ~ 1/y^2); the response is
unbounded and searched on a compactified variable (see
:mod:`dpjax.models.contamination_regression`). The paper's claim checked here: without
contamination eps_hat is the *lower* one (Figure 2c).

Not given by the paper, and so flags here: theta* (default (0.5, -1, 1, -0.5, 0.25), tiled
for d = 10, with a sensitivity run at 0.5 and 2 times it), g's scale lambda (default 10, with
a sensitivity run over lambda), the particles m, the n grid and the optimiser.

Run: ``dpjax reproduce contamination-cauchy --out DIR [--quick]``.
"""
from __future__ import annotations

from ._regression import FIGURE_2

# the entry points the CLI reads from a reproduction, and ``python -m``'s: those of Figure 2's cauchy row
_ROW = FIGURE_2["cauchy"]
add_arguments, run, headline, main = _ROW.add_arguments, _ROW.run, _ROW.headline, _ROW.main

if __name__ == "__main__":
    raise SystemExit(main())
