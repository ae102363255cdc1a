"""The comparison's tables: each a ``compare_<key>`` file, unlisted among the study's, known by its key."""

from headstats.analyses.finetune_comparison.tables import DECLARED, OWNER, PAIRED_TESTS, SEED_CLAIMS
from headstats.tables import TABLES as REGISTRY


def test_a_comparison_table_is_a_file_with_the_comparisons_own_name():
    spec = REGISTRY.get("compare_paired_tests")
    assert spec == PAIRED_TESTS
    assert (spec.owner, spec.key, spec.files) == (OWNER, "paired_tests",
                                                  ("compare_paired_tests.csv", "compare_paired_tests.parquet"))
    assert (SEED_CLAIMS.name, SEED_CLAIMS.key, SEED_CLAIMS.files) == ("compare_seed_claims", "seed_claims",
                                                                      ("compare_seed_claims.csv",))


def test_every_comparison_table_is_a_compare_file_and_unlisted():
    assert len(DECLARED) == 16
    assert all(spec.name == f"compare_{spec.key}" and not spec.listed and spec.owner == OWNER
               for spec in DECLARED.values())
