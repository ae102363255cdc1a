"""A study's models: each spec resolved to what :func:`headstats.model.loading.load_model` takes (fine-tuning
where the protocol asks, with its progress), and the runner's ``load`` and ``describe`` functions."""

from __future__ import annotations

import json
from contextlib import ExitStack
from pathlib import Path

from headstats.config.protocol import Protocol
from headstats.engine.runner import ProgressFactory, no_progress
from headstats.study.results import Log


def training_progress(name: str, log: Log, progress: ProgressFactory, stack: ExitStack):
    """A fine-tuning callback: a bar of steps (with the loss where the bar can show it) and a log line at
    every 10 % of the steps, with the loss and the time left."""
    from headstats.model.finetune import TenPercentLog

    lines = TenPercentLog(log, f"fine-tuning {name}")
    bar: list = []

    def report(step) -> None:
        if not bar:  # the number of steps is known at the first step
            bar.append(stack.enter_context(progress(f"fine-tuning {name} (steps)", step.total)))
        bar[0](1)
        status = getattr(bar[0], "status", None)
        if status is not None:
            status(f"loss {step.loss:.3f}")
        lines(step)

    return report


def build_models(protocol: Protocol, log: Log, progress: ProgressFactory = no_progress, *,
                 cache_dir: str | Path | None = None) -> tuple[dict[str, str], dict[str, dict]]:
    """Resolve every model spec to something ``load_model`` takes, fine-tuning where asked: checkpoints are
    kept under ``checkpoints/`` of the cache root (``cache_dir``, the protocol's ``cache_dir``, else
    ``$HEADSTATS_CACHE_DIR``...), where ``headstats finetune`` puts them too."""
    sources, finetuned = {}, {}
    for spec in protocol.models:
        if spec.finetune is None:
            sources[spec.name] = spec.source
            continue
        from headstats.model.finetune import cached_finetune

        from headstats.engine.cache import resolve_cache_root

        cache = resolve_cache_root(cache_dir, protocol.cache_dir)
        log(f"fine-tuning (or reusing) {spec.name}: {spec.finetune.base} on {spec.finetune.task}")
        with ExitStack() as stack:
            path = cached_finetune(spec.finetune, cache_dir=cache, data_root=protocol.data_root,
                                   progress=training_progress(spec.name, log, progress, stack))
        sources[spec.name] = str(path)
        metrics_file = Path(path) / "metrics.json"
        metrics = json.loads(metrics_file.read_text()) if metrics_file.exists() else None
        accuracy = (metrics or {}).get("accuracy")
        log(f"{spec.name}: checkpoint {path}" + (f" (dev accuracy {accuracy:.3f})" if accuracy is not None else ""))
        finetuned[spec.name] = {"path": str(path), "recipe": spec.finetune.model_dump(), "metrics": metrics}
    return sources, finetuned


def model_functions(protocol: Protocol, sources: dict[str, str], finetuned: dict[str, dict], log: Log, *,
                    cache: Path | None = None):
    """``load(name)`` and ``describe(name)`` for the runner, with the protocol's device and dtype; provenance
    (with the fine-tuning recipe where headstats fine-tuned it) is what ``describe`` returns.

    With a ``cache`` folder, the description of a local model folder is taken from the cache when no file of
    the folder changed (:func:`memoised_description`): a re-run that finds every chunk state there imports
    neither transformers nor torch.
    """
    from headstats.engine.cache import StateCache
    from headstats.engine.runner import ModelInfo
    from headstats.model.loading import load_model
    from headstats.study.memo import memoised_description

    store = StateCache(cache) if cache is not None else None
    specs = {m.name: m for m in protocol.models}
    provenance: dict[str, dict] = {}

    def describe(name: str) -> ModelInfo:
        found, longest = memoised_description(sources[name], revision=specs[name].revision,
                                              device=protocol.device, dtype=protocol.dtype, cache=store)
        found = dict(found)
        found["model"] = name
        if specs[name].random_init is not None:  # a control: the files' config and tokenizer, new weights
            found["random_init_seed"] = int(specs[name].random_init)
        provenance[name] = found | ({"finetune": finetuned[name]} if name in finetuned else {})
        return ModelInfo(found, longest)

    def load(name: str):
        seed = specs[name].random_init
        log(f"loading model {name} ({sources[name]}, {protocol.dtype}"
            + (f", random weights drawn with seed {seed})" if seed is not None else ")"))
        loaded = load_model(sources[name], revision=specs[name].revision, device=protocol.device, dtype=protocol.dtype,
                            random_init=seed)
        loaded.name = name
        loaded.provenance["model"] = name
        return loaded

    return load, describe, provenance
