r"""Task heads of a checkpoint, and attention heads switched off or gated inside a model (Michel et al. 2019).

The engine scores attention with the bare encoder. Analyses that need the model's *task* (a loss to
differentiate, a prediction to break) declare it, and the engine's runner loads the same checkpoint once more
per group of models with its task head, through the one loader, :func:`headstats.model.loading.load_model` with
``head="task"`` (:class:`headstats.engine.runner.TaskModels`); :func:`task_head` says which head that is, from
``config.architectures``: the fine-tuned classifier of ``headstats finetune`` (``*ForSequenceClassification``),
a masked-LM head (``*ForMaskedLM``, ``*ForPreTraining``), or none (a bare ``BertModel`` such as the default
model), with the reason.

Heads inside the model. Every layer's attention output is ``O = W_O [z_1; ...; z_H] + b``, where ``z_h``
(``T x d_head``) is head h's output (its attention-weighted values). :class:`HeadPatch` hooks the input of
``W_O`` in every layer (a forward pre-hook on the output projection, :data:`ATTENTION_OUTPUT`) and rewrites
each head's slice of every sequence of the batch as

    z'_h = g_h z_h + (1 - g_h) r_h ,

with a per-sequence gate ``g`` of shape ``(B, L, H)`` and a replacement ``r`` of shape ``(L, H, d_head)``:

- ``g = 1`` everywhere: the model unchanged; with ``g`` a leaf tensor that requires grad and ``r = 0`` this is
  the head gate :math:`\xi_h` of Michel et al. (2019), and ``dL/dg`` is their importance before the absolute
  value, per sequence (each sequence has its own gates, so one backward pass of the summed loss gives every
  input's own gradient);
- ``g = 0`` for one head: that head ablated, to zero (``r = 0``) or to its mean (``r`` = the head's mean output
  over a data set's real positions, :attr:`HeadPatch.sums` / :attr:`HeadPatch.counts` collected with
  ``record=True``).

A batch of B inputs repeated K times with K different gates is one forward pass of K x B sequences: all heads
ablated, one per copy, without a Python loop over heads and inputs. The hook works on the projection's input,
so it does not depend on the attention implementation (eager, SDPA) or on ``head_mask`` support (which
transformers 5 dropped from most encoders). It needs one distinct output projection per layer: ALBERT shares
one layer's weights (and modules) across its depth, so a head of one layer cannot be told from the same head
of another, and :func:`ablation_support` refuses it.
"""

from __future__ import annotations

from typing import Any, Sequence

from headstats.lazy import torch

#: ``model_type`` -> (path of the layer list in the base model, path of the attention output projection in a layer).
ATTENTION_OUTPUT: dict[str, tuple[str, str]] = {
    "bert": ("encoder.layer", "attention.output.dense"),
    "roberta": ("encoder.layer", "attention.output.dense"),
    "xlm-roberta": ("encoder.layer", "attention.output.dense"),
    "camembert": ("encoder.layer", "attention.output.dense"),
    "electra": ("encoder.layer", "attention.output.dense"),
    "distilbert": ("transformer.layer", "attention.out_lin"),
}

def task_head(architectures: Sequence[str] | None) -> tuple[str | None, str]:
    """Which task head a checkpoint was saved with, from ``config.architectures``: ``("classifier" | "masked_lm"
    | None, note)``, the note saying which loss it gives or why there is none."""
    names = list(architectures or [])
    if any(a.endswith("ForSequenceClassification") for a in names):
        return "classifier", "the fine-tuned classifier's cross-entropy"
    if any(a.endswith(("ForMaskedLM", "ForPreTraining")) for a in names):
        return "masked_lm", "the masked-LM loss (15 % of the pieces masked, seeded)"
    shown = ", ".join(names) or "none recorded"
    return None, (f"the model has neither a fine-tuned classifier head nor a masked-LM head (architectures: "
                  f"{shown}), so there is no task loss; give a model fine-tuned with `headstats finetune` or a "
                  "checkpoint with its masked-LM head")


def ablation_support(model_type: str | None) -> str | None:
    """Why heads of a ``model_type`` cannot be ablated or gated one by one (None: they can)."""
    if model_type in ATTENTION_OUTPUT:
        return None
    if model_type == "albert":
        return ("ALBERT shares one layer's attention module across all its layers, so a head cannot be ablated in "
                "one layer alone; use a BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA or DistilBERT model")
    return (f"headstats does not know where a {model_type!r} model's attention output projection sits (it knows "
            f"{', '.join(ATTENTION_OUTPUT)})")


def _attribute(root: Any, path: str) -> Any:
    for part in path.split("."):
        root = getattr(root, part)
    return root


def output_projections(model: Any) -> list[Any]:
    """Each layer's attention output projection (whose input is the heads' concatenated outputs), in order.

    Raises
    ------
    ValueError
        For a model type whose heads cannot be reached one by one (:func:`ablation_support`).
    """
    model_type = getattr(model.config, "model_type", None)
    reason = ablation_support(model_type)
    if reason is not None:
        raise ValueError(reason)
    layers, projection = ATTENTION_OUTPUT[model_type]
    base = model.base_model if hasattr(model, "base_model") else model
    return [_attribute(layer, projection) for layer in _attribute(base, layers)]


class HeadPatch:
    """Rewrite every head's output before the attention output projection: ``z' = g z + (1 - g) r`` (module
    docstring), for the forward passes run inside ``with HeadPatch(model, ...)``.

    Parameters
    ----------
    model : transformers model
    n_heads : int
    gates : Tensor (S, L, H), optional
        Per sequence of the batch, layer and head: 1 keeps the head, 0 replaces it by ``replacement``; may
        require grad. None: every head kept.
    replacement : Tensor (L, H, d_head), optional
        What an ablated head's output becomes (None: zeros).
    record : Tensor (S, T) of bool, optional
        Real positions: the sums of each head's (unchanged) outputs over them are added to :attr:`sums`
        ``(L, H, d_head)``, float64, and their number to :attr:`count`.
    """

    def __init__(self, model: Any, n_heads: int, *, gates: Any = None, replacement: Any = None,
                 record: Any = None) -> None:
        self.modules = output_projections(model)
        self.n_heads = n_heads
        self.gates = gates
        self.replacement = replacement
        self.record = record
        self.sums: Any = None
        self.count = 0
        self._handles: list[Any] = []

    def _hook(self, layer: int):
        def hook(module: Any, args: tuple) -> tuple:
            x = args[0]
            S, T, D = x.shape
            z = x.view(S, T, self.n_heads, D // self.n_heads)
            if self.record is not None:
                real = self.record.to(z.dtype)
                total = torch.einsum("sthd,st->hd", z.detach().double(), real.double())
                if self.sums is None:
                    self.sums = torch.zeros((len(self.modules), *total.shape), dtype=torch.float64, device=z.device)
                self.sums[layer] += total
                if layer == 0:
                    self.count += int(self.record.sum())
            if self.gates is None:
                return None
            g = self.gates[:, layer].to(z.dtype)[:, None, :, None]  # (S, 1, H, 1)
            out = g * z
            if self.replacement is not None:
                out = out + (1 - g) * self.replacement[layer].to(z.dtype)[None, None]
            return (out.reshape(S, T, D), *args[1:])
        return hook

    def __enter__(self) -> "HeadPatch":
        self._handles = [m.register_forward_pre_hook(self._hook(i)) for i, m in enumerate(self.modules)]
        return self

    def __exit__(self, *exc: Any) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []
