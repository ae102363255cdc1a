"""The report's last section, "Files and reproduction": each file of the run folder with its own description, and how
to rerun the study or rebuild the report.
"""

from __future__ import annotations

from collections.abc import Sequence

from headstats.report.blocks import Report


#: What each table an analysis writes holds, for "Files and reproduction" (one line per file).
TABLE_FILES = {
    "surface": "per head, mean attention to the previous, current and next piece, to [CLS], [SEP] and punctuation, "
               "and entropy (means over inputs)",
    "surface_tests": "one row per head and declared hypothesis (`role`): the one-sided test of the surface measure",
    "js_distance": "Jensen-Shannon divergence between every pair of heads (means over queries and inputs)",
    "mds": "per head, its MDS coordinates from the JS divergences and its dominant behaviour",
    "clustering_tests": "the permutation test that heads of one layer attend more alike than heads of different layers",
    "gallery": "per BertViz pattern, the head that shows it best and the input drawn",
    "attention_maps": "the attention weights drawn in the pictures (model, data set, input, layer, head, query, key)",
    "attention_tokens": "the pieces of every input drawn, with their positions and segments",
    "dependency_table": "Table 1 of Clark et al.: per relation the best head and the best offset, with the test",
    "dependency_heads": "accuracy of every head, direction and relation (the rows Table 1 chooses from)",
    "coreference": "antecedent selection: accuracy of every head per mention type, and of the baselines",
    "coreference_tests": "every head against each baseline (McNemar), corrected",
    "probes": "UAS of each probing classifier, with intervals and the tests against the baselines",
    "gradients": "mean |dL/dA| per head and kind of token attended to",
    "gradients_skipped": "the models and data sets gradient importance could not run on, with the reason",
    "distance": "per head, the mean distance attended over (pieces), against the uniform reference",
    "distance_tests": "one row per head: the one-sided test of the attended distance",
    "entropy": "per head, the mean row entropy of attention and its ratio to ln n",
    "similarity": "per head, the similarity of its attention before and after fine-tuning",
    "special_mass": "per layer, the mass on [CLS], [SEP] and punctuation before and after fine-tuning",
}


def files_section(report: Report, analysis_files: dict[str, str] | None = None, *,
                  formats: Sequence[str] | None = None) -> None:
    from headstats.plots.style import FORMATS

    others = [f.upper() for f in (FORMATS if formats is None else formats) if f != "png"]
    papers = f" and {', '.join(others)} (for papers)" if others else ""
    report.heading("Files and reproduction")
    report.text(
        "- `scores.parquet`: one row per input, layer, head and role (column `score`)\n"
        "- `tests.csv` / `tests.parquet`: one row per model, data set, role, layer and head\n"
        "- `roles.csv`: one row per head, a boolean column per role\n"
        + "".join(f"- `{name}.csv`: {what}\n" for name, what in (analysis_files or {}).items()) +
        f"- `figures/`: every figure as PNG (shown here){papers}\n"
        "- `manifest.json`: versions, model weight hashes, data hashes, seed, counts\n"
        "- `protocol.resolved.yaml`: rerun with `headstats run protocol.resolved.yaml`; rebuild this report from "
        "the tables with `headstats report RUN_DIR`"
    )
