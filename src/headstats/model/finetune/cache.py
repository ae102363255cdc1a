"""Fine-tuned checkpoints kept under the cache root: one folder per recipe, base weights and data
(:func:`finetune_cache_key`), reused when complete, and the rows a checkpoint was trained on."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

from headstats.errors import HeadstatsError
from headstats.folders import CHECKPOINTS, default_cache_root
from headstats.inputs.glue import HF_GLUE, available_splits, get_task, glue_file, glue_root
from headstats.model.finetune.progress import TrainingCallback
from headstats.model.finetune.train import COMPLETE_MARKER, FINETUNE_FORMAT, MANIFEST_NAME, METRICS_NAME, finetune
from headstats.model.identity import sha256_file
from headstats.model.recipe import FinetuneRecipe
from headstats.model.sources import resolve_model_path


def is_complete(folder: str | Path) -> bool:
    """True when ``folder`` is a finished checkpoint (its ``COMPLETE`` marker exists)."""
    folder = Path(folder)
    return (folder / COMPLETE_MARKER).is_file() and (folder / MANIFEST_NAME).is_file()


def finetune_cache_key(recipe: FinetuneRecipe, *, data_root: str | Path | None = None) -> str:
    """sha256 of the recipe (canonical JSON), the base model's weight hashes, the data files' sha256 and
    :data:`FINETUNE_FORMAT`. A change of any of them makes a new checkpoint."""
    gtask = get_task(recipe.task)
    recipe = recipe.model_copy(update={"task": gtask.name})
    path, is_local = resolve_model_path(recipe.base)
    from headstats.model.identity import weight_hashes

    weights = weight_hashes(path, is_local, None) if is_local else {"hub_id": recipe.base}
    root = glue_root(data_root)
    data: dict[str, str] = {}
    if root is not None:
        for split in available_splits(gtask.name, root):
            if split in ("train", "dev"):
                data[split] = sha256_file(glue_file(gtask.name, split, root))
    else:
        data["datasets"] = HF_GLUE
    payload = {"recipe": recipe.model_dump(mode="json"), "base_weights": weights, "data": data,
               "format": FINETUNE_FORMAT}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", Path(text).name if os.sep in text else text).strip("-")[:40] or "model"


def checkpoint_folder(recipe: FinetuneRecipe, *, cache_dir: str | Path, data_root: str | Path | None = None) -> Path:
    """Where :func:`cached_finetune` keeps the checkpoint of ``recipe``:
    ``<cache_dir>/checkpoints/<task>-<base>-<key[:16]>`` (the key: :func:`finetune_cache_key`)."""
    key = finetune_cache_key(recipe, data_root=data_root)
    return Path(cache_dir) / CHECKPOINTS / f"{get_task(recipe.task).name}-{_slug(recipe.base)}-{key[:16]}"


def cached_finetune(
    recipe: FinetuneRecipe,
    *,
    cache_dir: str | Path | None = None,
    data_root: str | Path | None = None,
    progress: TrainingCallback | bool = True,
) -> Path:
    """The checkpoint of ``recipe``: reused from the cache when complete, else trained and cached.

    The folder is :func:`checkpoint_folder` under ``cache_dir``, the cache root (default: headstats' one
    root, :func:`headstats.folders.default_cache_root`, where the state cache lives too). A folder without its
    ``COMPLETE`` marker is discarded and rebuilt. A complete one is used only when every file still has the size
    and sha256 its manifest recorded when it was written (a cache on a shared file system may be written by
    others): else the run stops with one line saying which file changed.
    """
    cache_dir = default_cache_root() if cache_dir is None else cache_dir
    key = finetune_cache_key(recipe, data_root=data_root)
    folder = checkpoint_folder(recipe, cache_dir=cache_dir, data_root=data_root)
    if is_complete(folder):
        _check_unchanged(folder)
        os.utime(folder / COMPLETE_MARKER)  # its last use, for `headstats cache prune`
        return folder
    return finetune(recipe, out_dir=folder, data_root=data_root, progress=progress, overwrite=True, cache_key=key)


def _check_unchanged(folder: Path) -> None:
    """Refuse a cached checkpoint whose files are not those recorded (size and sha256) when it was written."""
    from headstats.folders import changed_outputs, manifest_of

    manifest = manifest_of(folder)
    changed = changed_outputs(folder, manifest) if manifest is not None else ["finetune_manifest.json"]
    recorded = isinstance((manifest or {}).get("output_sha256"), dict)
    if changed or not recorded:
        shown = ", ".join(changed[:3]) + (f" and {len(changed) - 3} more" if len(changed) > 3 else "") \
            if changed else "its manifest records no checksums"
        raise HeadstatsError(f"the cached checkpoint {str(folder)!r} is not as headstats wrote it ({shown}); it is "
                             "not used: delete that folder (headstats never deletes a changed one) and run again")


def read_manifest(folder: str | Path) -> dict[str, Any]:
    """The ``finetune_manifest.json`` of a checkpoint folder."""
    path = Path(folder) / MANIFEST_NAME
    if not path.is_file():
        raise HeadstatsError(f"{str(folder)!r} has no {MANIFEST_NAME}; is it a checkpoint made by headstats finetune?")
    return json.loads(path.read_text(encoding="utf-8"))


def finetune_train_ids(folder: str | Path) -> dict[str, Any]:
    """``{"task", "split", "ids"}``: the rows a headstats checkpoint was trained on."""
    trained = read_manifest(folder)["trained_on"]
    return {"task": trained["task"], "split": trained["split"], "ids": list(trained["ids"])}


def analysis_exclusions(folder: str | Path | None, task: str, split: str) -> set[str]:
    """Sentence ids of ``task``/``split`` that the checkpoint in ``folder`` was trained on (empty if none).

    Pass the union over the compared models as ``exclude_ids`` to :func:`headstats.inputs.glue.load_glue`
    when ``GlueSource.exclude_finetune_rows`` is set. Folders that are not headstats checkpoints give an
    empty set.
    """
    if folder is None or not (Path(folder) / MANIFEST_NAME).is_file():
        return set()
    trained = finetune_train_ids(folder)
    if trained["task"] != get_task(task).name:
        return set()
    split = "dev" if split in ("validation", "dev") else split
    return set(trained["ids"]) if trained["split"] == split else set()


def finetune_recipe(recipe: FinetuneRecipe, out: str | Path | None = None, data_root: str | Path | None = None, *,
                    cache_dir: str | Path | None = None, overwrite: bool = False,
                    progress: TrainingCallback | bool = True) -> tuple[Path, dict[str, Any]]:
    """Train ``recipe`` into ``out``, or (without ``out``) reuse or build its checkpoint under
    ``<cache_dir>/checkpoints`` as a protocol's run does; returns ``(folder, metrics)``."""
    if out is None:
        folder = cached_finetune(recipe, cache_dir=cache_dir, data_root=data_root, progress=progress)
    else:
        folder = finetune(recipe, out_dir=out, data_root=data_root, progress=progress, overwrite=overwrite)
    return folder, json.loads((folder / METRICS_NAME).read_text(encoding="utf-8"))
