r"""Probing classifiers over all heads (Clark et al. 2019, section 5; METHODS 2.5).

Features. For every parsed input the collector keeps, over the words of the input (word-level units of text,
METHODS 2.2), the word-level attention of every head between every pair of words, ``A_k[d, c]``, as float16
(K = layers x heads; m words give K m^2 numbers: the per-word-pair features the probes need, never the
piece-level maps), the gold head of each word, and the piece ids of each word (for word vectors).

Probes, trained together with torch (Adam, lr 0.002, ``batch_size`` sentences per step, ``epochs`` passes,
seeded; :func:`run_probes`) on the inputs whose position in the file is not 4 mod 5, and evaluated on the
others (held out, 20 %):

- ``attention_only``: :math:`p(c \mid d) \propto \exp(\sum_k w_k A_k[d, c] + u_k A_k[c, d])`;
- ``attention_and_words``: the weights become :math:`W_k (v_c \oplus v_d)` and :math:`U_k (v_c \oplus v_d)`,
  with fixed word vectors v;
- ``distance_and_words`` (baseline): one hidden layer (ReLU, 200 units) over :math:`v_c \oplus v_d` and a
  one-hot of the clipped offset ``c - d`` (-10..10);
- ``right_branching`` (baseline, no training): every word's head is the next word (the last word's, the one
  before).

Word vectors default to the model's own input embeddings (a word's vector is the mean of its pieces'
embeddings; GloVe, the paper's choice, cannot be had offline), which the runner hands the collector from the model
it loaded for the pass (:attr:`~headstats.engine.collector.Context.input_embeddings`: nothing here loads a model); ``analysis_options.probing.vectors`` names a
text file of ``word v1 v2 ...`` lines instead (lower-cased look-up; unknown words get zeros). The score is the
unlabeled attachment score (UAS) on the held-out words, punctuation left out (as the paper); root words have
no head word and are neither trained on nor scored. Candidates are the other words of the input.

Paper (BERT-base, WSJ): right-branching 26, distance + GloVe 58, attention only 61, attention and GloVe 77.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.kernels import torch_threads
from headstats.analyses.probing.options import ProbingOptions
from headstats.analyses.probing.tables import PROBES_TABLE
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context
from headstats.lazy import torch
from headstats.model.identity import provenance_source

PROBES = ("right_branching", "distance_and_words", "attention_only", "attention_and_words")
MAX_DISTANCE = 10


def held_out(index: int) -> bool:
    """Inputs of position 4 mod 5 are held out for evaluation."""
    return index % 5 == 4


class ProbeFeatures(Collector):
    """Per parsed input: word-level attention between words (K, m, m) float16, gold heads, piece ids."""

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.options: ProbingOptions = collector_options(context, ProbingOptions)
        self._state = {"sentences": []}

    @property
    def needs_input_embeddings(self) -> bool:
        """The default word vectors are the model's input embeddings (none needed with a ``vectors`` file)."""
        return self.options.vectors is None

    def update(self, view: BatchView) -> None:
        if not any(item.arcs for item in view.inputs):
            return
        units = view.word_units
        attn = view.word_attention(self.options.from_word)
        textual = units.textual.cpu().numpy()
        ids = view.input_ids.cpu().numpy()
        membership = units.membership.cpu().numpy() > 0
        for row, item in enumerate(view.inputs):
            if not item.arcs:
                continue
            words = np.flatnonzero(textual[row])
            rank = {int(u): k for k, u in enumerate(words)}
            unit = units.unit_of_piece[row]
            gold = np.full(len(words), -1, np.int64)
            punct = np.zeros(len(words), bool)
            for arc in item.arcs:
                if not arc.dependent or not arc.head:
                    continue
                d, h = int(unit[arc.dependent[0]]), int(unit[arc.head[0]])
                if d == h or d not in rank or h not in rank or gold[rank[d]] >= 0:
                    continue
                gold[rank[d]] = rank[h]
                punct[rank[d]] = arc.relation == "punct"
            sub = attn[row][:, :, words][:, :, :, words]  # (L, H, m, m)
            feats = sub.reshape(-1, len(words), len(words)).cpu().numpy().astype(np.float16)
            pieces = [tuple(int(ids[row, p]) for p in np.flatnonzero(membership[row, u])) for u in words]
            self._state["sentences"].append({"index": item.index, "attention": feats, "gold": gold,
                                             "punct": punct, "pieces": pieces})

    @classmethod
    def merge(cls, states: Sequence[dict]) -> dict:
        return {"sentences": [s for state in states for s in state["sentences"]]}

    def tables(self) -> dict[str, pd.DataFrame]:
        """``probe_sentences``: one row per parsed input (``model, dataset, source, revision, index,
        attention, gold, punct, pieces``), what the analysis' finish step trains the probes on
        (:func:`train_probes`; it replaces this table by ``probes``), and ``probe_embeddings``: one row (``model,
        dataset, embeddings``), the input-embedding matrix the runner handed over (None without one), the word
        vectors' default. Nothing is trained here, so a shard merge or a second call costs nothing."""
        ctx = self.context
        prov = ctx.provenance.get(ctx.model, {})
        rows = [{"model": ctx.model, "dataset": ctx.dataset, "source": provenance_source(prov, ctx.model),
                 "revision": prov.get("revision"), **s}
                for s in sorted(self._state["sentences"], key=lambda s: s["index"])]
        embeddings = pd.DataFrame([{"model": ctx.model, "dataset": ctx.dataset, "embeddings": ctx.input_embeddings}],
                                  columns=EMBEDDING_COLUMNS)
        return {"probe_sentences": pd.DataFrame(rows, columns=SENTENCE_COLUMNS), "probe_embeddings": embeddings}


