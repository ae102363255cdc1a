"""The batch view: one forward pass of one model over one padded batch, and everything derived from it.

A :class:`BatchView` is what every collector sees. It holds the padded attention ``(B, L, H, T, T)`` of a
batch, the masks of its positions (real, special, [CLS], [SEP], segment), the inputs' ids, word alignment
and arcs, and a cache in which derived views (the attention with padded rows and keys zeroed, row means,
arc tensors, word-level maps: :meth:`BatchView.word_attention`) are computed once, on the first collector's request, and shared by the
others. Nothing of a view outlives its batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np
from headstats.lazy import torch

from headstats.errors import ModelError
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
    def device(self) -> torch.device:
        return self.attention.device

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
        return self.cached("layout", lambda: BatchLayout.from_inputs(self.inputs, self.width, self.device))

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

    @property
    def word_units(self) -> "WordUnits":
        """The word-level units of the batch (:class:`WordUnits`): rows and columns of :meth:`word_attention`."""
        return self.cached("word_units", lambda: WordUnits.from_inputs(self.inputs, self.width, self.device))

    def word_attention(self, from_word: str = "mean") -> torch.Tensor:
        """Word-level attention (B, L, H, U, U) of :func:`word_attention`, computed once per ``from_word`` and
        shared by every collector of the batch (METHODS 2.2)."""
        return self.cached(f"word_attention/{from_word}",
                           lambda: word_attention(self.masked_attention, self.word_units, from_word=from_word))

    def cached(self, key: str, compute: Callable[[], Any]) -> Any:
        """The derived view ``key``, computed by ``compute()`` the first time any collector asks for it.

        Keys are shared by every collector of the batch: name them after what they hold, with the options
        that change them (e.g. ``"arcs/dependent_to_head"``).
        """
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]


@dataclass(eq=False)
class MapFreeView(BatchView):
    """A view of a batch run without attention maps (:mod:`headstats.engine.mapfree`): :attr:`attention` is
    None, and :attr:`gathered` holds what the pass's collectors asked for in their
    :meth:`~headstats.engine.collector.Collector.gather` (row masses over given keys, a few diagonals, listed
    weights, row entropies), over every layer. Only collectors that declare
    :attr:`~headstats.engine.collector.Collector.map_free` are given one.

    """

    shape: tuple[int, int, int, int] = (0, 0, 0, 0)
    on: Any = "cpu"
    gathered: Any = None

    @property
    def device(self) -> torch.device:
        return torch.device(self.on)

    @property
    def size(self) -> int:
        return int(self.shape[0])

    @property
    def n_layers(self) -> int:
        return int(self.shape[1])

    @property
    def n_heads(self) -> int:
        return int(self.shape[2])

    @property
    def width(self) -> int:
        return int(self.shape[3])

    @property
    def masked_attention(self) -> torch.Tensor:
        raise RuntimeError("a map-free view has no attention maps; declare map_free = False on the collector")

    @property
    def row_means(self) -> torch.Tensor:
        """``1 / n``: a softmax row's mass over the real keys is 1 (padded keys have weight exactly 0), so the
        eager path's row means (METHODS 1.2's denominator) equal it to float32 rounding."""
        def compute() -> torch.Tensor:
            n = self.real.sum(-1).to(torch.float32)
            return (1.0 / n)[:, None, None, None].expand(self.size, self.n_layers, self.n_heads, self.width)
        return self.cached("row_means", compute)


def forward_map_free(loaded: LoadedModel, items: Sequence[EncodedInput], gather_of: Callable[[MapFreeView], Any],
                     *, dataset: str = "") -> MapFreeView:
    """One forward pass of ``loaded`` over the padded batch of ``items`` without attention maps
    (:func:`fused_views` with one gather and no maps).

    ``gather_of(view)`` says what to compute of every layer's attention (a :class:`~headstats.engine.mapfree.Gather`,
    from the view's layout before the pass); the view's :attr:`MapFreeView.gathered` holds it after. Call inside
    ``torch.inference_mode()``.
    """
    return fused_views(loaded, items, [gather_of], dataset=dataset, measures=())[0][0]


def fused_views(loaded: LoadedModel, items: Sequence[EncodedInput],
                gathers_of: Sequence[Callable[[MapFreeView], Any]], *, dataset: str = "",
                measures: Sequence[str] = ()) -> tuple[list[MapFreeView], dict[str, BatchView]]:
    """One forward pass of ``loaded`` over the padded batch of ``items`` through the fused attention path
    (:func:`headstats.engine.forward.forward_fused`): a :class:`MapFreeView` per entry of ``gathers_of`` (each
    ``gather_of(view)`` says what that view's collector asks; each is computed on its own), and the views of
    ``measures`` from the same pass's maps (none: no map is made), as :func:`forward_views` makes them.

    Non-finite attention stops as on the eager path (:func:`finite_attention`; a row's non-finite log-sum-exp in a
    pass without maps runs the batch with its maps to locate it). Call inside ``torch.inference_mode()``.
    """
    from headstats.engine import forward as extraction

    device = next(loaded.model.parameters()).device
    batch = _padded(loaded, items, device)
    width = int(batch.input_ids.shape[1])
    free = [MapFreeView(loaded.name, dataset, batch.inputs, None, batch.input_ids,
                        shape=(len(batch.inputs), loaded.n_layers, loaded.n_heads, width), on=device)
            for _ in gathers_of]
    gathers = [gather_of(view) for gather_of, view in zip(gathers_of, free)]
    found: list = []

    def maps() -> torch.Tensor:
        gathered, attention = extraction.forward_fused(loaded, batch, gathers, maps=True)
        found.extend(gathered)
        return attention

    views = _measure_views(loaded, batch, dataset, measures, maps) if measures else {}
    if not measures:
        found = extraction.forward_fused(loaded, batch, gathers)[0]
        if not all(gathered.finite for gathered in found):
            finite_attention(extraction.forward_attentions(loaded, batch), batch.inputs, loaded, dataset)
    for view, gathered in zip(free, found):
        view.gathered = gathered
    return free, views


def _padded(loaded: LoadedModel, items: Sequence[EncodedInput], device: Any):
    from headstats.engine import forward as extraction

    pad_id = loaded.tokenizer.pad_token_id if loaded.tokenizer.pad_token_id is not None else 0
    return extraction.pad_batch(list(items), pad_id, device)


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
    return forward_views(loaded, items, dataset=dataset)[WEIGHTS]


#: The measure of raw attention weights, ``A`` (every view's :attr:`BatchView.attention` unless stated).
WEIGHTS = "weights"
#: The attention measures a view can be made of, in one forward pass (METHODS 6.1): the weights ``A`` and the
#: norm-weighted ``A_norm[i, j] = alpha_ij ||f_h(x_j)|| / sum_k alpha_ik ||f_h(x_k)||``.
MEASURES: tuple[str, ...] = (WEIGHTS, "norm")


def forward_views(loaded: LoadedModel, items: Sequence[EncodedInput], *, dataset: str = "",
                  measures: Sequence[str] = (WEIGHTS,)) -> dict[str, BatchView]:
    """One forward pass of ``loaded`` over the padded batch of ``items`` with transformers' eager attention
    (:func:`headstats.engine.forward.forward_attentions`), as one view per measure (:func:`_measure_views`)."""
    from headstats.engine import forward as extraction

    batch = _padded(loaded, items, next(loaded.model.parameters()).device)
    return _measure_views(loaded, batch, dataset, measures, lambda: extraction.forward_attentions(loaded, batch))


def _measure_views(loaded: LoadedModel, batch: Any, dataset: str, measures: Sequence[str],
                   run: Callable[[], torch.Tensor]) -> dict[str, BatchView]:
    """One view per measure of the maps that ``run()`` returns (B, L, H, T, T), checked finite.

    ``"norm"`` reads each head's ``||f_h(x_j)||`` in the same pass (hooks on the stock model,
    :mod:`headstats.model.value_norms`) and renormalises the weights with them (:func:`norm_weighted`); its view
    shares the batch's inputs and ids and derives everything else (masks, word-level maps) from ``A_norm``.
    """
    from headstats.model.value_norms import capture_value_norms, norm_weighted

    unknown = [m for m in measures if m not in MEASURES]
    if unknown:
        raise ValueError(f"unknown attention measure {unknown[0]!r}; the measures are {', '.join(MEASURES)}")
    if "norm" not in measures:
        attention = finite_attention(run(), batch.inputs, loaded, dataset)
        return {WEIGHTS: BatchView(loaded.name, dataset, batch.inputs, attention, batch.input_ids)}
    with capture_value_norms(loaded.model, loaded.n_heads) as norms:
        attention = finite_attention(run(), batch.inputs, loaded, dataset)
    if len(norms) != attention.shape[1]:
        raise RuntimeError(f"read the value norms of {len(norms)} layers, but the model returned "
                           f"{attention.shape[1]} attention layers")
    views = {"norm": BatchView(loaded.name, dataset, batch.inputs,
                               norm_weighted(attention, torch.stack(norms, dim=1).to(attention.dtype)),
                               batch.input_ids)}
    if WEIGHTS in measures:
        views[WEIGHTS] = BatchView(loaded.name, dataset, batch.inputs, attention, batch.input_ids)
    return {m: views[m] for m in measures}


def finite_attention(attention: torch.Tensor, inputs: Sequence[EncodedInput], loaded: LoadedModel,
                     dataset: str) -> torch.Tensor:
    """``attention`` (B, L, H, T, T) itself when every weight of its inputs' real positions is finite.

    One reduction per batch: the weights of a softmax lie in [0, 1], so their sum is finite exactly when they
    all are. Only when it is not are the maps searched: NaN or inf among the real positions of an input is an
    error (every score of that head would be wrong: NaN was once scored as 0.0 in silence); NaN or inf in
    padded rows or keys only, which nothing reads, is set to 0.

    Raises
    ------
    ModelError
        From :func:`refuse_non_finite_maps`: the model, the data set, the first input (in file order) with a
        non-finite weight, its layer and head, and the likely cause (:func:`non_finite_cause`).
    """
    if bool(torch.isfinite(attention.sum())):
        return attention
    refuse_non_finite_maps(attention, inputs, what="attention", model=loaded.name, dataset=dataset,
                           cause=lambda: non_finite_cause(loaded.model))
    return torch.where(torch.isfinite(attention), attention, attention.new_zeros(()))


def refuse_non_finite_maps(maps: torch.Tensor, inputs: Sequence[EncodedInput], *, what: str, model: str,
                           dataset: str, cause: Callable[[], str]) -> None:
    """Stop when ``maps`` (B, L, H, T, T: attention, or its gradients) hold NaN or inf among an input's real
    rows and keys, naming the model, the data set, the first such input in file order, its first layer and
    head, how many of the batch's inputs are hit, and ``cause()``; padded positions are not looked at.

    Raises
    ------
    ModelError
    """
    bad = non_finite_heads(maps, inputs)
    if not bool(bad.any()):
        return
    rows = bad.any(-1).any(-1).nonzero().flatten().tolist()
    b = min(rows, key=lambda row: inputs[row].index)
    layer, head = (int(x) for x in bad[b].nonzero()[0])
    raise ModelError(
        f"model {model!r} gave non-finite {what} (NaN or inf) on data set {dataset!r}, input "
        f"{inputs[b].sentence_id!r} (layer {layer}, head {head}, counted from 0; {len(rows)} of the batch's "
        f"{len(inputs)} inputs): {cause()}; nothing was scored or written")


def non_finite_heads(maps: torch.Tensor, inputs: Sequence[EncodedInput]) -> torch.Tensor:
    """(B, L, H) bool: the heads whose map (B, L, H, T, T) of an input holds NaN or inf among its real rows
    and keys."""
    lengths = torch.tensor([item.length for item in inputs], device=maps.device)
    positions = torch.arange(maps.shape[-1], device=maps.device)
    real = positions[None, :] < lengths[:, None]
    pairs = (real[:, :, None] & real[:, None, :])[:, None, None]
    return (~torch.isfinite(maps) & pairs).any(-1).any(-1)


def non_finite_cause(model: Any) -> str:
    """The likely cause of a model's non-finite attention: its weights, its dtype, or the checkpoint itself."""
    damaged = [name for name, weight in model.named_parameters() if not bool(torch.isfinite(weight).all())]
    if damaged:
        return (f"{len(damaged)} of its weight tensors {'holds' if len(damaged) == 1 else 'hold'} NaN or inf "
                f"(first: {damaged[0]}), so the checkpoint is damaged; download or copy it again")
    dtype = str(getattr(model, "dtype", "")).replace("torch.", "")
    if dtype in ("float16", "bfloat16"):
        return f"its weights are finite, so {dtype} overflowed; run it in float32 (protocol: dtype: float32)"
    return (f"its weights are finite and it runs in {dtype or 'its dtype'}, so the checkpoint is damaged or not "
            "what its config.json says; check that it runs in transformers")


