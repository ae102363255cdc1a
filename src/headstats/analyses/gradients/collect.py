r"""Gradient importance of attention weights (Clark et al. 2019, section 3, Figure 3; METHODS 2.1).

For input x, layer l, head h and the model's loss :math:`\mathcal{L}`, the importance of attention weight
``A[i, j]`` is :math:`|\partial \mathcal{L} / \partial A_{lh}[i, j]|`. Per input it is averaged over the real
queries i and the keys j of each kind,

    G_kind(x, l, h) = mean_{i real, j of kind} |dL / dA_lh[i, j]|,    kind in {cls, sep, punct, other},

(``punct``: the pieces "." and ","; ``other``: every other real key), then over inputs (mean, sd, N).

The loss. The paper uses BERT's masked-LM loss. headstats uses, in this order:

- the loss of a fine-tuned sequence classifier (a checkpoint whose architecture ends in
  ``ForSequenceClassification``, e.g. one ``headstats finetune`` wrote) on its own predicted class (the
  engine does not carry gold labels; this is the usual saliency loss, Simonyan et al. 2014);
- the masked-LM loss where the checkpoint has a trained masked-LM head: in each input 15 % of the real
  non-special pieces (at least one; seeded by the protocol's seed and the input's position) are replaced by
  the mask token and predicted (no 80/10/10 replacement).

A model with neither (the default model, a bare ``BertModel``) has no loss to differentiate: the analysis
warns once, writes the reason to ``gradients_skipped`` and its report section, and computes nothing.

The pass. The engine's forward pass runs under ``torch.inference_mode``; gradients need one of their own. The
collector declares that it needs the model with its task head and gradients
(:attr:`~headstats.engine.collector.Collector.needs_task_model`, ``needs_gradients``): the runner loads the
checkpoint once per group with its head, and calls ``update`` on every batch with gradients enabled, where it
runs one forward and backward pass over the batch's inputs.
"""

from __future__ import annotations

import warnings
from typing import Any, Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.gradients.options import GradientOptions
from headstats.analyses.gradients.tables import GRADIENTS, GRADIENTS_SKIPPED
from headstats.engine.batch import BatchView, non_finite_cause, refuse_non_finite_maps
from headstats.engine.collector import Collector, Context, Moments
from headstats.engine.forward import pad_batch
from headstats.lazy import torch
from headstats.model.encoding import EncodedInput
from headstats.model.tokenizers import punctuation_ids


#: The kinds of keys gradients are averaged over (Clark et al.'s Figure 3 has sep, punct and other).
TARGETS = ("cls", "sep", "punct", "other")


#: The task each head of the model layer gives a loss for, as the analyses' tables name it
#: (:func:`headstats.model.task_heads.task_head`).
TASKS = {"classifier": "classifier", "masked_lm": "mlm"}
#: The loss each task gives this analysis (the classifier's on its own prediction: no gold labels here).
LOSS_NAMES = {"classifier": "the fine-tuned classifier's loss on its own prediction",
              "mlm": "the masked-LM loss (15 % of the pieces masked, seeded)"}


def _head_model(loaded: Any) -> tuple[Any, Any, str | None, str]:
    """``(model, tokenizer, task, loss name or why there is none)`` of a checkpoint loaded with its task head
    (eager attention, float32; the runner's :meth:`~headstats.engine.collector.Context.task_model`)."""
    if loaded.head not in TASKS:
        return None, None, None, loaded.head_note
    task = TASKS[loaded.head]
    return loaded.model, loaded.tokenizer, task, LOSS_NAMES[task]


def mask_positions(item: EncodedInput, *, seed: int, share: float = 0.15) -> np.ndarray:
    """Positions to mask in one input: ``max(1, round(share * m))`` of its m non-special pieces, seeded by
    ``(seed, item.index)`` so that batching changes nothing."""
    candidates = np.flatnonzero(~item.special)
    if candidates.size == 0:
        return candidates
    k = max(1, int(round(share * candidates.size)))
    rng = np.random.default_rng([seed, item.index])
    return np.sort(rng.choice(candidates, size=k, replace=False))


def target_masks(input_ids: torch.Tensor, real: torch.Tensor, cls: torch.Tensor, sep: torch.Tensor,
                 punct_ids: Sequence[int]) -> dict[str, torch.Tensor]:
    """Key masks (B, T) of each target kind: [CLS], [SEP], "."/",", every other real key."""
    punct = torch.isin(input_ids, torch.tensor(list(punct_ids), dtype=input_ids.dtype)) & real & ~cls & ~sep
    other = real & ~cls & ~sep & ~punct
    return {"cls": cls & real, "sep": sep & real, "punct": punct, "other": other}