#: Columns of the ``probe_sentences`` table that :meth:`ProbeFeatures.tables` hands to :func:`train_probes`.
SENTENCE_COLUMNS = ["model", "dataset", "source", "revision", "index", "attention", "gold", "punct", "pieces"]
#: Columns of its ``probe_embeddings`` table: the (vocabulary, hidden) input-embedding matrix of the model.
EMBEDDING_COLUMNS = ["model", "dataset", "embeddings"]


def train_probes(tables: Mapping[str, pd.DataFrame], statistics: Any, options: ProbingOptions | None,
                 seed: int, log: Callable[[str], None] = lambda message: None) -> dict[str, pd.DataFrame | None]:
    """The analysis' finish step (before the statistics layer's :func:`headstats.analyses.probing.finish.finish_probes`):
    every probe trained once per (model, data set) on the inputs not held out and scored on the others.

    Returns ``probes`` (``model, dataset, probe, vectors, n_train, n_test, n_words, correct, uas, seed`` and
    the discordant counts against both baselines on the same held-out words, ``only_vs_<baseline>`` and
    ``<baseline>_only``) and drops ``probe_sentences`` and ``probe_embeddings`` (they are not written). ``log`` gets a line as the probes of
    each (model, data set) start training (a minute or more on a CPU).
    """
    options = options if options is not None else ProbingOptions()
    frame = tables.get("probe_sentences")
    embeddings = tables.get("probe_embeddings")
    matrices = ({} if embeddings is None else
                {(m, d): e for m, d, e in embeddings[EMBEDDING_COLUMNS].itertuples(index=False)})
    rows = []
    if frame is not None and not frame.empty:
        for (model, dataset), part in frame.groupby(["model", "dataset"], sort=False):
            sentences = [dict(zip(SENTENCE_COLUMNS[4:], r)) for r in
                         part.sort_values("index")[SENTENCE_COLUMNS[4:]].itertuples(index=False)]
            first = part.iloc[0]
            prov = {"path": first["source"], "revision": first["revision"]}
            log(f"probing: training {len(PROBES)} probes on {model} / {dataset} ({len(sentences):,} sentences, "
                f"{options.epochs} epochs)")
            rows += probe_rows(model, dataset, sentences, prov, options, seed,
                               embeddings=matrices.get((model, dataset)))
    return {PROBES_TABLE.name: pd.DataFrame(rows, columns=PROBE_COLUMNS), "probe_sentences": None,
            "probe_embeddings": None}


#: Columns of ``probes`` as :func:`train_probes` makes it.
PROBE_COLUMNS = ["model", "dataset", "probe", "vectors", "n_train", "n_test", "n_words", "correct", "uas", "seed",
                 "only_vs_right_branching", "right_branching_only", "only_vs_distance_and_words",
                 "distance_and_words_only"]