# ---------------------------------------------------------------------------------------------- word level
#: Kinds of word-level units (:class:`WordUnits`).
UNIT_WORD, UNIT_CLS, UNIT_SEP, UNIT_SPECIAL, UNIT_PIECE = 0, 1, 2, 3, 4
#: How the row of a word split into pieces is formed (METHODS 2.2): the mean of its pieces' rows (the paper),
#: or its first piece's row (the default of Clark et al.'s released extractor).
FROM_WORD = ("mean", "first")


@dataclass
class WordUnits:
    """The word-level units of a batch: what the rows and columns of :attr:`BatchView.word_attention` are.

    A unit is a word (all its pieces), [CLS], a [SEP] (each special position is a unit of its own), or a
    piece that belongs to no word (inputs without words: every non-special piece is a unit). Words that share a
    piece (the words of a UD multiword token such as ``gonna``, whose pieces are those of the token) form one
    unit. Units are ordered by their first piece.

    Attributes
    ----------
    membership : Tensor (B, U, T) float32
        1 where piece t belongs to unit u.
    kind : Tensor (B, U) int64
        ``UNIT_WORD``, ``UNIT_CLS``, ``UNIT_SEP``, ``UNIT_SPECIAL`` (another special token), ``UNIT_PIECE``;
        -1 for padded units.
    real : Tensor (B, U) bool
    unit_of_word : list of ndarray
        Per input, the unit of each word (``word_pieces`` order); -1 for a word without pieces.
    unit_of_piece : list of ndarray
        Per input, the unit of each real position.
    n_units : ndarray of int64
    """

    membership: torch.Tensor
    kind: torch.Tensor
    real: torch.Tensor
    unit_of_word: list[np.ndarray]
    unit_of_piece: list[np.ndarray]
    n_units: np.ndarray

    @property
    def special(self) -> torch.Tensor:
        """Units that are special tokens ([CLS], [SEP], others): never predictions of a word's head."""
        return self.real & (self.kind != UNIT_WORD) & (self.kind != UNIT_PIECE)

    @property
    def textual(self) -> torch.Tensor:
        """Units of text (words and stray pieces)."""
        return self.real & ~self.special

    @classmethod
    def from_inputs(cls, inputs: Sequence[EncodedInput], width: int,
                    device: torch.device | str = "cpu") -> "WordUnits":
        """Group every input's positions into units (see the class docstring)."""
        per_input = [_units_of(item) for item in inputs]
        U = max((len(kinds) for _, kinds, _ in per_input), default=0)
        B = len(inputs)
        membership = np.zeros((B, U, width), dtype=np.float32)
        kind = np.full((B, U), -1, dtype=np.int64)
        for b, (piece_unit, kinds, _) in enumerate(per_input):
            membership[b, piece_unit, np.arange(piece_unit.size)] = 1.0
            kind[b, : len(kinds)] = kinds
        n_units = np.array([len(k) for _, k, _ in per_input], dtype=np.int64)
        kind_t = torch.from_numpy(kind).to(device)
        return cls(torch.from_numpy(membership).to(device), kind_t, kind_t >= 0,
                   [w for _, _, w in per_input], [p for p, _, _ in per_input], n_units)


