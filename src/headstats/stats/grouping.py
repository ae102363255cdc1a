r"""Do items of one group sit closer together than items of different groups? A permutation test on a distance
matrix (used for "heads of the same layer cluster together", Clark et al. 2019, section 6).

For a symmetric distance matrix D over K items with group labels g, let W be the mean of ``D[a, b]`` over the
pairs a < b of the same group and B the mean over pairs of different groups. The statistic is ``B - W``
(larger when groups are tight); under H0 (labels exchangeable: the grouping says nothing about distance) its
distribution is that of ``B - W`` with the labels permuted. One-sided p-value, counting the observed labelling
as one permutation (Phipson and Smyth 2010):

    p = (1 + #{r : T_r >= T_obs}) / (R + 1),

with R seeded random permutations. This is the Mantel test of D against the "different group" indicator
matrix (Mantel 1967), whose statistic ``sum D * [g_a != g_b]`` is a monotone function of ``B - W`` when the
group sizes are fixed. The effect size reported beside it is ``W / B`` (below 1: groups tighter than chance).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from headstats.errors import HeadstatsError


@dataclass(frozen=True)
class GroupTestResult:
    """One permutation test of grouping.

    Attributes
    ----------
    within_mean, between_mean : float
        W and B of the module docstring.
    statistic : float
        ``B - W``.
    ratio : float
        ``W / B``.
    p_value : float
        One-sided permutation p-value (H1: same-group pairs are closer).
    n_permutations : int
    seed : int
    n_items, n_groups : int
    """

    within_mean: float
    between_mean: float
    statistic: float
    ratio: float
    p_value: float
    n_permutations: int
    seed: int
    n_items: int
    n_groups: int

    def to_dict(self) -> dict:
        return asdict(self)


def _within_between(distance: np.ndarray, labels: np.ndarray, upper: tuple[np.ndarray, np.ndarray]
                    ) -> tuple[np.ndarray, np.ndarray]:
    """W and B for each row of ``labels`` ((R, K) label vectors)."""
    i, j = upper
    d = distance[i, j]
    same = labels[:, i] == labels[:, j]  # (R, pairs)
    n_same = same.sum(1)
    within = (same * d).sum(1) / np.maximum(n_same, 1)
    between = ((~same) * d).sum(1) / np.maximum(same.shape[1] - n_same, 1)
    return within, between


def group_permutation_test(distance: np.ndarray, groups, *, n_permutations: int = 9999, seed: int = 0,
                           block: int = 1000) -> GroupTestResult:
    """Test whether items of one group are closer to each other than to the others (see the module docstring).

    Parameters
    ----------
    distance : array (K, K)
        Symmetric distances (only the upper triangle is read).
    groups : sequence of K labels
    n_permutations : int
        R, drawn in blocks of ``block`` with ``numpy.random.default_rng(seed)``.
    seed : int

    Raises
    ------
    HeadstatsError
        When the matrix is not square, holds NaN, or the labels give no pair of the same group or none of
        different groups.
    """
    d = np.asarray(distance, dtype=float)
    g = np.asarray(groups)
    if d.ndim != 2 or d.shape[0] != d.shape[1] or d.shape[0] != g.size:
        raise HeadstatsError(f"distance must be square with one label per row; got {d.shape} and {g.size} labels")
    if not np.isfinite(d).all():
        raise HeadstatsError("the distance matrix holds NaN or inf; compute it on at least one input")
    _, codes = np.unique(g, return_inverse=True)
    upper = np.triu_indices(d.shape[0], k=1)
    same = codes[upper[0]] == codes[upper[1]]
    if same.all() or not same.any():
        raise HeadstatsError("the groups give no pair of items in the same group, or none in different groups; "
                             "a grouping test needs both")
    w, b = _within_between(d, codes[None, :], upper)
    observed = float(b[0] - w[0])
    rng = np.random.default_rng(seed)
    exceed = 0
    done = 0
    while done < n_permutations:
        r = min(block, n_permutations - done)
        perms = np.stack([rng.permutation(codes) for _ in range(r)])
        pw, pb = _within_between(d, perms, upper)
        exceed += int(((pb - pw) >= observed - 1e-12 * abs(observed)).sum())
        done += r
    p = (1 + exceed) / (n_permutations + 1)
    return GroupTestResult(float(w[0]), float(b[0]), observed, float(w[0] / b[0]) if b[0] else float("nan"), p,
                           int(n_permutations), int(seed), int(d.shape[0]), int(codes.max() + 1))


