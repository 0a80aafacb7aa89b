"""Float64 arithmetic that says where it ends: products that overflow to +inf (a valid,
vacuous bound) instead of raising OverflowError or turning 0 * inf into NaN."""
from __future__ import annotations

import math


def product(*factors: float) -> float:
    """The product of non-negative factors, +inf when it exceeds float64.

    A zero factor gives 0 (as the closed forms do), never NaN from 0 * inf. Mantissas and
    exponents are multiplied separately, so an intermediate overflow (c^2 with c = 1e200,
    times gamma = 1e-200) does not turn a representable result into +inf; scaling by powers of
    two is exact, so the rounding is that of the plain left-to-right product.
    """
    if any(f == 0 for f in factors):
        return 0.0
    mantissa, exponent = 1.0, 0
    for f in factors:
        if math.isinf(f):
            return math.inf
        m, e = math.frexp(f)
        mantissa, extra = math.frexp(mantissa * m)
        exponent += e + extra
    try:
        return math.ldexp(mantissa, exponent)
    except OverflowError:
        return math.inf