def _units_of(item: EncodedInput) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(unit of each position, kind of each unit, unit of each word)`` of one input (union of shared pieces)."""
    n = item.length
    parent = np.arange(n)

    def root(p: int) -> int:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = int(parent[p])
        return p

    for pieces in item.word_pieces:
        for p in pieces[1:]:
            a, b = root(pieces[0]), root(p)
            if a != b:
                parent[max(a, b)] = min(a, b)
    roots = np.array([root(p) for p in range(n)])
    first = {}
    for p in range(n):
        first.setdefault(int(roots[p]), len(first))  # units numbered by their first piece
    piece_unit = np.array([first[int(r)] for r in roots], dtype=np.int64)
    in_word = np.zeros(n, dtype=bool)
    for pieces in item.word_pieces:
        in_word[list(pieces)] = True
    kinds = np.full(len(first), UNIT_PIECE, dtype=np.int64)
    for p in range(n):
        u = piece_unit[p]
        if item.cls[p]:
            kinds[u] = UNIT_CLS
        elif item.sep[p]:
            kinds[u] = UNIT_SEP
        elif item.special[p]:
            kinds[u] = UNIT_SPECIAL
        elif in_word[p]:
            kinds[u] = UNIT_WORD
    unit_of_word = np.array([piece_unit[pieces[0]] if pieces else -1 for pieces in item.word_pieces],
                            dtype=np.int64)
    return piece_unit, kinds, unit_of_word


def word_attention(attention: torch.Tensor, units: WordUnits, *, from_word: str = "mean") -> torch.Tensor:
    r"""Word-level attention (Clark et al. 2019; METHODS 2.2), shape (B, L, H, U, U).

    Attention *to* a unit is the sum over its pieces; attention *from* a unit is the mean of its pieces' rows
    (``from_word="mean"``, the paper) or its first piece's row (``"first"``, the released extractor):

        W[u, v] = (1 / |u|) sum_{i in u} sum_{j in v} A[i, j]

    so each real unit's row sums to what its pieces' rows sum to (1). Padded units are 0.
    """
    if from_word not in FROM_WORD:
        raise ValueError(f"from_word must be one of {FROM_WORD}, not {from_word!r}")
    m = units.membership.to(attention.dtype)
    if from_word == "mean":
        rows = m / m.sum(-1, keepdim=True).clamp_min(1.0)
    else:
        first = (m.cumsum(-1) == 1) & (m > 0)
        rows = first.to(attention.dtype)
    to_units = torch.einsum("blhij,buj->blhiu", attention, m)
    return torch.einsum("bvi,blhiu->blhvu", rows, to_units)

