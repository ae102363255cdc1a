"""Forward passes that return attention, one padded batch at a time.

Inputs are sorted by length before batching, so that little padding is computed; nothing of a batch is
kept after its consumer is done with it, so memory does not grow with the number of inputs.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
from headstats.lazy import torch

from headstats.model.encoding import EncodedInput
from headstats.errors import HeadstatsError
from headstats.model.loading import LoadedModel

if TYPE_CHECKING:
    from headstats.engine.mapfree import Gather, Gathered


@dataclass
class Batch:
    """A padded batch of encoded inputs.

    Attributes
    ----------
    inputs : list of EncodedInput
    input_ids, token_type_ids, attention_mask : torch.Tensor, shape (B, N)
    """

    inputs: list[EncodedInput]
    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor

    @property
    def lengths(self) -> np.ndarray:
        return np.array([item.length for item in self.inputs])


def length_sorted_batches(inputs: Sequence[EncodedInput], batch_size: int, *,
                          max_cells: int | None = None) -> list[list[EncodedInput]]:
    """Split inputs into batches of similar length (stable sort by length, longest first).

    Parameters
    ----------
    inputs : sequence of EncodedInput
    batch_size : int
        At most this many inputs per batch.
    max_cells : int, optional
        At most this many attention cells per (layer, head) per batch: a batch of ``B`` inputs padded to its
        longest input's ``T`` pieces holds ``B x T^2`` weights per head, so each batch is sized from ITS
        longest input (its first, the inputs being sorted longest first),

            B = min(batch_size, max(1, floor(max_cells / T^2))),

        and a batch's attention maps never exceed ``max_cells x layers x heads`` weights, whatever the
        longest input of the data (long inputs go in smaller batches, short ones in batches of
        ``batch_size``). None: ``batch_size`` only.

    Returns
    -------
    list of list of EncodedInput
        The batches, longest first; ties keep the input order.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, not {batch_size}")
    if max_cells is not None and max_cells < 1:
        raise ValueError(f"max_cells must be >= 1, not {max_cells}")
    order = sorted(range(len(inputs)), key=lambda i: -inputs[i].length)
    batches: list[list[EncodedInput]] = []
    start = 0
    while start < len(order):
        size = inputs_per_batch(inputs[order[start]].length, batch_size, max_cells)
        batches.append([inputs[i] for i in order[start : start + size]])
        start += size
    return batches


def progress_order(n: int) -> list[int]:
    """An order in which to run ``n`` length-sorted batches (longest first) so that the time left is right
    early: the longest first (a batch that does not fit in memory fails at once), then at every prefix a
    spread of the lengths, at the van der Corput fractions 1/2, 1/4, 3/4, 1/8, ... of the batch list.

    Run longest first, the first batches are the slowest per input, and a time left extrapolated from them
    was about twice the true one; in this order the second batch is the median one, and the rate over any
    prefix is near the rate of the whole pass. The batches themselves, and each input's numbers, do not change.
    """
    if n <= 0:
        return []
    order, seen = [], set()
    bits = max(1, (n - 1).bit_length())
    for k in range(2 ** (bits + 1)):
        fraction = int(format(k, f"0{bits + 1}b")[::-1], 2) / 2 ** (bits + 1)  # van der Corput, base 2
        index = int(fraction * n)
        if index not in seen:
            seen.add(index)
            order.append(index)
    return order + [i for i in range(n) if i not in seen]


def inputs_per_batch(longest: int, batch_size: int, max_cells: int | None) -> int:
    """How many inputs a batch whose longest input has ``longest`` pieces takes:
    ``min(batch_size, max(1, floor(max_cells / longest^2)))`` (``batch_size`` when ``max_cells`` is None)."""
    if max_cells is None:
        return batch_size
    longest = max(longest, 1)
    return min(batch_size, max(1, max_cells // (longest * longest)))


def pad_batch(items: list[EncodedInput], pad_token_id: int, device: torch.device | str = "cpu") -> Batch:
    """Right-pad a list of inputs into tensors."""
    width = max(item.length for item in items)
    ids = np.full((len(items), width), pad_token_id, dtype=np.int64)
    types = np.zeros((len(items), width), dtype=np.int64)
    mask = np.zeros((len(items), width), dtype=np.int64)
    for row, item in enumerate(items):
        ids[row, : item.length] = item.input_ids
        types[row, : item.length] = item.token_type_ids
        mask[row, : item.length] = 1
    to = lambda a: torch.from_numpy(a).to(device)  # noqa: E731
    return Batch(items, to(ids), to(types), to(mask))


def _accepts_token_type_ids(model: torch.nn.Module) -> bool:
    return "token_type_ids" in inspect.signature(model.forward).parameters


def forward_attentions(loaded: LoadedModel, batch: Batch) -> torch.Tensor:
    """Run the model on a batch and return its attentions stacked as (B, L, H, N, N).

    Raises
    ------
    HeadstatsError
        If the model returned no attention weights (e.g. loaded with SDPA attention).
    """
    model = loaded.model
    kwargs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    if _accepts_token_type_ids(model):
        kwargs["token_type_ids"] = batch.token_type_ids
    outputs = model(**kwargs, output_attentions=True)
    attentions = getattr(outputs, "attentions", None)
    if not attentions or any(a is None for a in attentions):
        raise HeadstatsError(
            f"model {loaded.name!r} returned no attention weights; load it with "
            "attn_implementation='eager' (headstats.model.loading.load_model does this)"
        )
    return torch.stack(attentions, dim=1).float()


class MapFreeUnsupported(HeadstatsError):
    """A model whose attention cannot be run map-free (it does not call transformers' attention functions)."""


def forward_fused(loaded: LoadedModel, batch: Batch, gathers: Sequence["Gather"], *,
                  maps: bool = False) -> tuple[list["Gathered"], torch.Tensor | None]:
    """Run the model on a batch through the fused attention path (:mod:`headstats.engine.mapfree`): what each of
    ``gathers`` asks of every layer, computed on its own, and with ``maps`` the attention maps stacked as
    (B, L, H, N, N), float32 (else None). The layers' outputs are the fused kernel's whatever is asked, so each
    result is the same whichever others are asked in the same pass.

    Raises
    ------
    MapFreeUnsupported
        If the model's attention does not dispatch through transformers' ``AttentionInterface`` (the runner
        then runs it with transformers' eager attention).
    """
    from headstats.engine.mapfree import gathering

    model = loaded.model
    kwargs = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
    if _accepts_token_type_ids(model):
        kwargs["token_type_ids"] = batch.token_type_ids
    with gathering(model, *gathers, maps=maps, n_layers=loaded.n_layers) as active:
        outputs = model(**kwargs, output_attentions=True) if maps else model(**kwargs)
    if active.calls != loaded.n_layers:
        raise MapFreeUnsupported(
            f"model {loaded.name!r} called the map-free attention {active.calls} times for its "
            f"{loaded.n_layers} layers; its attention does not dispatch through transformers' AttentionInterface")
    attention = None
    if maps:
        attentions = getattr(outputs, "attentions", None)
        if not attentions or len(attentions) != loaded.n_layers or any(a is None for a in attentions):
            raise MapFreeUnsupported(f"model {loaded.name!r} returned no attention maps from the fused path")
        # the layers wrote their maps into one tensor (unless the model's layers returned others)
        attention = active.stacked if active.holds(attentions) else torch.stack(attentions, dim=1).float()
    return [recorder.result() for recorder in active.recorders], attention