def probe_rows(model: str, dataset: str, sentences: Sequence[dict], provenance: Mapping[str, Any],
               options: ProbingOptions, seed: int, *, embeddings: Any = None) -> list[dict]:
    """The rows of ``probes`` for one (model, data set): each probe trained and scored on the same words
    (``embeddings``: the model's input-embedding matrix, the word vectors' default)."""
    train = [s for s in sentences if not held_out(s["index"])]
    test = [s for s in sentences if held_out(s["index"])]
    vectors, source = word_vectors(provenance, options, model, embeddings=embeddings)
    right = run_probes(PROBES, train, test, vectors, seed=seed, lr=options.lr, hidden=options.hidden,
                       batch_size=options.batch_size, epochs=options.epochs)
    rows = []
    for probe, ok in right.items():
        n = len(ok)
        row = {"model": model, "dataset": dataset, "probe": probe, "vectors": source if "words" in probe else "",
               "n_train": len(train), "n_test": len(test), "n_words": n, "correct": int(ok.sum()),
               "uas": ok.mean() if n else np.nan, "seed": seed}
        for base in ("right_branching", "distance_and_words"):
            row[f"only_vs_{base}"] = int((ok & ~right[base]).sum())
            row[f"{base}_only"] = int((~ok & right[base]).sum())
        rows.append(row)
    return rows


def word_vectors(provenance: Mapping[str, Any], options: ProbingOptions, model: str = "", *,
                 embeddings: Any = None) -> tuple[Any, str]:
    """``(kind, table, dim, tokenizer)`` of the word vectors, and a label of their source: the ``vectors`` file
    of the options (the words found by the model's tokenizer, read from its ``provenance``), else ``embeddings``,
    the model's input-embedding matrix that the runner handed the collector
    (:attr:`~headstats.engine.collector.Context.input_embeddings`)."""
    if options.vectors:
        from headstats.model.loading import load_tokenizer

        source, revision = provenance_source(provenance, model), provenance.get("revision")
        table = _read_vectors(options.vectors)
        dim = len(next(iter(table.values())))
        return ("file", table, dim, load_tokenizer(source, revision=revision)), f"file:{options.vectors}"
    if embeddings is None:
        raise ValueError(f"no input embeddings of model {model!r} for the probes' word vectors: run the probing "
                         "collector through headstats.engine.runner.Runner (which hands them over), or give "
                         "analysis_options.probing.vectors")
    return ("embeddings", embeddings, embeddings.shape[1], None), "input_embeddings"


def _read_vectors(path: str) -> dict[str, np.ndarray]:
    table = {}
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            parts = line.rstrip().split(" ")
            if len(parts) > 2:
                table[parts[0].lower()] = np.asarray(parts[1:], dtype=np.float32)
    if not table:
        from headstats.errors import DataError

        raise DataError(f"word-vector file {path!r} holds no 'word v1 v2 ...' line; give a GloVe-style text file")
    return table


def sentence_vectors(sentence: dict, vectors: Any) -> torch.Tensor:
    """(m, D) word vectors of one sentence: the mean of its pieces' input embeddings, or the file's vector of
    the word (its pieces decoded by the model's tokenizer; zeros when unknown)."""
    kind, table, dim, tokenizer = vectors
    if kind == "embeddings":
        rows = [table[list(p)].mean(0) if p else np.zeros(dim, np.float32) for p in sentence["pieces"]]
    else:
        words = [tokenizer.decode(list(p)).replace(" ", "").lower() for p in sentence["pieces"]]
        rows = [table.get(w, np.zeros(dim, np.float32)) for w in words]
    return torch.from_numpy(np.stack(rows).astype(np.float32))


def _scored(sentence: dict) -> np.ndarray:
    return (sentence["gold"] >= 0) & ~sentence["punct"]


def right_branching(m: int) -> np.ndarray:
    """Heads of right-branching: i + 1, the last word i - 1."""
    pred = np.arange(1, m + 1)
    pred[-1] = max(m - 2, 0)
    return pred


