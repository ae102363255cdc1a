"""From records to a long table of per-input sieve bias scores, one batch at a time.

Each batch's scores are computed right after its forward pass and its attention is dropped, so memory holds
only the scores (inputs x layers x heads x roles), never the attention maps of a run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from headstats.encoding import EncodingResult, encode_records
from headstats.extraction import iter_attention_batches
from headstats.inputs.records import Record
from headstats.models import LoadedModel
from headstats.roles import get_role
from headstats.scores import ScoreSettings, score_batch

SCORE_COLUMNS = ["model", "dataset", "sentence_id", "layer", "head", "role", "score"]


@dataclass
class ScoreRun:
    """Scores of one model on one data set, and what was used and left out.

    Attributes
    ----------
    scores : DataFrame
        Long format: ``model, dataset, sentence_id, layer, head, role, score`` (layers and heads 0-indexed;
        NaN where an input does not take part in a role, e.g. no arc of the relation).
    counts : dict
        ``n_records``, ``n_scored``, ``skipped`` (reason -> count), ``notes`` (reason -> count),
        ``roles_not_applicable`` (roles left out of this data set, with the reason),
        ``participation`` (role -> number of inputs with a finite score).
    """

    scores: pd.DataFrame
    counts: dict = field(default_factory=dict)


def scores_frame(
    values: np.ndarray, sentence_ids: Sequence[str], roles: Sequence[str], *, model: str, dataset: str
) -> pd.DataFrame:
    """Turn a (S, L, H, R) array into the long scores table (row order: sentence, layer, head, role)."""
    S, L, H, R = values.shape
    s_idx, l_idx, h_idx, r_idx = (a.ravel() for a in np.meshgrid(
        np.arange(S), np.arange(L), np.arange(H), np.arange(R), indexing="ij"
    ))
    return pd.DataFrame(
        {
            "model": model,
            "dataset": dataset,
            "sentence_id": np.asarray(sentence_ids, dtype=object)[s_idx],
            "layer": l_idx.astype(np.int16),
            "head": h_idx.astype(np.int16),
            "role": np.asarray(roles, dtype=object)[r_idx],
            "score": values.reshape(-1),
        },
        columns=SCORE_COLUMNS,
    )


def applicable_roles(roles: Sequence[str], records: Sequence[Record]) -> tuple[list[str], dict[str, str]]:
    """Drop pair-only roles (``block``) from a data set that has no pairs; say why."""
    has_pairs = any(r.is_pair for r in records)
    has_parses = any(r.words_a is not None for r in records)
    kept, dropped = [], {}
    for role in roles:
        spec = get_role(role)
        if spec.pairs_only and not has_pairs:
            dropped[role] = "the data set has no sentence pairs"
        elif spec.kind == "arc" and not has_parses:
            dropped[role] = "the data set has no dependency parses"
        else:
            kept.append(role)
    return kept, dropped


def score_encoded(
    loaded: LoadedModel,
    encoding: EncodingResult,
    *,
    roles: Sequence[str],
    settings: ScoreSettings,
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> np.ndarray:
    """Scores of encoded inputs as an (S, L, H, R) array in input order."""
    inputs = encoding.inputs
    position = {id(item): row for row, item in enumerate(inputs)}
    values = np.full((len(inputs), loaded.n_layers, loaded.n_heads, len(roles)), np.nan)
    for batch, attn in iter_attention_batches(loaded, inputs, batch_size=batch_size):
        rows = [position[id(item)] for item in batch.inputs]
        values[rows] = score_batch(attn, batch.inputs, roles, settings)
        if progress is not None:
            progress(len(rows))
    return values


def score_records(
    loaded: LoadedModel,
    records: Sequence[Record],
    *,
    dataset: str,
    roles: Sequence[str],
    settings: ScoreSettings = ScoreSettings(),
    max_length: int = 128,
    too_long: str = "skip",
    batch_size: int = 32,
    progress: Callable[[int], None] | None = None,
) -> ScoreRun:
    """Score every record with every role.

    Parameters
    ----------
    loaded : LoadedModel
    records : sequence of Record
        Parsed records where arc roles are wanted (see :func:`headstats.inputs.parsing.parse_records`).
    dataset : str
        The ``dataset`` column.
    roles : sequence of str
    settings : ScoreSettings
    max_length, too_long
        Inputs over ``max_length`` pieces (capped at what the model's position embeddings allow) are
        skipped or truncated, and counted.
    batch_size : int
        Padding and batch size do not change any score.
    progress : callable, optional
        Called with the number of inputs done after each batch.
    """
    kept, dropped = applicable_roles(roles, records)
    effective_max = min(max_length, loaded.max_input_length)
    encoding = encode_records(list(records), loaded.tokenizer, max_length=effective_max, too_long=too_long)
    if progress is not None and len(records) > len(encoding.inputs):
        progress(len(records) - len(encoding.inputs))  # skipped inputs are done too
    values = score_encoded(loaded, encoding, roles=kept, settings=settings, batch_size=batch_size, progress=progress)
    sentence_ids = [item.sentence_id for item in encoding.inputs]
    frame = scores_frame(values, sentence_ids, kept, model=loaded.name, dataset=dataset)
    participation = {role: int(np.isfinite(values[:, 0, 0, r]).sum()) for r, role in enumerate(kept)}
    counts = {
        "n_records": len(records),
        "n_scored": len(encoding.inputs),
        "skipped": dict(Counter(encoding.skipped)),
        "notes": dict(Counter(encoding.notes)),
        "roles_not_applicable": dropped,
        "max_length": effective_max,
        "participation": participation,
    }
    return ScoreRun(scores=frame, counts=counts)
