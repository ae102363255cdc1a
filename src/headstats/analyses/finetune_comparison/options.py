"""The comparison's options: a protocol's ``compare:`` entries, each a :class:`CompareSpec` (the protocol composes it;
no torch here)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Literal

from pydantic import Field

from headstats.fields import Float, StrictModel


class CompareSpec(StrictModel):
    """A pretrained-vs-fine-tuned comparison, paired by input."""

    base: str
    finetuned: list[str]
    datasets: list[str] | None = None
    #: A registered paired test (:data:`headstats.stats.paired.PAIRED_TESTS`; ``headstats list-tests``): the built-in
    #: ``wilcoxon`` and ``t``, or one added with ``hs.register_paired_test``.
    test: str = "wilcoxon"
    alternative: Literal["two-sided", "greater", "less"] = "two-sided"
    correction: str = "holm"
    family: list[Literal["model", "dataset", "role", "layer"]] = Field(
        default_factory=lambda: ["model", "dataset"]
    )
    confidence: Float = Field(0.95, gt=0, lt=1)
    #: Margin of a change that matters (practical significance), in score units (``min_change_scale:
    #: score``) or as a share of the pretrained model's mean score of each head and role (``share``); with
    #: seeds, heads are tested to exceed it and to stay within it (TOST). None: no margin tests.
    min_change: Float | None = Field(None, gt=0)
    min_change_scale: Literal["score", "share"] = "score"
    #: With seeds, the per-cell test over seeds, a registered one (:data:`headstats.stats.seeds.SEED_TESTS`):
    #: ``moderated_t`` (limma's empirical-Bayes t, which borrows the seed-to-seed variance of all cells; Smyth
    #: 2004), ``t`` (the plain one-sample t over seeds), or one added with ``hs.register_seed_test``.
    seed_test: str = "moderated_t"

    def replicate_members(self, replicate_of: Mapping[str, str | None]) -> dict[str, list[str]]:
        """The replicate groups among the comparison's fine-tuned models: group -> members (two or more seeds),
        from each model's ``replicate_of`` (model name -> its group, or None)."""
        groups: dict[str, list[str]] = {}
        for name in self.finetuned:
            group = replicate_of.get(name)
            if group is not None:
                groups.setdefault(group, []).append(name)
        return {g: members for g, members in groups.items() if len(members) >= 2}

    def seed_pairs(self, replicate_of: Mapping[str, str | None]) -> list[tuple[str, str]]:
        """Every two seeds of each replicate group among the fine-tuned models (k(k-1)/2 per group, in order)."""
        return [pair for members in self.replicate_members(replicate_of).values()
                for pair in itertools.combinations(members, 2)]
