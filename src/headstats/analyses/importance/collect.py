r"""Head importance: what the model's task loses when a head is removed, and its gradient (Michel et al. 2019).

For a model with a task head (a classifier fine-tuned with ``headstats finetune``, or a masked-LM head;
:func:`headstats.model.task_heads.task_head`) and every input x, layer l and head h:

- **ablation effect** (mean ablation by default, ``analysis_options.importance.ablation``): head (l, h)'s output
  :math:`z_{lh}` is replaced by its mean :math:`\bar z_{lh}` over the real positions of the data set's inputs
  (``mean``) or by zeros (``zero``, Michel et al.'s mask), every other head unchanged, and

      delta_loss(x, l, h)      = L(x; z_lh <- r) - L(x),
      delta_p_correct(x, l, h) = p_y(x; z_lh <- r) - p_y(x),
      delta_correct(x, l, h)   = 1[argmax = y](x; z_lh <- r) - 1[argmax = y](x),

  with L the cross-entropy of the gold class y (the record's label, mapped by the classifier's ``label2id``;
  the model's own prediction where an input has no label, counted in ``n_predicted_labels``), or for a
  masked-LM head the mean negative log-likelihood of the masked pieces (``mask_share`` of the pieces, seeded
  per input), p_y their mean probability and correctness their share predicted right;
- **gradient importance** (Michel et al. 2019, eq. 2 before the expectation): with a gate :math:`\xi_{lh}`
  multiplying the head's output, :math:`I(x, l, h) = |\partial L(x) / \partial \xi_{lh}|` at
  :math:`\xi = 1`, every input's own gradient from one backward pass per batch (each input has its own gates;
  :class:`headstats.model.task_heads.HeadPatch`).

A model without a task head (the default model, a bare ``BertModel``) gets the **task-free effect**: the cosine
distance between the mean-pooled last hidden layer with the head ablated and without,
``cosine_distance(x, l, h) = 1 - cos(pool(x; z_lh <- r), pool(x))``, and a one-line note in
``importance_notes``. A classifier fine-tuned on another GLUE task than the data set's is skipped with a note.

Per-input values are a :class:`~headstats.measures.MeasureArray` of measures :data:`MEASURES`; the declared
hypothesis ``ablation_raises_loss`` (H0: mean delta_loss <= 0) is tested per head with the protocol's test and
correction (``importance_tests``), and :func:`headstats.analyses.importance.finish.finish_importance` adds the tests over
seeds, the pruning curve and the claims' inputs.

**Pruning curve** (Michel et al.'s Figure 3, cross-fitted): the inputs are split in two seeded halves; heads are
ordered by their mean importance (``prune_by``) on one half and removed, least important first, in the share
``s`` of ``prune_shares`` at once on the inputs of the other half (the same ablation), and the other way round,
so that no input is evaluated with an order estimated on itself. Per input and share: loss, p_y and
correctness (``importance_pruning_inputs``).

**The pass.** The engine's own forward pass carries attention only; the collector declares that it needs the
checkpoint with its head and gradients (``needs_task_model``, ``needs_gradients``): the runner loads it once per
group of models and, per batch, calls ``update`` with gradients enabled, which runs one forward and backward pass
(base metrics, gradients and the sums of every head's output). The ablations need the mean over the data set, so
the collector declares them too (``needs_ablations``): once a chunk's batches are done, the runner runs the
:class:`~headstats.engine.ablation.AblationBatch` es that :meth:`ImportanceCollector.ablations` yields, all
``L x H`` single-head ablations of a batch as copies of it in a few forward passes of at most ``max_tokens``
pieces (a batch of head masks per pass), then the pruning passes. The mean is the chunk's (``execution.
chunk_size`` records, 1,024 by default): the data set's whenever it fits in one chunk.
"""

from __future__ import annotations

import inspect
import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Generator, Sequence

import numpy as np
import pandas as pd

from headstats.analyses import collector_options
from headstats.analyses.importance.options import ImportanceOptions
from headstats.analyses.importance.tables import IMPORTANCE, IMPORTANCE_NOTES, IMPORTANCE_PRUNING_INPUTS
from headstats.engine.ablation import AblationBatch
from headstats.engine.batch import BatchView
from headstats.engine.collector import Collector, Context, ScoreState
from headstats.engine.forward import pad_batch
from headstats.lazy import torch
from headstats.measures import MeasureArray
from headstats.model.encoding import EncodedInput


