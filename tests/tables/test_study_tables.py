"""The study's own tables, declared as the analyses' are."""

from headstats.tables import TABLES
from headstats.tables.study_tables import PAIRED_TESTS, ROLES, SCORES, SEED_CLAIMS, TESTS


def test_the_study_declares_its_files_in_the_formats_it_writes():
    assert SCORES.files == ("scores.parquet",)
    assert TESTS.files == ("tests.csv", "tests.parquet")
    assert ROLES.files == ("roles.csv",)
    assert PAIRED_TESTS.files == ("compare_paired_tests.csv", "compare_paired_tests.parquet")
    assert (SEED_CLAIMS.name, SEED_CLAIMS.key) == ("compare_seed_claims", "seed_claims")


def test_every_comparison_table_is_a_compare_file_and_unlisted():
    comparison = [spec for _, spec in TABLES.items() if spec.owner == "comparison"]
    assert len(comparison) == 16
    assert all(spec.name == f"compare_{spec.key}" and not spec.listed for spec in comparison)


def test_role_columns_are_the_columns_that_are_not_keys_or_summaries():
    import pandas as pd

    from headstats.tables.study_tables import role_columns

    roles = pd.DataFrame(columns=["model", "dataset", "measure", "layer", "head", "local", "syntactic:nsubj", "roles",
                                  "n_roles", "robust_across_measures"])
    assert role_columns(roles) == ["local", "syntactic:nsubj"]
