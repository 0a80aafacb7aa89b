"""Paper 003 §4.3, Figure 2a: eps_hat for Bayesian linear regression under Student-t(5)
contamination, d = 5 and 10, over n, with the decay-rate fit extrapolated to n = 1e7.

Records are (y, w): w = (1, w_2, ..., w_d) with w_j uniform on [-1, 1] (Remark 14), y =
theta*.w + N(0, 1); contamination replaces y with probability p_n = n^{-1/8} by theta*.w +
s t_5 (g = t_5 located at theta*.w with scale s); prior N(0, 10^2 I); delta_n = 1/(10 n);
eps_hat is the 99% quantile over K simulated datasets of Algorithm 1's per-dataset estimate.
The response is unbounded: the sup/inf over y run on a compactified variable (see
:mod:`dpjax.models.contamination_regression`). Without contamination d(x; theta) = exp(r delta
- delta^2/2) is unbounded in the residual r, so the uncontaminated eps is +inf: reported as
such, not estimated.

Not given by the paper, and so flags here: theta* (default (0.5, -1, 1, -0.5, 0.25), tiled
for d = 10, with a sensitivity run at 0.5 and 2 times it), g's scale s (the paper's
"dispersion lambda"; default s = 1, with a sensitivity run over s), the particles m, the n
grid and the optimiser.

Run: ``dpjax reproduce contamination-linear --out DIR [--quick]``.
"""
from __future__ import annotations

from ._regression import FIGURE_2

# the entry points the CLI reads from a reproduction, and ``python -m``'s: those of Figure 2's linear row
_ROW = FIGURE_2["linear"]
add_arguments, run, headline, main = _ROW.add_arguments, _ROW.run, _ROW.headline, _ROW.main

if __name__ == "__main__":
    raise SystemExit(main())
