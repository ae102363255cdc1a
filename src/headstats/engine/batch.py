"""The batch view: one forward pass of one model over one padded batch, and everything derived from it.

A :class:`BatchView` is what every collector sees. It holds the padded attention ``(B, L, H, T, T)`` of a
batch, the masks of its positions (real, special, [CLS], [SEP], segment), the inputs' ids, word alignment
and arcs, and a cache in which derived views (the attention with padded rows and keys zeroed, row means,
arc tensors, word-level maps) are computed once, on the first collector's request, and shared by the
others. Nothing of a view outlives its batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
import torch

from headstats.model.encoding import Arc, EncodedInput
from headstats.model.loading import LoadedModel


@dataclass
class BatchLayout:
    """Padded ``(B, T)`` tensors describing the positions of a batch.

    Attributes
    ----------
    real, special, cls, sep : bool Tensor (B, T)
        Real (unpadded) positions; special positions; the [CLS] position(s); every [SEP] position.
    segment : int Tensor (B, T)
        0 for sentence A, 1 for sentence B (see :class:`headstats.model.encoding.EncodedInput`).
    is_pair : bool Tensor (B,)
    """

    real: torch.Tensor
    special: torch.Tensor
    cls: torch.Tensor
    sep: torch.Tensor
    segment: torch.Tensor
    is_pair: torch.Tensor

    @classmethod
    def from_inputs(cls, inputs: Sequence[EncodedInput], width: int, device: torch.device | str = "cpu") -> "BatchLayout":
        """Masks of right-padded inputs, ``width`` positions wide."""
        B = len(inputs)
        arrays = {name: np.zeros((B, width), dtype=bool) for name in ("real", "special", "cls", "sep")}
        segment = np.zeros((B, width), dtype=np.int64)
        for row, item in enumerate(inputs):
            n = item.length
            arrays["real"][row, :n] = True
            arrays["special"][row, :n] = item.special
            arrays["cls"][row, :n] = item.cls
            arrays["sep"][row, :n] = item.sep
            segment[row, :n] = item.segment
        tensors = {k: torch.from_numpy(v).to(device) for k, v in arrays.items()}
        is_pair = torch.tensor([item.is_pair for item in inputs], dtype=torch.bool, device=device)
        return cls(segment=torch.from_numpy(segment).to(device), is_pair=is_pair, **tensors)


def row_means(attn: torch.Tensor, real: torch.Tensor) -> torch.Tensor:
    """``mean_{j < n} A[i, j]`` for every query, shape (B, L, H, N): attention (B, L, H, N, N), real (B, N)."""
    B, L, H, N, _ = attn.shape
    realf = real.to(attn.dtype)
    sums = torch.bmm(attn.reshape(B, L * H * N, N), realf[:, :, None]).reshape(B, L, H, N)
    return sums / realf.sum(-1)[:, None, None, None]


@dataclass(eq=False)
class BatchView:
    """One model's forward pass over one batch, as every collector sees it.

    Attributes
    ----------
    model, dataset : str
        Names as in the protocol.
    inputs : list of EncodedInput
        The batch's inputs, in the order of the first axis.
    attention : Tensor (B, L, H, T, T), float32
        ``attention[b, l, h, i, j]``: weight of key j in the row of query i. Rows of padded queries hold
        whatever the model computed and must be masked (see :attr:`masked_attention`).
    input_ids : Tensor (B, T)
    """

    model: str
    dataset: str
    inputs: list[EncodedInput]
    attention: torch.Tensor
    input_ids: torch.Tensor
    _cache: dict[str, Any] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ shape and identity
    @property
    def size(self) -> int:
        """B, the number of inputs."""
        return int(self.attention.shape[0])

    @property
    def n_layers(self) -> int:
        return int(self.attention.shape[1])

    @property
    def n_heads(self) -> int:
        return int(self.attention.shape[2])

    @property
    def width(self) -> int:
        """T, the padded length."""
        return int(self.attention.shape[-1])

    @property
    def lengths(self) -> np.ndarray:
        """n of every input (real positions)."""
        return self.cached("lengths", lambda: np.array([item.length for item in self.inputs], dtype=np.int64))

    @property
    def index(self) -> np.ndarray:
        """Position of every input in its data set (file order): the key collectors order inputs by."""
        return self.cached("index", lambda: np.array([item.index for item in self.inputs], dtype=np.int64))

    @property
    def sentence_ids(self) -> list[str]:
        return [item.sentence_id for item in self.inputs]

    @property
    def word_pieces(self) -> list[list[tuple[int, ...]]]:
        """Piece positions of every word of every input (empty lists for unparsed inputs)."""
        return [item.word_pieces for item in self.inputs]

    @property
    def arcs(self) -> list[list[Arc]]:
        return [item.arcs for item in self.inputs]

    # ------------------------------------------------------------------ masks
    @property
    def layout(self) -> BatchLayout:
        """Masks of the batch's positions (computed once)."""
        return self.cached("layout", lambda: BatchLayout.from_inputs(self.inputs, self.width, self.attention.device))

    @property
    def real(self) -> torch.Tensor:
        return self.layout.real

    @property
    def special(self) -> torch.Tensor:
        return self.layout.special

    @property
    def cls(self) -> torch.Tensor:
        return self.layout.cls

    @property
    def sep(self) -> torch.Tensor:
        return self.layout.sep

    @property
    def segment(self) -> torch.Tensor:
        return self.layout.segment

    @property
    def is_pair(self) -> torch.Tensor:
        return self.layout.is_pair

    # ------------------------------------------------------------------ derived views
    @property
    def masked_attention(self) -> torch.Tensor:
        """The attention with rows of padded queries and columns of padded keys set to 0."""
        def compute() -> torch.Tensor:
            real = self.real
            pair = (real[:, :, None] & real[:, None, :])[:, None, None]
            return self.attention * pair.to(self.attention.dtype)
        return self.cached("masked_attention", compute)

    @property
    def row_means(self) -> torch.Tensor:
        """``mean_{j < n} A[i, j]`` for every query, shape (B, L, H, T) (METHODS 1.2's denominator)."""
        return self.cached("row_means", lambda: row_means(self.attention, self.real))

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """The derived view ``key``, computed by ``compute()`` the first time any collector asks for it.

        Keys are shared by every collector of the batch: name them after what they hold, with the options
        that change them (e.g. ``"arcs/dependent_to_head"``).
        """
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