@functools.cache
def _probe_class() -> type:
    """The probe module class (defined at first use: its base class is torch's, imported lazily)."""

    class Probe(torch.nn.Module):
        def __init__(self, kind: str, K: int, D: int, hidden: int) -> None:
            super().__init__()
            self.kind = kind
            if kind == "attention_only":
                self.w = torch.nn.Parameter(torch.zeros(K))
                self.u = torch.nn.Parameter(torch.zeros(K))
            elif kind == "attention_and_words":
                self.W = torch.nn.Linear(2 * D, K, bias=True)
                self.U = torch.nn.Linear(2 * D, K, bias=True)
            else:
                self.mlp = torch.nn.Sequential(torch.nn.Linear(2 * D + 2 * MAX_DISTANCE + 1, hidden), torch.nn.ReLU(),
                                               torch.nn.Linear(hidden, 1))

        def forward(self, attention: torch.Tensor, vectors: torch.Tensor | None) -> torch.Tensor:
            """Logits (B, m dependents, m candidates); ``attention`` is (B, K, m, m) with ``[b, k, d, c] = A_k[d, c]``
            and ``vectors`` (B, m, D). A linear map of the pair ``v_c ++ v_d`` is computed as the sum of its two
            halves' maps, so that no (B, m, m, 2D) tensor is made."""
            m = attention.shape[-1]
            if self.kind == "attention_only":
                return (torch.einsum("k,bkdc->bdc", self.w, attention)
                        + torch.einsum("k,bkcd->bdc", self.u, attention))
            if self.kind == "attention_and_words":
                return (self._pair_weighted(self.W, vectors, attention)
                        + self._pair_weighted(self.U, vectors, attention.transpose(-1, -2)))
            first, D = self.mlp[0], vectors.shape[-1]
            offset = (torch.arange(m)[None, :] - torch.arange(m)[:, None]).clamp(-MAX_DISTANCE, MAX_DISTANCE) + MAX_DISTANCE
            hidden = (torch.nn.functional.linear(vectors, first.weight[:, :D])[:, None, :, :]  # v_c, at [b, d, c]
                      + torch.nn.functional.linear(vectors, first.weight[:, D:2 * D])[:, :, None, :]  # v_d
                      + first.weight[:, 2 * D:].T[offset][None] + first.bias)  # one-hot offset c - d
            return self.mlp[2](self.mlp[1](hidden))[..., 0]

        @staticmethod
        def _pair_weighted(linear: Any, vectors: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
            """(B, d, c): sum_k (linear(v_c ++ v_d))_k attention[b, k, d, c]."""
            D = vectors.shape[-1]
            on_c = torch.nn.functional.linear(vectors, linear.weight[:, :D])  # (B, m, K), indexed by c
            on_d = torch.nn.functional.linear(vectors, linear.weight[:, D:], linear.bias)  # indexed by d
            return torch.einsum("bck,bkdc->bdc", on_c, attention) + torch.einsum("bdk,bkdc->bdc", on_d, attention)

    return Probe


def run_probe(kind: str, train: Sequence[dict], test: Sequence[dict], vectors: Any, *, seed: int = 0,
              lr: float = 0.002, hidden: int = 200, batch_size: int = 4, epochs: int = 2) -> np.ndarray:
    """One probe of :func:`run_probes`: for every scored word of ``test`` in order, whether its head is
    predicted."""
    return run_probes((kind,), train, test, vectors, seed=seed, lr=lr, hidden=hidden, batch_size=batch_size,
                      epochs=epochs)[kind]


def run_probes(kinds: Sequence[str], train: Sequence[dict], test: Sequence[dict], vectors: Any, *, seed: int = 0,
               lr: float = 0.002, hidden: int = 200, batch_size: int = 4, epochs: int = 2) -> dict[str, np.ndarray]:
    """Train the probes ``kinds`` together and return, per probe, for every scored word of ``test`` in order,
    whether its head is predicted (the same words, in the same order, for every probe).

    Training: ``epochs`` passes over ``train`` in a seeded order, ``batch_size`` sentences per Adam step (padded
    to the batch's longest; the loss is the mean cross-entropy over the batch's scored words). The probes
    share each batch's features (attention, word vectors) and one optimiser over their parameters; their
    losses are summed, and as Adam is per parameter each probe is trained as it would be alone.
    """
    out = {}
    if "right_branching" in kinds:
        out["right_branching"] = np.concatenate(
            [np.zeros(0, bool)] + [(right_branching(len(s["gold"])) == s["gold"])[_scored(s)] for s in test])
    learned = [k for k in kinds if k != "right_branching"]
    usable = [s for s in train if _scored(s).any() and len(s["gold"]) >= 2]
    if not learned:
        return out
    if not usable:
        return out | {k: np.zeros(sum(int(_scored(s).sum()) for s in test), bool) for k in learned}
    with torch_threads(1):  # small steps: one thread (kernels.torch_threads says why)
        return out | _train_and_score(learned, usable, test, vectors, seed=seed, lr=lr, hidden=hidden,
                                      batch_size=batch_size, epochs=epochs)


def _train_and_score(learned: Sequence[str], usable: Sequence[dict], test: Sequence[dict], vectors: Any, *,
                     seed: int, lr: float, hidden: int, batch_size: int, epochs: int) -> dict[str, np.ndarray]:
    """:func:`run_probes`' learned probes: trained on ``usable``, then whether each scored word of ``test`` gets
    its head."""
    torch.manual_seed(seed)
    K, D = usable[0]["attention"].shape[0], (vectors[2] if vectors is not None else 0)
    probes = {k: _probe_class()(k, K, D, hidden) for k in learned}
    optimiser = torch.optim.Adam([p for probe in probes.values() for p in probe.parameters()], lr=lr)
    rng = np.random.default_rng(seed)
    words = any(k != "attention_only" for k in learned)
    with torch.inference_mode(False), torch.enable_grad():
        for _ in range(epochs):
            order = rng.permutation(len(usable))
            for begin in range(0, len(order), batch_size):
                batch = _padded([usable[int(k)] for k in order[begin:begin + batch_size]], vectors, words)
                keep = batch["keep"]
                loss = sum(torch.nn.functional.cross_entropy(_batch_logits(probe, batch)[keep], batch["gold"][keep])
                           for probe in probes.values())
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
    right = {k: [np.zeros(0, bool)] for k in learned}
    scored = [s for s in test if _scored(s).any()]
    with torch.no_grad():
        for begin in range(0, len(scored), 64):
            batch = _padded(scored[begin:begin + 64], vectors, words)
            keep = batch["keep"]
            for k, probe in probes.items():
                right[k].append((_batch_logits(probe, batch).argmax(-1)[keep] == batch["gold"][keep]).numpy())
    return {k: np.concatenate(v) for k, v in right.items()}


def _padded(sentences: Sequence[dict], vectors: Any, words: bool) -> dict[str, Any]:
    """One batch: ``attention`` (B, K, M, M) zero-padded, ``vectors`` (B, M, D) or None, ``candidate``
    (B, M, M: word c is a candidate head of word d: both real words, c != d), ``keep`` (B, M: scored words)
    and ``gold`` (B, M)."""
    B, M, K = len(sentences), max(len(s["gold"]) for s in sentences), sentences[0]["attention"].shape[0]
    attention = np.zeros((B, K, M, M), np.float32)
    gold = np.zeros((B, M), np.int64)
    keep = np.zeros((B, M), bool)
    real = np.zeros((B, M), bool)
    vecs = np.zeros((B, M, vectors[2]), np.float32) if words else None
    for b, s in enumerate(sentences):
        m = len(s["gold"])
        attention[b, :, :m, :m] = s["attention"]
        gold[b, :m] = np.maximum(s["gold"], 0)
        keep[b, :m] = _scored(s)
        real[b, :m] = True
        if words:
            vecs[b, :m] = sentence_vectors(s, vectors).numpy()
    candidate = real[:, None, :] & real[:, :, None] & ~np.eye(M, dtype=bool)[None]
    return {"attention": torch.from_numpy(attention), "vectors": None if vecs is None else torch.from_numpy(vecs),
            "candidate": torch.from_numpy(candidate), "keep": torch.from_numpy(keep), "gold": torch.from_numpy(gold)}


def _batch_logits(probe: Any, batch: dict[str, Any]) -> torch.Tensor:
    """(B, M dependents, M candidates) logits, -inf where c is no candidate head of d."""
    return probe(batch["attention"], batch["vectors"]).masked_fill(~batch["candidate"], float("-inf"))