#: Per-input, per-head measures, in the order of the MeasureArray's last axis.
MEASURES = ("delta_loss", "delta_p_correct", "delta_correct", "gradient", "cosine_distance")
#: Per-input metrics of the model (unablated, or pruned).
METRICS = ("loss", "p_correct", "correct")
#: Bytes of masked-LM logits one ablation pass may hold.
MLM_LOGIT_BYTES = 256 << 20


@dataclass
class ImportanceState:
    """What one chunk (or the merge of chunks) of the ``importance`` collector holds.

    Attributes
    ----------
    heads : ScoreState
        ``(N, L, H, len(MEASURES))`` per-input measures.
    base : ScoreState
        ``(N, len(METRICS) + 1)``: the unablated metrics and the input's half (0 or 1) of the pruning split.
    pruned : ScoreState
        ``(N, S, len(METRICS))``: the metrics with the shares ``shares`` of the heads removed.
    info : dict
        ``kind``, ``status`` (``task``, ``task-free``, ``skipped``), ``reason``, ``shares``, ``n_predicted_labels``,
        ``mean_norm`` (the mean replacement's norm per head, for the report).
    """

    heads: ScoreState
    base: ScoreState
    pruned: ScoreState
    info: dict

    @classmethod
    def empty(cls, n_layers: int, n_heads: int, shares: Sequence[float], info: dict) -> "ImportanceState":
        def part(shape: tuple[int, ...], names: Sequence[str]) -> ScoreState:
            return ScoreState(np.zeros(0, np.int64), np.zeros(0, object), np.zeros((0, *shape), np.float32),
                              tuple(names), np.zeros((0, len(names)), np.float32))
        return cls(part((n_layers, n_heads, len(MEASURES)), MEASURES), part((len(METRICS) + 1,), (*METRICS, "half")),
                   part((len(shares), len(METRICS)), METRICS), dict(info))


def _accepts_token_types(model: Any) -> bool:
    return "token_type_ids" in inspect.signature(model.forward).parameters


def _finetuned_task(source: str | None) -> str | None:
    """The GLUE task a ``headstats finetune`` checkpoint was trained on (None: not such a checkpoint)."""
    from headstats.model.finetune import MANIFEST_NAME

    if not source or not (Path(source) / MANIFEST_NAME).is_file():
        return None
    try:
        return json.loads((Path(source) / MANIFEST_NAME).read_text(encoding="utf-8")).get("task")
    except (OSError, ValueError):
        return None


def _dataset_task(task: str | None) -> str | None:
    """The canonical name of a data set's GLUE task (None: not a GLUE data set)."""
    from headstats.inputs.glue import get_task

    return None if task is None else get_task(task).name


def single_head_gates(n_layers: int, n_heads: int) -> np.ndarray:
    """``(L H, L, H)`` gates: copy k keeps every head but head k (row-major: k = l H + h)."""
    K = n_layers * n_heads
    return (1.0 - np.eye(K, dtype=np.float32)).reshape(K, n_layers, n_heads)


def pruning_gates(order: np.ndarray, shares: Sequence[float], n_layers: int, n_heads: int) -> np.ndarray:
    """``(S, L, H)`` gates: for share s, the first ``round(s L H)`` heads of ``order`` (flat indices, least
    important first) removed."""
    K = n_layers * n_heads
    gates = np.ones((len(shares), K), np.float32)
    for i, share in enumerate(shares):
        gates[i, order[: int(round(share * K))]] = 0.0
    return gates.reshape(len(shares), n_layers, n_heads)


def split_halves(index: np.ndarray, seed: int) -> np.ndarray:
    """0/1 half of every input (by its position in the data set), a seeded permutation of the sorted positions:
    the first ``ceil(n / 2)`` in half 0."""
    order = np.argsort(index, kind="stable")
    perm = np.random.default_rng([seed, 25]).permutation(order.size)
    half = np.empty(order.size, np.int64)
    half[order[perm]] = (np.arange(order.size) >= math.ceil(order.size / 2)).astype(np.int64)
    return half