def view_of(attention: torch.Tensor, inputs: Sequence[EncodedInput], *, model: str = "", dataset: str = "",
            input_ids: torch.Tensor | None = None) -> BatchView:
    """A view of attention computed elsewhere (planted maps in tests, a cache): ``attention`` is (B, L, H, T, T)."""
    if attention.ndim != 5 or attention.shape[0] != len(inputs):
        raise ValueError(f"attention must be (B, L, H, T, T) with B = {len(inputs)} inputs, got {tuple(attention.shape)}")
    if input_ids is None:
        input_ids = torch.zeros(attention.shape[0], attention.shape[-1], dtype=torch.int64)
    return BatchView(model, dataset, list(inputs), attention, input_ids)


def forward_view(loaded: LoadedModel, items: Sequence[EncodedInput], *, dataset: str = "") -> BatchView:
    """Run ``loaded`` once over the padded batch of ``items`` and wrap the result in a view.

    Call inside ``torch.inference_mode()``. The forward pass is :func:`headstats.engine.forward.forward_attentions`
    (eager attention, ``output_attentions=True``), looked up at call time so that tests can count it.
    """
    from headstats.engine import forward as extraction

    device = next(loaded.model.parameters()).device
    pad_id = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    batch = extraction.pad_batch(list(items), pad_id, device)
    attention = extraction.forward_attentions(loaded, batch)
    return BatchView(loaded.name, dataset, batch.inputs, attention, batch.input_ids)
