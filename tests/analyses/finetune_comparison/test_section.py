"""The comparison's sections: the models headstats fine-tuned, with their recipe and held-out metrics; the generated
summary; a comparison has seeds as replicates only when it has per-seed changes."""

from __future__ import annotations

import pandas as pd

from headstats.analyses.finetune_comparison.section import finetuned_models_table, has_seeds
from headstats.analyses.finetune_comparison.tables import OWNER
from headstats.tables import RunTables


def test_finetuned_models_table_has_one_row_per_fine_tuned_model():
    recipe = {"base": "default", "task": "sst2", "epochs": 2, "learning_rate": 2e-5, "train_rows": 800, "seed": 3}
    models = pd.DataFrame({"model": ["default", "ft"], "provenance": [
        {"architecture": "BertModel"},  # not fine-tuned by headstats: no row
        {"finetune": {"recipe": recipe, "metrics": {"accuracy": 0.81, "n_eval": 200, "early_stop": True,
                                                    "curve": [0.5, 0.7]}}},
    ]})
    table = finetuned_models_table(models)
    # numbers and words kept; a flag and a list are not metrics of a table cell
    assert table.to_dict("records") == [dict(model="ft", base="default", task="sst2", epochs=2, learning_rate=2e-5,
                                             train_rows=800, seed=3, accuracy=0.81, n_eval=200)]
    assert finetuned_models_table(pd.DataFrame({"model": ["default"], "provenance": [{}]})).empty
    assert finetuned_models_table(None).empty


def test_comparison_summaries_count_changes_by_the_tested_estimate_and_name_roles_and_sep_mass(paired_up_up_down):
    import pandas as pd

    from headstats.analyses.finetune_comparison.finish.changes import layer_change_summary
    from headstats.analyses.finetune_comparison.section import comparison_summaries

    # three significant changes: two up, one down by their Hodges-Lehmann estimate (issue 8: not the median)
    paired = paired_up_up_down
    transitions = pd.DataFrame({"model_after": "a", "dataset": "d", "layer": [0, 1], "role": "delimiter",
                                "before": [3, 1], "after": [1, 0], "gained": [0, 0], "lost": [2, 1]})
    mass = pd.DataFrame({"model": ["b", "b", "a", "a"], "dataset": "d", "layer": [0, 1, 0, 1], "target": "sep",
                         "mass": [0.4, 0.6, 0.1, 0.3]})
    tables = RunTables({"paired_tests": paired, "layer_summary": layer_change_summary(paired),
                        "transitions": transitions, "special_mass_per_layer": mass}, owner=OWNER)  # by their keys
    [(title, text)] = comparison_summaries(tables)
    assert title == "a vs b on d"
    lines = text.splitlines()
    assert lines[0] == ("- 3 of 3 head x role tests show a significant change (wilcoxon, two-sided, holm over f, "
                        "alpha 0.05): 2 up, 1 down (Hodges-Lehmann pseudo-median and its interval); 3 of 3 heads "
                        "changed in at least one role.")
    assert "- Significant changes by role: local 3 (2 up)." in lines
    assert "- Role assignment before -> after (gained / lost): delimiter 4 -> 1 (+0 / -3)." in lines
    assert lines[-1] == "- Mean attention mass on [SEP]: 0.500 before, 0.200 after (mean over layers)."


def test_has_seeds_only_with_seed_changes():
    def of(**frames):
        return RunTables(frames, owner=OWNER)

    assert not has_seeds(None) and not has_seeds(of())
    assert not has_seeds(of(paired_tests=pd.DataFrame({"x": [1]})))
    assert not has_seeds(of(seed_changes=pd.DataFrame(columns=["group", "dataset"])))
    assert has_seeds(of(seed_changes=pd.DataFrame({"group": ["ft"], "dataset": ["d"]})))
