"""What each head passes on: the norms of its transformed value vectors (Kobayashi et al., EMNLP 2020).

For layer ``l`` and head ``h``, with the layer's input hidden states ``x_j``, the head's value vector is
``v_j = x_j W_V^h + b_V^h`` and what key ``j`` sends through the attention output projection is
``f_h(x_j) = v_j W_O^h``, where ``W_O^h`` is the head's ``d_head x d_model`` slice of that projection (its shared
bias left out). Query ``i`` receives ``alpha_ij f_h(x_j)`` from key ``j``; Kobayashi et al. analyse
``||alpha_ij f_h(x_j)||``. headstats renormalises each query's row over its keys (METHODS 6.1)::

    A_norm[i, j] = alpha_ij ||f_h(x_j)||  /  sum_k alpha_ik ||f_h(x_k)||

so that uniform contributions give 1 in the sieve bias score and every formula of METHODS section 1 applies with
``A_norm`` in place of ``A``.

Only ``||f_h(x_j)||`` (``n`` numbers per head and input) is needed beyond the weights. It is read in the same
forward pass, by a forward hook on the stock model's value projection, and computed as a quadratic form with the
head's Gram matrix ``G_h = W_O^h (W_O^h)^T`` (``d_head x d_head``)::

    ||f_h(x_j)||^2 = v_j G_h v_j^T

which costs ``d_head / d_model`` of the projection itself. No modelling file is copied: the hooks find each
family's value and output projections by their names in the stock ``transformers`` modules
(:data:`ATTENTION_PARTS`). ALBERT shares one attention module across its layers: its hook fires once per layer,
in layer order, like every other family's.

Reference: Goro Kobayashi, Tatsuki Kuribayashi, Sho Yokoi, Kentaro Inui (2020), "Attention is Not Only a Weight:
Analyzing Transformers with Vector Norms", EMNLP; their code: ``gorokoba560/norm-analysis-of-transformer``.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from headstats.errors import ModelError
from headstats.lazy import torch

#: Per ``model_type``: the last name of each layer's attention module, and the paths (inside it) of the value
#: projection and of the attention output projection.
ATTENTION_PARTS: dict[str, tuple[str, str, str]] = {
    "bert": ("attention", "self.value", "output.dense"),
    "roberta": ("attention", "self.value", "output.dense"),
    "xlm-roberta": ("attention", "self.value", "output.dense"),
    "camembert": ("attention", "self.value", "output.dense"),
    "electra": ("attention", "self.value", "output.dense"),
    "distilbert": ("attention", "v_lin", "out_lin"),
    "albert": ("attention", "value", "dense"),
}


def value_projections(model: Any) -> list[tuple[Any, Any]]:
    """The (value projection, output projection) pair of each distinct attention module, in module order.

    Raises
    ------
    ModelError
        If the model's family is not in :data:`ATTENTION_PARTS` or no attention module is found.
    """
    model_type = getattr(model.config, "model_type", None)
    if model_type not in ATTENTION_PARTS:
        raise ModelError(
            f"norm-weighted attention is not available for {model_type!r} models; it is for the families "
            f"{', '.join(ATTENTION_PARTS)}: use measure 'weights'"
        )
    last, value_path, output_path = ATTENTION_PARTS[model_type]
    pairs = []
    for name, module in model.named_modules():
        if name.rpartition(".")[2] != last:
            continue
        try:
            pairs.append((module.get_submodule(value_path), module.get_submodule(output_path)))
        except AttributeError:
            continue
    if not pairs:
        raise ModelError(f"no attention module with {value_path!r} and {output_path!r} found in the {model_type} model")
    return pairs


def head_grams(output: Any, n_heads: int) -> torch.Tensor:
    """``G_h = W_O^h (W_O^h)^T`` for every head, shape ``(H, d_head, d_head)``.

    ``output`` is the attention output projection (``torch.nn.Linear``, weight ``(d_model, H d_head)``): its
    input is the heads' outputs concatenated, so head ``h`` owns the columns ``h d_head .. (h + 1) d_head``.
    """
    weight = output.weight
    d_model, width = weight.shape
    d_head = width // n_heads
    w = weight.reshape(d_model, n_heads, d_head).permute(1, 2, 0)  # (H, d_head, d_model): W_O^h per head
    return w @ w.transpose(1, 2)


def transformed_norms(values: torch.Tensor, grams: torch.Tensor) -> torch.Tensor:
    """``||f_h(x_j)||`` from the value projection's output ``(B, N, H d_head)``: shape ``(B, H, N)``."""
    B, N, width = values.shape
    H = grams.shape[0]
    v = values.reshape(B, N, H, width // H).float()
    squared = torch.einsum("bnhd,hde,bnhe->bhn", v, grams.float(), v)
    return squared.clamp_min(0).sqrt()


@contextmanager
def capture_value_norms(model: Any, n_heads: int) -> Iterator[list[torch.Tensor]]:
    """Collect ``||f_h(x_j)||`` of every layer during the forward passes run inside the block.

    Yields a list that each layer's pass appends its ``(B, H, N)`` norms to, in layer order (clear it between
    batches). The hooks are removed on exit, also after an error.
    """
    norms: list[torch.Tensor] = []
    handles = []
    for value, output in value_projections(model):
        def hook(_module, _inputs, result, output=output):
            norms.append(transformed_norms(result, head_grams(output, n_heads)))
        handles.append(value.register_forward_hook(hook))
    try:
        yield norms
    finally:
        for handle in handles:
            handle.remove()


def norm_weighted(attention: torch.Tensor, norms: torch.Tensor) -> torch.Tensor:
    """``A_norm[i, j] = alpha_ij n_j / sum_k alpha_ik n_k`` (METHODS 6.1): attention ``(B, L, H, T, T)``, norms
    ``(B, L, H, T)``. A row whose weighted sum is 0 (a padded query) stays 0."""
    weighted = attention * norms[:, :, :, None, :]
    total = weighted.sum(-1, keepdim=True)
    return torch.where(total > 0, weighted / total.clamp_min(torch.finfo(weighted.dtype).tiny), 0.0)