class ImportanceCollector(Collector):
    """Ablation effects and gradient importance of every head per input (module docstring)."""

    version: ClassVar[str] = "1"
    #: The pruning halves and the masked-LM masks depend on the seed.
    seeded: ClassVar[bool] = True
    #: The job carries the data set's GLUE task (``options["glue_task"]``): a classifier of another task is skipped.
    reads_task: ClassVar[bool] = True
    #: The runner hands it the model with its task head, and runs its batches with gradients enabled.
    needs_task_model: ClassVar[bool] = True
    needs_gradients: ClassVar[bool] = True
    #: The runner runs its ablation batches (:meth:`ablations`) once a chunk's batches are done.
    needs_ablations: ClassVar[bool] = True

    def __init__(self, context: Context) -> None:
        super().__init__(context)
        self.options: ImportanceOptions = collector_options(context, ImportanceOptions)
        self.seed = int(context.seed)
        self._dataset_task = _dataset_task(context.options.get("glue_task"))
        info = {"kind": None, "status": None, "reason": "", "ablation": self.options.ablation,
                "shares": list(self.options.prune_shares), "n_predicted_labels": 0, "prune_by": self.options.prune_by}
        self._state = ImportanceState.empty(context.n_layers, context.n_heads, self.options.prune_shares, info)
        self._task: Any = None  # the LoadedModel with its task head
        self._kind: str | None = None  # its task: "classifier", "mlm" or None (task-free)
        self._pending: list[dict] = []
        self._sums: Any = None
        self._count = 0

    # ------------------------------------------------------------------ loading
    def _load(self) -> bool:
        info = self._state.info
        if self._task is not None:
            return True
        if info["status"] == "skipped":
            return False
        from headstats.analyses.gradients.collect import TASKS

        prov = self.context.provenance.get(self.context.model, {})
        trained = _finetuned_task(prov.get("path"))
        if trained is not None and self._dataset_task is not None and trained != self._dataset_task:
            info.update(status="skipped", reason=f"the classifier was fine-tuned on {trained}, the data set is "
                                                 f"{self._dataset_task}: its loss there means nothing")
            return False
        loaded = self.context.task_model(prov.get("dtype", "float32"))
        self._task = loaded
        self._kind = TASKS.get(loaded.head)
        info.update(kind=self._kind, status="task" if self._kind else "task-free", reason=loaded.head_note)
        if self._kind is None:
            info["reason"] = (f"no task head ({loaded.head_note.split(' (')[0]}): the task-free effect, cosine "
                              "distance of the mean-pooled last layer under ablation, is measured instead")
            warnings.warn(f"importance: {self.context.model!r} on {self.context.dataset!r}: {info['reason']}",
                          stacklevel=2)
        return True

    # ------------------------------------------------------------------ one batch
    def _prepare(self, items: Sequence[EncodedInput]) -> dict[str, Any]:
        task = self._task
        model = task.model
        device = next(model.parameters()).device
        pad = task.tokenizer.pad_token_id if task.tokenizer.pad_token_id is not None else 0
        batch = pad_batch(list(items), pad, device)
        ids = batch.input_ids.clone()
        prep = {"ids": ids, "mask": batch.attention_mask.clone(),
                "types": batch.token_type_ids.clone() if _accepts_token_types(model) else None}
        if self._kind == "classifier":
            label2id = task.label2id
            prep["target"] = torch.tensor([label2id.get(str(it.label), -1) if it.label is not None else -1
                                           for it in items], dtype=torch.long, device=device)
        elif self._kind == "mlm":
            from headstats.analyses.gradients.collect import mask_positions

            labels = torch.full_like(ids, -100)
            for b, item in enumerate(items):
                positions = torch.as_tensor(mask_positions(item, seed=self.seed, share=self.options.mask_share),
                                            dtype=torch.long, device=device)
                labels[b, positions] = ids[b, positions]
                ids[b, positions] = task.tokenizer.mask_token_id
            prep["target"] = labels
        return prep

    def _run(self, prep: dict, gates: Any, *, record: Any):
        """The grad-enabled pass of a prepared batch with ``gates`` ``(B, L, H)``, adding every head's output at the
        ``record`` positions to the sums its mean ablation replaces it by."""
        from headstats.model.task_heads import HeadPatch

        task = self._task
        kwargs = {"input_ids": prep["ids"], "attention_mask": prep["mask"]}
        if prep["types"] is not None:
            kwargs["token_type_ids"] = prep["types"]
        with HeadPatch(task.model, self.context.n_heads, gates=gates, record=record) as patch:
            out = task.model(**kwargs)
        self._sums = patch.sums if self._sums is None else self._sums + patch.sums
        self._count += patch.count
        return out

    def _metrics(self, out: Any, target: Any, mask: Any) -> dict[str, Any]:
        kind = self._kind
        if kind == "classifier":
            logp = torch.log_softmax(out.logits.float(), -1)
            picked = logp.gather(-1, target[:, None])[:, 0]
            return {"loss": -picked, "p_correct": picked.exp(),
                    "correct": (logp.argmax(-1) == target).float()}
        if kind == "mlm":
            logp = torch.log_softmax(out.logits.float(), -1)
            picked = logp.gather(-1, target.clamp_min(0)[..., None])[..., 0]
            keep = (target >= 0).float()
            n = keep.sum(-1).clamp_min(1)
            right = (logp.argmax(-1) == target).float()
            return {"loss": -(picked * keep).sum(-1) / n, "p_correct": (picked.exp() * keep).sum(-1) / n,
                    "correct": (right * keep).sum(-1) / n}
        hidden = out.last_hidden_state.float()
        m = mask.float()[..., None]
        return {"pooled": (hidden * m).sum(1) / m.sum(1).clamp_min(1)}

    def update(self, view: BatchView) -> None:
        if not self._load():
            return
        L, H = self.context.n_layers, self.context.n_heads
        # the runner's grad-enabled batch (needs_gradients)
        prep = self._prepare(view.inputs)
        B = prep["ids"].shape[0]
        device = prep["ids"].device
        has_task = self._kind is not None
        gates = torch.ones((B, L, H), device=device, requires_grad=has_task)
        out = self._run(prep, gates, record=prep["mask"].bool())
        if self._kind == "classifier":
            missing = prep["target"] < 0
            self._state.info["n_predicted_labels"] += int(missing.sum())
            prep["target"] = torch.where(missing, out.logits.detach().argmax(-1), prep["target"])
        metrics = self._metrics(out, prep.get("target"), prep["mask"])
        if has_task:
            grad = torch.autograd.grad(metrics["loss"].sum(), gates)[0].abs().detach()
        else:
            grad = torch.full((B, L, H), float("nan"), device=device)
        base = {k: v.detach() for k, v in metrics.items()}
        self._pending.append({"items": list(view.inputs), "prep": {k: (v.detach() if v is not None else None)
                                                                   for k, v in prep.items()},
                              "base": base, "grad": grad})

    # ------------------------------------------------------------------ ablations and pruning, per chunk
    def _ablation(self, entry: dict, gates: np.ndarray, replacement: Any) -> AblationBatch:
        """A pending batch under every gate pattern ``gates`` ``(K, B, L, H)``, for the runner; its result is
        ``{metric: (B, K)}`` (``cosine_distance`` to the unablated pooling without a task head)."""
        prep, base = entry["prep"], entry["base"]
        inputs = {"input_ids": prep["ids"], "attention_mask": prep["mask"]}
        if prep["types"] is not None:
            inputs["token_type_ids"] = prep["types"]
        T = prep["ids"].shape[1]
        vocab = int(self._task.model.config.vocab_size) if self._kind == "mlm" else 0

        def reduce(result: Any, n: int) -> dict[str, Any]:
            target = prep.get("target")
            target = None if target is None else target.repeat(n, *([1] * (target.dim() - 1)))
            metrics = self._metrics(result, target, prep["mask"].repeat(n, 1))
            if "pooled" in metrics:
                ref = base["pooled"].repeat(n, 1)
                metrics = {"cosine_distance": 1 - torch.nn.functional.cosine_similarity(
                    metrics["pooled"].double(), ref.double(), dim=-1)}
            return metrics

        return AblationBatch(self._task.model, inputs, gates, reduce, replacement=replacement,
                             max_tokens=self.options.max_tokens, max_bytes=MLM_LOGIT_BYTES if vocab else 0,
                             bytes_per_sequence=4 * T * vocab)

    def _replacement(self) -> Any:
        if self.options.ablation == "zero" or self._sums is None:
            return None
        return (self._sums / max(self._count, 1)).float()

    def ablations(self) -> Generator[AblationBatch, dict, None]:
        """The ablation batches of the batches kept since the last state, for the runner (``needs_ablations``):
        every single-head ablation of each batch, then, with the orders estimated on the other half, the pruning
        passes (module docstring); each ``yield`` receives the batch's metrics ``{metric: (B, K)}``."""
        if not self._pending:
            return
        L, H = self.context.n_layers, self.context.n_heads
        replacement = self._replacement()
        single = single_head_gates(L, H)
        heads, bases, indexes, ids = [], [], [], []
        for entry in self._pending:
            B = len(entry["items"])
            res = yield self._ablation(entry, np.repeat(single[:, None], B, axis=1), replacement)
            values = np.full((B, L, H, len(MEASURES)), np.nan, np.float64)
            if self._kind is not None:
                base = {k: entry["base"][k].double().cpu().numpy() for k in METRICS}
                for m, name in ((0, "loss"), (1, "p_correct"), (2, "correct")):
                    values[..., m] = (res[name] - base[name][:, None]).reshape(B, L, H)
                values[..., 3] = entry["grad"].double().cpu().numpy()
                bases.append(np.stack([base[k] for k in METRICS], -1))
            else:
                values[..., 4] = res["cosine_distance"].reshape(B, L, H)
                bases.append(np.full((B, len(METRICS)), np.nan))
            heads.append(values)
            indexes.append(np.array([it.index for it in entry["items"]], np.int64))
            ids.append(np.array([it.sentence_id for it in entry["items"]], dtype=object))
        index = np.concatenate(indexes)
        all_heads = np.concatenate(heads)
        half = split_halves(index, self.seed)
        shares = self.options.prune_shares
        pruned = np.full((index.size, len(shares), len(METRICS)), np.nan)
        if self._kind is not None:
            which = MEASURES.index("gradient" if self.options.prune_by == "gradient" else "delta_loss")
            orders = []
            for h in (0, 1):  # the order used on half h is estimated on the other half
                other = all_heads[half != h, ..., which]
                score = np.nanmean(other, 0).reshape(-1) if other.shape[0] else np.zeros(L * H)
                orders.append(pruning_gates(np.argsort(score, kind="stable"), shares, L, H))
            start = 0
            for entry in self._pending:
                B = len(entry["items"])
                mine = half[start:start + B]
                gates = np.stack([orders[h] for h in mine], axis=1)  # (S, B, L, H)
                res = yield self._ablation(entry, gates, replacement)
                pruned[start:start + B] = np.stack([res[k] for k in METRICS], -1)
                start += B
        info = self._state.info
        if replacement is not None:
            info["mean_norm"] = replacement.norm(dim=-1).double().cpu().numpy().tolist()
        base_values = np.concatenate([np.concatenate(bases), half[:, None].astype(np.float64)], axis=1)
        sid = np.concatenate(ids)
        parts = [ScoreState(index, sid, all_heads.astype(np.float32), MEASURES),
                 ScoreState(index, sid, base_values.astype(np.float32), (*METRICS, "half")),
                 ScoreState(index, sid, pruned.astype(np.float32), METRICS)]
        s = self._state
        self._state = ImportanceState(ScoreState.join([s.heads, parts[0]]), ScoreState.join([s.base, parts[1]]),
                                      ScoreState.join([s.pruned, parts[2]]), info)
        self._pending = []

    # ------------------------------------------------------------------ collector interface
    def state(self) -> ImportanceState:
        if self._pending:
            raise RuntimeError("importance: the chunk's ablation batches have not run; the runner runs them "
                               "(needs_ablations) before it takes the state")
        return self._state

    def load_state(self, state: ImportanceState) -> None:
        self._pending = []
        self._state = state

    @classmethod
    def merge(cls, states: Sequence[ImportanceState]) -> ImportanceState:
        info = dict(states[0].info)
        info["n_predicted_labels"] = sum(int(s.info.get("n_predicted_labels", 0)) for s in states)
        for s in states:  # a chunk that loaded the model knows its status
            if s.info.get("status"):
                info.update({k: s.info[k] for k in ("kind", "status", "reason") if k in s.info})
        return ImportanceState(ScoreState.join([s.heads for s in states]), ScoreState.join([s.base for s in states]),
                               ScoreState.join([s.pruned for s in states]), info)

    def result(self) -> Any:
        """The per-input measures :data:`MEASURES` as a MeasureArray (the tables when the pair was skipped)."""
        state = self.state()
        if state.info.get("status") in (None, "skipped"):
            return self.tables()
        prov = {"model": self.context.provenance.get(self.context.model, {}), "ablation": self.options.ablation}
        return MeasureArray(self.context.model, self.context.dataset, state.heads.sentence_ids, MEASURES,
                            state.heads.values, provenance=prov)

    def hypotheses(self) -> list[dict]:
        """``ablation_raises_loss``: H0 mean delta_loss <= 0 per head, one-sided (the protocol's test)."""
        return [{"name": "ablation_raises_loss", "measure": "delta_loss", "threshold": 0.0, "layers": None}]

    def tables(self) -> dict[str, pd.DataFrame]:
        """``importance`` (per head), ``importance_pruning_inputs`` (per input and share) and
        ``importance_notes`` (task-free or skipped, with the reason)."""
        ctx, state = self.context, self.state()
        info = state.info
        status = info.get("status") or "skipped"
        notes = pd.DataFrame([{"model": ctx.model, "dataset": ctx.dataset, "status": status,
                               "reason": info.get("reason") or "no input"}]) if status != "task" else \
            pd.DataFrame(columns=["model", "dataset", "status", "reason"])
        if status == "skipped":
            return {IMPORTANCE_NOTES.name: notes}
        v = state.heads.values.astype(np.float64)
        n = v.shape[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(v, 0) if n else np.full(v.shape[1:], np.nan)
            sd = np.nanstd(v, 0, ddof=1) if n > 1 else np.full(v.shape[1:], np.nan)
            base = np.nanmean(state.base.values.astype(np.float64), 0) if n else np.full(4, np.nan)
        task = status == "task"
        importance = mean[..., 0] if task else mean[..., 4]
        frame = ctx.head_frame(
            model=ctx.model, dataset=ctx.dataset, task=info.get("kind") or "none", ablation=info["ablation"],
            importance_measure="delta_loss" if task else "cosine_distance", n=n,
            importance=importance, mean_delta_loss=mean[..., 0], sd_delta_loss=sd[..., 0],
            mean_delta_p_correct=mean[..., 1], mean_delta_correct=mean[..., 2], mean_gradient=mean[..., 3],
            sd_gradient=sd[..., 3], mean_cosine_distance=mean[..., 4])
        frame["base_loss"] = base[0]
        frame["base_accuracy"] = base[2]
        frame["n_predicted_labels"] = int(info.get("n_predicted_labels", 0))
        out = {IMPORTANCE.name: frame, IMPORTANCE_NOTES.name: notes}
        if task and n:
            shares = info["shares"]
            K = ctx.n_layers * ctx.n_heads
            p = state.pruned.values.astype(np.float64)
            rows = pd.DataFrame({
                "model": ctx.model, "dataset": ctx.dataset, "ablation": info["ablation"], "prune_by": info["prune_by"],
                "sentence_id": np.repeat(state.pruned.sentence_ids.astype(str), len(shares)),
                "half": np.repeat(state.base.values[:, 3].astype(int), len(shares)),
                "share": np.tile(np.asarray(shares, float), n),
                "n_removed": np.tile([int(round(s * K)) for s in shares], n),
                "loss": p[..., 0].ravel(), "p_correct": p[..., 1].ravel(), "correct": p[..., 2].ravel()})
            out[IMPORTANCE_PRUNING_INPUTS.name] = rows
        return out


