"""Chi-square goodness of fit for the sampling tests (scipy-free)."""

import math

import numpy as np

# Each chi-square test fails by chance with probability ALPHA (fixed seeds make it
# deterministic; the rate says how unlucky a seed would have to be).
ALPHA = 1e-3


def chi_square_p_value(statistic: float, df: int) -> float:
    """Upper tail of chi-square via the Wilson-Hilferty cube-root normal approximation."""
    z = ((statistic / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    """p-value of observed counts against probabilities.

    The two smallest expected bins are merged until every bin expects >= 5 (the
    approximation's condition) or two bins are left.
    """
    expected = np.asarray(probs, dtype=float) * counts.sum()
    order = np.argsort(expected)
    obs, exp = np.asarray(counts, dtype=float)[order], expected[order]
    while exp[0] < 5 and len(exp) > 2:
        obs = np.concatenate([[obs[0] + obs[1]], obs[2:]])
        exp = np.concatenate([[exp[0] + exp[1]], exp[2:]])
        order = np.argsort(exp)
        obs, exp = obs[order], exp[order]
    statistic = float(((obs - exp) ** 2 / exp).sum())
    return chi_square_p_value(statistic, len(exp) - 1)
