"""The comparison step of a study: for each ``compare:`` entry of a protocol, the paired per-head tests of
the change in scores (from the scores already computed), role transitions, and the per-head cosine
similarity and [CLS]/[SEP] mass, which the engine collects in the study's one pass over every model.

Sits between the study runner and the comparison layer (:mod:`headstats.assignment.changes`); refuses to compare
models whose tokenizers differ before any model is loaded.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from headstats.errors import HeadstatsError
from headstats.model.loading import resolve_model_path, tokenizer_fingerprint


def check_comparable(protocol, sources: dict[str, str]) -> None:
    """Refuse, before any scoring, to compare models whose tokenizers split text differently."""
    if not protocol.compare:
        return
    from transformers import AutoTokenizer

    fingerprints: dict[str, str] = {}

    def fingerprint(name: str) -> str:
        if name not in fingerprints:
            path, _ = resolve_model_path(sources[name])
            fingerprints[name] = tokenizer_fingerprint(AutoTokenizer.from_pretrained(path))
        return fingerprints[name]

    for spec in protocol.compare:
        for name in spec.finetuned:
            if fingerprint(name) != fingerprint(spec.base):
                raise HeadstatsError(
                    f"cannot compare {name!r} with {spec.base!r}: their tokenizers differ, so inputs are not "
                    "split into the same pieces; compare models fine-tuned from the same base"
                )


def comparison_jobs(protocol, datasets: Sequence[str]) -> list:
    """The engine jobs of a protocol's comparisons: the [CLS]/[SEP] mass of every compared model and the
    attention similarity of every (base, fine-tuned) pair, on each compared data set.

    They run in the same forward passes as the scores (:class:`headstats.engine.runner.Runner`): a
    comparison costs no pass of its own.
    """
    if not protocol.compare:
        return []
    from headstats.analyses.similarity import AttentionSimilarity
    from headstats.analyses.special_mass import SpecialMass
    from headstats.engine.runner import Job

    mass: dict[tuple[str, str], None] = {}
    pairs: dict[tuple[str, str, str], None] = {}
    for spec in protocol.compare:
        for dataset in spec.datasets or list(datasets):
            for name in (spec.base, *spec.finetuned):
                mass[(name, dataset)] = None
            for name in spec.finetuned:
                pairs[(spec.base, name, dataset)] = None
    jobs = [Job(SpecialMass, (model,), dataset, name="special_mass") for model, dataset in mass]
    jobs += [Job(AttentionSimilarity, (base, name), dataset, name="similarity") for base, name, dataset in pairs]
    return jobs


def run_comparisons(
    protocol,
    scores: pd.DataFrame | list,
    roles: pd.DataFrame,
    attention: Mapping[str, pd.DataFrame] | None = None,
) -> dict[str, pd.DataFrame]:
    """All comparison tables of a protocol, concatenated over its ``compare:`` entries.

    Parameters
    ----------
    protocol : Protocol
    scores : DataFrame or list of MeasureArray
        The scores of every model and data set (the long table is made only for the compared models).
    roles : DataFrame
        The role table (:func:`headstats.assignment.role_assignment.role_table`) of every model and data set.
    attention : mapping, optional
        ``similarity`` and ``special_mass`` tables of the engine's :func:`comparison_jobs`, concatenated.

    Returns
    -------
    dict
        Table name -> DataFrame (``paired_tests``, ``transitions``, ``role_changes``, ``heads_per_layer``,
        ``similarity``, ``special_mass``, ``special_mass_per_layer``, ``layer_summary``); empty when the
        protocol compares nothing.
    """
    if not protocol.compare:
        return {}
    from headstats.assignment.changes import run_comparison

    if not isinstance(scores, pd.DataFrame):
        from headstats.study.scoring import long_frame

        compared = {name for spec in protocol.compare for name in (spec.base, *spec.finetuned)}
        scores = long_frame([array for array in scores if array.model in compared])

    collected: dict[str, list[pd.DataFrame]] = {}
    for spec in protocol.compare:
        by_model = {name: scores[scores["model"] == name] for name in spec.finetuned}
        tables = run_comparison(
            scores[scores["model"] == spec.base], by_model, roles, spec=spec, alpha=protocol.statistics.alpha,
            attention=attention,
        )
        for key, table in tables.items():
            collected.setdefault(key, []).append(table)
    return {key: pd.concat(frames, ignore_index=True) for key, frames in collected.items()}
