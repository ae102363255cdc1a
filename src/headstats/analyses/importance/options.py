"""Options of the ``importance`` analysis (``analysis_options: {importance: {...}}``), without torch: the statistics
layer's finish step reads them too (:func:`headstats.analyses.importance.finish.finish_importance`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


#: The kinds of ablation: a head's output replaced by its mean over the data set, or by zeros.
ABLATIONS = ("mean", "zero")


class ImportanceOptions(BaseModel):
    """How heads are ablated, gated and pruned (see :mod:`headstats.analyses.importance.collect`).

    Attributes
    ----------
    ablation : {"mean", "zero"}
        What an ablated head's output becomes: its mean over the real positions of the data set (the chunk of
        ``execution.chunk_size`` records it is in; the whole data set when it fits in one), the default, or
        zeros (Michel et al. 2019's mask). Named in every table.
    mask_share : float
        Share of the pieces masked for the masked-LM loss (seeded per input).
    prune_by : {"gradient", "ablation"}
        The importance that orders heads for the pruning curve: Michel et al.'s gradient ``|dL/dxi|`` (their
        choice) or the ablation's loss change.
    prune_shares : list of float
        Shares of the heads removed (in order of importance, least important first), each in [0, 1).
    prune_tolerance : float
        The stated loss for "the largest share removable": accuracy may fall by at most this much (0.01 = one
        point).
    max_tokens : int
        Pieces per ablation forward pass (copies of a batch x padded length): the memory of the batched
        ablations.
    n_bootstrap : int
        Bootstrap resamples of the removable share's interval (over inputs; over seeds and inputs for a replicate
        group), seeded with the run's seed.
    n_permutations : int
        Labelings of the role claims' layer-stratified permutation test over heads (each keeps the role heads per
        layer): every labeling when there are at most this many (exact), else this many seeded draws.
    """

    model_config = ConfigDict(extra="forbid")

    ablation: Literal["mean", "zero"] = "mean"
    mask_share: float = Field(0.15, gt=0, lt=1)
    prune_by: Literal["gradient", "ablation"] = "gradient"
    prune_shares: list[float] = Field(default_factory=lambda: [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9])
    prune_tolerance: float = Field(0.01, ge=0, lt=1)
    max_tokens: int = Field(16384, ge=1)
    n_permutations: int = Field(9999, ge=99)
    n_bootstrap: int = Field(1999, ge=99)

    @field_validator("prune_shares")
    @classmethod
    def _shares(cls, value: list[float]) -> list[float]:
        if not value or any(not 0 <= s < 1 for s in value):
            raise ValueError("prune_shares are shares of the heads in [0, 1), e.g. [0, 0.1, 0.2, 0.5]")
        shares = sorted(set(float(s) for s in value))
        return shares if shares[0] == 0 else [0.0, *shares]
