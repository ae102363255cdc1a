"""The seeds sections: a comparison has seeds as replicates only when it has per-seed changes."""

from __future__ import annotations

import pandas as pd

from headstats.report.sections.seeds_section import has_seeds


def test_has_seeds_only_with_seed_changes():
    assert not has_seeds(None) and not has_seeds({})
    assert not has_seeds({"paired_tests": pd.DataFrame({"x": [1]})})
    assert not has_seeds({"seed_changes": pd.DataFrame(columns=["group", "dataset"])})
    assert has_seeds({"seed_changes": pd.DataFrame({"group": ["ft"], "dataset": ["d"]})})
