"""When two values count as a tie: the one rule every solver and table shares."""

from __future__ import annotations

import numpy as np

#: Relative tolerance: values within TIE_TOLERANCE * max(1, |best|) of the best tie with it.
TIE_TOLERANCE = 1e-12


def tolerance(best: np.ndarray) -> np.ndarray:
    """Absolute tolerance under which two values count as a tie, relative to their size."""
    return TIE_TOLERANCE * np.maximum(1.0, np.abs(best))
