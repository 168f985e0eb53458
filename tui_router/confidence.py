"""The confidence formulas: the one place where a distribution over options becomes a confidence.

Backends use `reference_confidence` for the confidence they report; the policy applies the
configured formula (`[policy] confidence`); calibrate, eval and the server profile call the same
functions. No imports beyond the standard library, so every layer may use it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .config import ConfidenceFormula


def reference_confidence(probabilities: dict[str, float]) -> float:
    """1 when all mass is on one option, 0 when the distribution over the n options is flat."""
    n = len(probabilities)
    if n < 2:
        return 1.0
    top = max(probabilities.values())
    return min(1.0, max(0.0, (top - 1.0 / n) / (1.0 - 1.0 / n)))


def confidence_of(
    probabilities: dict[str, float], formula: ConfidenceFormula, reported: float | None = None
) -> float | None:
    """Confidence from the distribution over the n offered options (None when it cannot be had)."""
    if formula == "reported":
        return reported if reported is not None and math.isfinite(reported) else None
    if not probabilities:
        return None
    values = sorted(probabilities.values(), reverse=True)
    n = len(values)
    top = values[0]
    if formula == "top":
        return top
    if formula == "margin":
        return top - (values[1] if n > 1 else 0.0)
    if n < 2:
        return 1.0
    if formula == "entropy":
        entropy = -sum(p * math.log(p) for p in values if p > 0)
        return max(0.0, 1.0 - entropy / math.log(n))
    return reference_confidence(probabilities)


def margin_of(probabilities: dict[str, float]) -> float:
    """Top probability minus the runner-up's (0 for an empty distribution)."""
    values = sorted(probabilities.values(), reverse=True) + [0.0, 0.0]
    return values[0] - values[1]
