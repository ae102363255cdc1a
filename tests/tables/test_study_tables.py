"""The study's own tables, declared as the analyses' are, and the models table it hands an analysis that reads it."""

from types import SimpleNamespace

from headstats.tables.study_tables import MODELS, ROLES, SCORES, TESTS, models_table


def test_the_study_declares_its_files_in_the_formats_it_writes():
    assert SCORES.files == ("scores.parquet",)
    assert TESTS.files == ("tests.csv", "tests.parquet")
    assert ROLES.files == ("roles.csv",)
    assert MODELS.files == () and not MODELS.listed  # handed to analyses, never written


def test_the_models_table_has_each_models_group_seed_and_provenance_as_objects():
    base = SimpleNamespace(name="base", replicate_of=None, finetune=None)
    seeds = [SimpleNamespace(name=f"ft@seed{s}", replicate_of="ft", finetune=SimpleNamespace(seed=s)) for s in (0, 1)]
    table = models_table([base, *seeds], {"ft@seed1": {"finetune": {"metrics": {"accuracy": 0.8}}}})
    assert list(table.columns) == list(MODELS.columns)
    assert table.to_dict("records") == [
        {"model": "base", "replicate_of": None, "finetune_seed": None, "provenance": {}},
        {"model": "ft@seed0", "replicate_of": "ft", "finetune_seed": 0, "provenance": {}},
        {"model": "ft@seed1", "replicate_of": "ft", "finetune_seed": 1,
         "provenance": {"finetune": {"metrics": {"accuracy": 0.8}}}}]


def test_role_columns_are_the_columns_that_are_not_keys_or_summaries():
    import pandas as pd

    from headstats.tables.study_tables import role_columns

    roles = pd.DataFrame(columns=["model", "dataset", "measure", "layer", "head", "local", "syntactic:nsubj", "roles",
                                  "n_roles", "robust_across_measures"])
    assert role_columns(roles) == ["local", "syntactic:nsubj"]