def mean_abs_by_target(grad: torch.Tensor, real: torch.Tensor, masks: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Per input, layer and head, the mean of ``|grad[i, j]|`` over real queries i and keys j of each kind
    (B, L, H); NaN where an input has no key of that kind."""
    absg = grad.abs()
    q = real.to(grad.dtype)
    out = {}
    for name, mask in masks.items():
        k = mask.to(grad.dtype)
        total = torch.einsum("blhij,bi,bj->blh", absg, q, k)
        count = (q.sum(-1) * k.sum(-1))[:, None, None]
        out[name] = torch.where(count > 0, total / count.clamp_min(1), torch.full_like(total, float("nan")))
    return out


def attention_gradients(model: Any, kind: str, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                        token_type_ids: torch.Tensor | None, masked: list[np.ndarray] | None,
                        mask_id: int | None) -> tuple[torch.Tensor, torch.Tensor]:
    """``(dL/dA (B, L, H, T, T), per-input loss (B,))`` of one grad-enabled pass; inputs' losses are summed,
    so each input's gradient is its own."""
    kwargs = {"attention_mask": attention_mask, "output_attentions": True}
    if token_type_ids is not None:
        kwargs["token_type_ids"] = token_type_ids
    ids = input_ids.clone()
    if kind == "mlm":
        labels = torch.full_like(ids, -100)
        for b, positions in enumerate(masked or []):
            labels[b, positions] = ids[b, positions]
            ids[b, positions] = mask_id
    out = model(input_ids=ids, **kwargs)
    if kind == "mlm":
        logp = torch.log_softmax(out.logits, -1)
        picked = logp.gather(-1, labels.clamp_min(0)[..., None])[..., 0]
        keep = (labels >= 0).to(logp.dtype)
        loss = -(picked * keep).sum(-1) / keep.sum(-1).clamp_min(1)
    else:
        logp = torch.log_softmax(out.logits, -1)
        loss = -logp.max(-1).values  # the loss of the predicted class
    grads = torch.autograd.grad(loss.sum(), out.attentions)
    return torch.stack(grads, 1).detach(), loss.detach()


class GradientImportance(Collector):
    """Mean |dL/dA| per head and target kind, over inputs (module docstring)."""

    #: Its state depends on the seed (which pieces are masked), so the seed is part of its cache key.
    seeded = True
    #: The runner hands it the model with its task head (the loss) and runs its batches with gradients.
    needs_task_model = True
    needs_gradients = True

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.options: GradientOptions = collector_options(context, GradientOptions)
        self.seed = int(context.seed)
        shape = (context.n_layers, context.n_heads)
        self._state = {"moments": {t: Moments.zeros(shape) for t in TARGETS}, "loss": Moments.zeros(()),
                       "kind": None, "skipped": None}
        self._model: Any = None

    def _load(self) -> bool:
        if self._model is not None or self._state["skipped"] is not None:
            return self._model is not None
        model, tokenizer, kind, reason = _head_model(self.context.task_model("float32"))
        if model is None:
            self._state["skipped"] = reason
            warnings.warn(f"gradients: skipped for model {self.context.model!r}: {reason}", stacklevel=2)
            return False
        self._model, self._tokenizer, self._state["kind"] = model, tokenizer, kind
        self._state["loss_name"] = reason
        self._punct = list(punctuation_ids(tokenizer))  # the same set as surface's ``punct``
        return True

    def update(self, view: BatchView) -> None:
        if not self._load():
            return
        device = next(self._model.parameters()).device
        pad = self._tokenizer.pad_token_id or 0
        batch = pad_batch(list(view.inputs), pad, device)
        masked = [mask_positions(item, seed=self.seed, share=self.options.mask_share) for item in view.inputs]
        use_types = self._model.config.type_vocab_size > 1 if hasattr(self._model.config, "type_vocab_size") else False
        grad, loss = attention_gradients(  # the runner's grad-enabled batch (needs_gradients)
            self._model, self._state["kind"], batch.input_ids.clone(), batch.attention_mask.clone(),
            batch.token_type_ids.clone() if use_types else None, masked, self._tokenizer.mask_token_id)
        if not bool(torch.isfinite(grad).all()):  # NaN or inf in an input's gradients is an error; in padding, 0
            refuse_non_finite_maps(grad, view.inputs, what="attention gradients", model=view.model,
                                   dataset=view.dataset, cause=lambda: non_finite_cause(self._model))
            grad = torch.where(torch.isfinite(grad), grad, grad.new_zeros(()))
        real = batch.attention_mask.bool()
        layout = view.layout
        masks = target_masks(batch.input_ids, real, layout.cls.to(device), layout.sep.to(device), self._punct)
        for name, value in mean_abs_by_target(grad.double(), real, masks).items():
            self._state["moments"][name].add(value.cpu().numpy())
        self._state["loss"].add(loss.double().cpu().numpy())

    @classmethod
    def merge(cls, states: Sequence[dict]) -> dict:
        out = dict(states[0])
        out["moments"] = {t: Moments.combine([s["moments"][t] for s in states]) for t in TARGETS}
        out["loss"] = Moments.combine([s["loss"] for s in states])
        return out

    def tables(self) -> dict[str, pd.DataFrame]:
        """``gradients``: ``model, dataset, layer, head, target, n, mean_abs_grad, sd, loss, mean_loss``;
        or ``gradients_skipped``: ``model, dataset, reason`` when the model offers no loss."""
        ctx, s = self.context, self._state
        if s["skipped"] is not None:
            return {GRADIENTS_SKIPPED.name: pd.DataFrame([{"model": ctx.model, "dataset": ctx.dataset,
                                                        "reason": s["skipped"]}])}
        frames = [ctx.head_frame(model=ctx.model, dataset=ctx.dataset, target=t, n=s["moments"][t].n,
                                 mean_abs_grad=s["moments"][t].mean_or_nan, sd=s["moments"][t].sd)
                  for t in TARGETS]
        table = pd.concat(frames, ignore_index=True)
        table["loss"] = s.get("loss_name", s["kind"])
        table["mean_loss"] = float(s["loss"].mean_or_nan)
        return {GRADIENTS.name: table}


