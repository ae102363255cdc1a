"""The study's own tables, declared as each analysis declares its own: the scores, the tests and roles of Pande et
al.'s roles with the tables made from them, the claims, and what the study hands an analysis' finish step and
section (:attr:`headstats.analyses.AnalysisSpec.reads`). Claims name them by these specs (``tables=(ROLES,)``), never by a string.

Beside them, the views of the role tables that the study and the report read without naming the roles'
analysis: :class:`Analysis` (the tests, roles and role tables, per attention measure), :func:`strongest_heads`
(recomputed by the report for another ``top_k``) and :func:`gate_summary`."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from headstats.tables.declared import STUDY, TableSpec, declare_tables

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
    "models": TableSpec("per model its replicate group (`replicate_of`), its fine-tuning seed (`finetune_seed`) and "
                        "its provenance (`provenance`, a mapping: the fine-tuning recipe and dev metrics where "
                        "headstats fine-tuned it), for an analysis that reads them (not written)", formats=(),
                        columns=("model", "replicate_of", "finetune_seed", "provenance"), listed=False),
})


SCORES, TESTS, ROLES, CLAIMS = (_STUDY[n] for n in ("scores", "tests", "roles", "claims"))
CONTROLS, MEASURE_AGREEMENT, MODELS = _STUDY["controls"], _STUDY["measure_agreement"], _STUDY["models"]


def role_columns(roles) -> list[str]:
    """The boolean role columns of a role table."""
    return [c for c in roles.columns if c not in (*HEAD_KEYS, *NOT_ROLES)]


#: The columns of a role table that are not roles: the attention measure, the roles held, and whether they hold
#: under every measure.
NOT_ROLES = ("measure", "roles", "n_roles", "robust_across_measures")


def heads_per_role_per_layer(roles) -> pd.DataFrame:
    """Count of heads holding each role in each layer: ``model, dataset, layer, role, n_heads, share``.

    Roles not tested on a data set (NA in the role table) are left out of that data set's rows.
    """
    cols = role_columns(roles)
    long = roles.melt(id_vars=HEAD_KEYS, value_vars=cols, var_name="role", value_name="held").dropna(subset=["held"])
    grouped = long.groupby(["model", "dataset", "layer", "role"], sort=False)["held"]
    out = grouped.agg(n_heads="sum", n_total="size").reset_index()
    out["n_heads"] = out["n_heads"].astype(int)
    out["share"] = out["n_heads"] / out["n_total"]
    return out


def models_table(models: Iterable[Any], provenance: Mapping[str, Any]) -> pd.DataFrame:
    """The study's :data:`MODELS` table: per model of ``models`` (the protocol's model specs: ``name``,
    ``replicate_of``, ``finetune`` with its ``seed``) its replicate group, its fine-tuning seed and its ``provenance``
    (name -> provenance mapping: the run's manifest ``models``), as Python objects (None where absent)."""
    rows = [{"model": m.name, "replicate_of": m.replicate_of,
             "finetune_seed": None if m.finetune is None else m.finetune.seed,
             "provenance": provenance.get(m.name) or {}} for m in models]
    return pd.DataFrame(rows, columns=list(MODELS.columns), dtype=object)


# ------------------------------------------------------------------ views of the role tables

@dataclass
class Analysis:
    """Tables of a study.

    Attributes
    ----------
    tests : DataFrame
        One row per (model, dataset, role, layer, head): see ``docs/statistics.md``.
    roles : DataFrame
        One row per (model, dataset, layer, head): a boolean column per role and ``roles``.
    tables : dict of str -> DataFrame
        ``heads_per_layer``, ``colocation``, ``strongest_heads``, ``participation`` and, when asked,
        ``tau_sensitivity`` and ``robustness``; comparison tables are added by the study.
    """

    tests: pd.DataFrame
    roles: pd.DataFrame
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @classmethod
    def of_run(cls, tables) -> "Analysis":
        """The tests, roles and the study's other tables of a run's :class:`~headstats.tables.RunTables`, every
        attention measure's rows (:meth:`on_measure` keeps one)."""
        return cls(tests=tables["tests"], roles=tables["roles"],
                   tables={name: frame for name, frame in tables.of(STUDY).items() if name not in ("tests", "roles")})

    @property
    def measures(self) -> list[str]:
        """The attention measures of the run, the primary first (``["weights"]`` for tables without the column)."""
        from headstats.measures import attention_measures

        return attention_measures(self.tests)

    def on_measure(self, measure: str | None = None) -> "Analysis":
        """The tables of one attention measure (default: the primary), what the report's role sections, the
        comparisons and Pande et al.'s claims read; the other tables (claims, analyses') are kept as they are."""
        from headstats.measures import on_measure

        measure = measure or self.measures[0]
        tables = {name: on_measure(t, measure).reset_index(drop=True)
                  if name in PER_MEASURE_TABLES and "measure" in t.columns else t for name, t in self.tables.items()}
        return Analysis(on_measure(self.tests, measure).reset_index(drop=True),
                        on_measure(self.roles, measure).reset_index(drop=True), tables)



#: The tables of :func:`analyse` that hold one set of rows per attention measure (a ``measure`` column).
PER_MEASURE_TABLES = ("tests", "roles", "heads_per_layer", "power_summary", "underpowered", "colocation",
                      "strongest_heads", "participation", "ceilings", "tau_sensitivity", "robustness")


def strongest_heads(tests: pd.DataFrame, *, k: int = 10) -> pd.DataFrame:
    """The k heads with the largest effect in score units per (model, dataset, role), with their test results.

    Ranked by ``mean_minus_tau`` (mean score - tau, in the score's unit), shown with ``ceiling_share`` (mean /
    the mean ceiling of the head's inputs: the share of what a perfect head would score) when ``tests`` has it.
    Not by Cohen's d: a head whose scores barely vary gets a huge |d| for a tiny difference (issue 20: sd
    1.7e-5 gave d = -58,038), and d is NaN below the sd floor.
    """
    ranked = tests.dropna(subset=["mean"]).assign(mean_minus_tau=lambda t: t["mean"] - t["tau"])
    ranked = ranked.sort_values("mean_minus_tau", ascending=False, kind="stable")
    measure = ["measure"] if "measure" in ranked else []  # several attention measures: the top k of each
    cols = ["model", "dataset", *measure, "role", "layer", "head", "n", "mean", "tau", "mean_minus_tau",
            *(["ceiling_share"] if "ceiling_share" in ranked else []), "ci_low", "p_corr", "reject"]
    return ranked.groupby(["model", "dataset", *measure, "role"], sort=False).head(k)[cols].reset_index(drop=True)


def gate_summary(tests: pd.DataFrame) -> pd.DataFrame:
    """Per (model, data set[, measure], role) of the gated roles: ``n_passed_tau`` (heads whose score test
    rejected), ``n_removed`` (taken away by the gate) and ``n_assigned`` (kept); empty when the gate removed
    nothing because it did not apply."""
    gated = tests[tests["gate_removed"].notna()] if "gate_removed" in tests else tests.iloc[:0]
    keys = [c for c in ("model", "dataset", "measure", "role") if c in tests.columns]
    if gated.empty:
        return pd.DataFrame(columns=[*keys, "n_passed_tau", "n_removed", "n_assigned"])
    removed = gated["gate_removed"].astype(bool)
    assigned = gated["reject"].fillna(False).astype(bool)
    frame = gated[keys].assign(n_removed=removed.astype(int), n_assigned=assigned.astype(int),
                               n_passed_tau=(removed | assigned).astype(int))
    out = frame.groupby(keys, sort=False)[["n_passed_tau", "n_removed", "n_assigned"]].sum().reset_index()
    return out
