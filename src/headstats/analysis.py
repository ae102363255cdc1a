"""From the scores table to every table of a study: tests, role assignment and the paper's analyses.

This sits in the roles/comparison layer: it calls the statistics layer with the protocol's options and
returns tables; it computes nothing itself and draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from headstats.assign import colocation, heads_per_role_per_layer, role_table, strongest_heads


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


def participation(scores: pd.DataFrame) -> pd.DataFrame:
    """Inputs per (model, dataset, role): scored, and taking part (finite score)."""
    first_head = scores[(scores["layer"] == 0) & (scores["head"] == 0)]
    grouped = first_head.groupby(["model", "dataset", "role"], sort=False)["score"]
    out = grouped.agg(n_inputs="size", n_taking_part="count").reset_index()
    out["n_not_taking_part"] = out["n_inputs"] - out["n_taking_part"]
    return out


def statistics_kwargs(options, seed: int) -> dict:
    """Keyword arguments of :func:`headstats.stats.onesample.test_roles` from ``StatisticsOptions``."""
    return dict(
        tau=options.tau, alpha=options.alpha, test=options.test, correction=options.correction,
        family=tuple(options.family), confidence=options.confidence, seed=seed, min_n=options.min_n,
        n_resamples=options.n_resamples, power_target=options.power_target,
    )


def analyse(scores: pd.DataFrame, protocol) -> Analysis:
    """Run the protocol's tests on the scores and derive the role tables."""
    from headstats.stats.onesample import test_roles

    kwargs = statistics_kwargs(protocol.statistics, protocol.seed)
    tests = test_roles(scores, **kwargs)
    roles = role_table(tests)
    from headstats.stats.power import power_summary, underpowered

    power_target = protocol.statistics.power_target
    tables = {
        "heads_per_layer": heads_per_role_per_layer(roles),
        "power_summary": power_summary(tests, power_target=power_target),
        "underpowered": underpowered(tests, power_target=power_target),
        "colocation": colocation(roles),
        "strongest_heads": strongest_heads(tests, k=protocol.report.top_k),
        "participation": participation(scores),
    }
    if protocol.statistics.sensitivity:
        tables.update(sensitivity_tables(scores, kwargs))
    return Analysis(tests=tests, roles=roles, tables=tables)


def sensitivity_tables(scores: pd.DataFrame, kwargs: dict) -> dict[str, pd.DataFrame]:
    """How role counts move with tau and alpha, and which heads change between tests and corrections."""
    from headstats.stats.sensitivity import robustness, tau_sensitivity

    common = {k: kwargs[k] for k in ("family", "min_n", "seed")}
    return {
        "tau_sensitivity": tau_sensitivity(scores, test=kwargs["test"], correction=kwargs["correction"], **common),
        "robustness": robustness(scores, tau=kwargs["tau"], alpha=kwargs["alpha"], **common),
    }
