"""The comparison step of a study: for each ``compare:`` entry of a protocol, the paired per-head tests of
the change in scores (from the scores already computed), role transitions, and one extra pass over both
models' attentions for the per-head cosine similarity and the [CLS]/[SEP] mass.

Sits between the study runner and the comparison layer (:mod:`headstats.compare`); refuses to compare
models whose tokenizers differ before any model is loaded.
"""

from __future__ import annotations

from typing import Callable

import pandas as pd

from headstats.errors import HeadstatsError
from headstats.models import resolve_model_path, tokenizer_fingerprint


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


def run_comparisons(
    protocol,
    scores: pd.DataFrame,
    roles: pd.DataFrame,
    sources: dict[str, str],
    data: dict,
    *,
    log: Callable[[str], None] = lambda m: None,
) -> dict[str, pd.DataFrame]:
    """All comparison tables of a protocol, concatenated over its ``compare:`` entries.

    Returns a dict of table name -> DataFrame (``paired_tests``, ``transitions``, ``role_changes``,
    ``heads_per_layer``, ``similarity``, ``special_mass``, ``special_mass_per_layer``, ``layer_summary``);
    empty when the protocol compares nothing.
    """
    if not protocol.compare:
        return {}
    from headstats.compare import attention_comparison, run_comparison
    from headstats.encoding import encode_records
    from headstats.models import load_model

    collected: dict[str, list[pd.DataFrame]] = {}
    loaded_cache: dict[str, object] = {}

    def loaded(name: str):
        if name not in loaded_cache:
            model = load_model(sources[name], device=protocol.device)
            model.name = name
            loaded_cache[name] = model
        return loaded_cache[name]

    for spec in protocol.compare:
        datasets = spec.datasets or list(data)
        attention: dict[str, list[pd.DataFrame]] = {"similarity": [], "special_mass": []}
        base = loaded(spec.base)
        for dataset in datasets:
            encoded = encode_records(
                data[dataset].records, base.tokenizer,
                max_length=min(protocol.scoring.max_length, base.max_input_length), too_long=protocol.scoring.too_long,
            )
            for name in spec.finetuned:
                log(f"comparing attention of {name} with {spec.base} on {dataset}")
                result = attention_comparison(base, loaded(name), encoded, batch_size=protocol.scoring.batch_size,
                                              dataset=dataset)
                for key in attention:
                    attention[key].append(result[key])
        by_model = {name: scores[scores["model"] == name] for name in spec.finetuned}
        tables = run_comparison(
            scores[scores["model"] == spec.base], by_model, roles, spec=spec, alpha=protocol.statistics.alpha,
            attention={k: pd.concat(v, ignore_index=True) for k, v in attention.items() if v},
        )
        for key, table in tables.items():
            collected.setdefault(key, []).append(table)
    return {key: pd.concat(frames, ignore_index=True) for key, frames in collected.items()}
