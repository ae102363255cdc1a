"""The study's own tables, declared as each analysis declares its own: the scores, the tests and roles of Pande et
al.'s roles with the tables made from them, the claims, and the comparison's and the seeds' tables
(``compare_<name>``). Claims name them by these specs (``tables=(ROLES,)``), never by a string."""

from __future__ import annotations

from headstats.tables.declared import COMPARISON, STUDY, TableSpec, declare_tables

_KEYS = ("model", "dataset", "layer", "head")
#: The keys of a row of the role table (``roles``): one head of a model on a data set.
HEAD_KEYS = list(_KEYS)

_STUDY = declare_tables(STUDY, {
    "scores": TableSpec("one row per input, layer, head and role (column `score`)", formats=("parquet",)),
    "tests": TableSpec("one row per model, data set, role, layer and head; on the syntactic roles' rows the "
                       "offset-matched control's test too (`offset_excess`, `offset_ci_low`/`offset_ci_high`, "
                       "`offset_p_unc`/`offset_p_corr`, `offset_reject`, `gate_removed`; NaN on the other roles' rows "
                       "and where the control was not computed)", formats=("csv", "parquet"),
                       columns=(*_KEYS[:2], "role", *_KEYS[2:])),
    "roles": TableSpec("one row per head, a boolean column per role", columns=_KEYS),
    "claims": TableSpec("one row per claim and (model, data set): hypothesis, test, estimate and interval, p before "
                        "and after correction over the run's claims, the design's floor, verdict and reason",
                        columns=("claim", "model", "dataset", "verdict")),
    "heads_per_layer": TableSpec("heads holding each role in each layer"),
    "colocation": TableSpec("heads per exact combination of roles and per pair of roles"),
    "strongest_heads": TableSpec("the heads with the largest mean score minus tau, per role"),
    "ceilings": TableSpec("per role and data set the mean, smallest and largest ceiling and whether tau is reachable"),
    "tau_sensitivity": TableSpec("heads assigned each role at other tau and alpha"),
    "robustness": TableSpec("heads whose assignment changes with the test or the correction"),
    "participation": TableSpec("inputs taking part in each role's test (an input with no key in the sieve takes "
                               "none)"),
    "power_summary": TableSpec("per role the heads not assigned whose test could not have seen the effect of "
                               "interest, and the median minimum detectable effect"),
    "underpowered": TableSpec("those heads, one row each, with their power and the inputs they would need"),
    "measure_agreement": TableSpec("with several attention measures: per head and role, whether it holds the role "
                                   "under each measure and under all (robust_across_measures)"),
    "controls": TableSpec("the controls of each model, for the claims (not written)", formats=(),
                          columns=("model", "control"), listed=False),
})


def _compare(key: str, description: str, **more) -> tuple[str, TableSpec]:
    return f"compare_{key}", TableSpec(description, key=key, listed=False, **more)


_COMPARISON = declare_tables(COMPARISON, dict([
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

SCORES, TESTS, ROLES, CLAIMS = (_STUDY[n] for n in ("scores", "tests", "roles", "claims"))
CONTROLS, MEASURE_AGREEMENT = _STUDY["controls"], _STUDY["measure_agreement"]
PAIRED_TESTS, SEED_CLAIMS = _COMPARISON["compare_paired_tests"], _COMPARISON["compare_seed_claims"]


def role_columns(roles) -> list[str]:
    """The boolean role columns of a role table."""
    return [c for c in roles.columns if c not in (*HEAD_KEYS, *NOT_ROLES)]


#: The columns of a role table that are not roles: the attention measure, the roles held, and whether they hold
#: under every measure.
NOT_ROLES = ("measure", "roles", "n_roles", "robust_across_measures")
