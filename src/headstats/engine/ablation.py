"""Ablation batches: a batch run again with heads gated, the runner's pass for a collector that
:attr:`~headstats.engine.collector.Collector.needs_ablations` (head importance, Michel et al. 2019).

A collector that needs them yields, from :meth:`~headstats.engine.collector.Collector.ablations`, one
:class:`AblationBatch` at a time once its chunk's batches are done (a mean over the chunk may be what the heads are
replaced by); :func:`run_ablations` (called by the runner) runs each as copies of the batch, one gate pattern per
copy, in forward passes of at most ``max_tokens`` pieces, without gradients, and sends back what the collector's
``reduce`` keeps of each pass (a few numbers per copy, never the model's outputs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import numpy as np

from headstats.lazy import torch


@dataclass
class AblationBatch:
    """One batch of B inputs to run under K gate patterns.

    Attributes
    ----------
    model : torch.nn.Module
        The model to run (the runner's task-head model, :meth:`~headstats.engine.collector.Context.task_model`).
    inputs : mapping of str to Tensor
        The model's keyword arguments for the B inputs (``input_ids``, ``attention_mask``, ...), each ``(B, T)``.
    gates : ndarray, shape (K, B, L, H)
        Per pattern and input, each head's gate (1 kept, 0 removed; :class:`headstats.model.task_heads.HeadPatch`).
    reduce : callable
        ``reduce(output, n) -> {name: tensor of shape (n B,)}``: what to keep of a pass of ``n`` patterns (its
        model output holds the ``n`` copies of the batch one after the other).
    replacement : Tensor, optional
        What a removed head's output is replaced by (``(L, H, d)``; None: zeros).
    max_tokens : int
        Pieces one pass may hold (``copies x B x T``).
    max_bytes, bytes_per_sequence : int
        A further bound on a pass of large outputs (masked-LM logits): at most ``max_bytes / bytes_per_sequence``
        sequences (0: none).
    """

    model: Any
    inputs: Mapping[str, Any]
    gates: np.ndarray
    reduce: Callable[[Any, int], Mapping[str, Any]]
    replacement: Any = None
    max_tokens: int = 65536
    max_bytes: int = 0
    bytes_per_sequence: int = 0

    def copies_per_pass(self) -> int:
        """Gate patterns per forward pass: ``floor(floor(max_tokens / T) / B)`` (and the bytes' bound), at least 1."""
        B, T = self.gates.shape[1], int(next(iter(self.inputs.values())).shape[1])
        sequences = max(1, self.max_tokens // max(T, 1))
        if self.max_bytes and self.bytes_per_sequence:
            sequences = min(sequences, max(1, self.max_bytes // self.bytes_per_sequence))
        return max(1, sequences // B)


def run_ablation(batch: AblationBatch, n_heads: int) -> tuple[dict[str, np.ndarray], int]:
    """Run one ablation batch: ``({name: (B, K) float64}, forward passes run)``. Call without gradients."""
    from headstats.model.task_heads import HeadPatch

    K, B = batch.gates.shape[:2]
    step = batch.copies_per_pass()
    device = next(iter(batch.inputs.values())).device
    out: dict[str, list] = {}
    passes = 0
    for start in range(0, K, step):
        g = torch.from_numpy(batch.gates[start:start + step]).to(device)
        n = g.shape[0]
        kwargs = {key: value.repeat(n, 1) for key, value in batch.inputs.items()}
        with HeadPatch(batch.model, n_heads, gates=g.reshape(n * B, *g.shape[2:]), replacement=batch.replacement):
            result = batch.model(**kwargs)
        passes += 1
        for key, value in batch.reduce(result, n).items():
            out.setdefault(key, []).append(value.reshape(n, B).T.double().cpu().numpy())
    return {k: np.concatenate(v, axis=1) for k, v in out.items()}, passes


def run_ablations(collector: Any) -> int:
    """Run every ablation batch ``collector.ablations()`` yields, sending each one's result back, without gradients
    and outside the attention pass' inference mode; returns the forward passes run."""
    passes = 0
    steps = collector.ablations()
    with torch.inference_mode(False), torch.no_grad():
        try:
            batch = next(steps)
            while True:
                result, n = run_ablation(batch, collector.context.n_heads)
                passes += n
                batch = steps.send(result)
        except StopIteration:
            pass
    return passes
