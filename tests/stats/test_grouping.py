"""The grouping permutation test: hand-computed within/between means, exact p against full enumeration."""

from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.stats.grouping import group_permutation_test


def test_within_between_by_hand_and_p_against_enumeration():
    # two groups of two on a line: {0, 0.1} and {1, 1.2}
    x = np.array([0.0, 0.1, 1.0, 1.2])
    d = np.abs(x[:, None] - x[None, :])
    res = group_permutation_test(d, [0, 0, 1, 1], n_permutations=20000, seed=1)
    assert res.within_mean == pytest.approx((0.1 + 0.2) / 2)
    assert res.between_mean == pytest.approx((1.0 + 1.2 + 0.9 + 1.1) / 4)
    assert res.statistic == pytest.approx(res.between_mean - res.within_mean)
    # every one of the 24 orderings of the labels: 8 of them give the observed partition {0,1},{2,3} (the
    # largest statistic), so the exact permutation p is 1/3; the sampled p must be near it
    labels = np.array([0, 0, 1, 1])
    stats_all = []
    for perm in permutations(range(4)):
        g = labels[list(perm)]
        same = g[:, None] == g[None, :]
        iu = np.triu_indices(4, 1)
        s = same[iu]
        stats_all.append(d[iu][~s].mean() - d[iu][s].mean())
    exact = np.mean(np.array(stats_all) >= res.statistic - 1e-12)
    assert exact == pytest.approx(1 / 3)
    assert res.p_value == pytest.approx(exact, abs=0.01)
    assert res.n_items == 4 and res.n_groups == 2 and res.ratio == pytest.approx(res.within_mean / res.between_mean)


def test_no_structure_gives_a_large_p_and_seeded():
    rng = np.random.default_rng(0)
    pts = rng.standard_normal((24, 2))
    d = np.linalg.norm(pts[:, None] - pts[None, :], axis=-1)
    groups = np.repeat(np.arange(4), 6)
    a = group_permutation_test(d, groups, n_permutations=999, seed=3)
    b = group_permutation_test(d, groups, n_permutations=999, seed=3)
    assert a == b and a.p_value > 0.05


def test_bad_input():
    with pytest.raises(HeadstatsError, match="square"):
        group_permutation_test(np.zeros((3, 2)), [0, 1, 2])
    with pytest.raises(HeadstatsError, match="NaN"):
        group_permutation_test(np.full((3, 3), np.nan), [0, 0, 1])
    with pytest.raises(HeadstatsError, match="same group"):
        group_permutation_test(np.zeros((3, 3)), [0, 1, 2])


