"""The comparison section: the models headstats fine-tuned, with their recipe and held-out metrics."""

from __future__ import annotations

from headstats.report.sections.comparison_section import finetuned_models_table


def test_finetuned_models_table_has_one_row_per_fine_tuned_model():
    recipe = {"base": "default", "task": "sst2", "epochs": 2, "learning_rate": 2e-5, "train_rows": 800, "seed": 3}
    manifest = {"models": {
        "default": {"architecture": "BertModel"},  # not fine-tuned by headstats: no row
        "ft": {"finetune": {"recipe": recipe, "metrics": {"accuracy": 0.81, "n_eval": 200, "early_stop": True,
                                                          "curve": [0.5, 0.7]}}},
    }}
    table = finetuned_models_table(manifest)
    # numbers and words kept; a flag and a list are not metrics of a table cell
    assert table.to_dict("records") == [dict(model="ft", base="default", task="sst2", epochs=2, learning_rate=2e-5,
                                             train_rows=800, seed=3, accuracy=0.81, n_eval=200)]
    assert finetuned_models_table({"models": {"default": {}}}).empty
