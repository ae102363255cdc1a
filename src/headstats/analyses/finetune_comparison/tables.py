"""The comparison's tables, declared once (:func:`headstats.tables.declare_tables`): each written as ``compare_<key>``
(``compare_paired_tests.csv``); its collectors and finish step give them by their key (``PAIRED_TESTS.key``), its
section and claims read them by these specs (``tables[PAIRED_TESTS]``), never by a string."""

from __future__ import annotations

from headstats.tables import TableSpec, declare_tables, study_tables

#: The analysis that owns them (its registered name).
OWNER = "finetune_comparison"


def _compare(key: str, description: str, **more) -> tuple[str, TableSpec]:
    return f"compare_{key}", TableSpec(description, key=key, listed=False, **more)


DECLARED = declare_tables(OWNER, dict([
    _compare("paired_tests", "per fine-tuned model, data set, role and head the paired test of the change of its "
             "scores", formats=("csv", "parquet")),
    _compare("transitions", "per role and layer the heads kept, gained and lost by fine-tuning"),
    _compare("role_changes", "per head its roles before and after fine-tuning, gained and lost"),
    _compare("heads_per_layer", "heads holding each role in each layer, before and after fine-tuning"),
    _compare("similarity", "per head the cosine similarity of its attention before and after fine-tuning"),
    _compare("special_mass", "per head the attention mass on [CLS], [SEP] and other tokens of each model"),
    _compare("special_mass_per_layer", "the attention mass on [CLS], [SEP] and other tokens per layer"),
    _compare("layer_summary", "per layer the share of heads that changed and the mean change"),
    _compare("seed_changes", "per head and role the change over fine-tuning seeds, tested against the variation "
             "between seeds"),
    _compare("seed_per_seed", "per seed, head and role the change of the mean score"),
    _compare("seed_metrics", "each seed's dev metrics, with their mean, sd, smallest and largest"),
    _compare("seed_distance", "per head the distance of each seed's attention from the base's and the other seeds'"),
    _compare("seed_layer_change", "per seed and layer the mean change of the scores"),
    _compare("seed_special_mass", "per layer the change of the attention mass on [SEP] and other tokens over seeds"),
    _compare("seed_transitions", "per role the heads gained and lost, over seeds"),
    _compare("seed_claims", "the evidence of Pande et al.'s claims over seeds (one row per claim and data set)"),
]))

(PAIRED_TESTS, TRANSITIONS, ROLE_CHANGES, HEADS_PER_LAYER, SIMILARITY, SPECIAL_MASS, SPECIAL_MASS_PER_LAYER,
 LAYER_SUMMARY, SEED_CHANGES, SEED_PER_SEED, SEED_METRICS, SEED_DISTANCE, SEED_LAYER_CHANGE, SEED_SPECIAL_MASS,
 SEED_TRANSITIONS, SEED_CLAIMS) = DECLARED.values()

#: The study's tables the finish step and the section read besides the comparison's own: the role table and the
#: long scores of the primary measure (every model), and the models' replicate groups, seeds and provenance.
READS = (study_tables.ROLES, study_tables.SCORES, study_tables.MODELS)
