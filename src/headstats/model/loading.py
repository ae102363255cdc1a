"""Loading BERT-family encoders with attentions and their heads, refusing broken or unsupported models, and
recording provenance: the one way every model and tokenizer of headstats is loaded.

``default`` (the embedded all-MiniLM-L6-v2), any Hugging Face id or local directory of a bidirectional encoder of
a family in :data:`headstats.model.families.SUPPORTED_MODEL_TYPES` works. Models are loaded with
``attn_implementation="eager"``, since SDPA and flash attention return no attention weights.

Nothing wrong passes in silence: :func:`headstats.model.sources.check_model_source` checks a model without
loading its weights (config, weight files, tokenizer files and vocabulary), and :func:`load_model` runs those
checks and then the ones that need the weights, raising one :class:`~headstats.errors.ModelError` that names
the problem and the fix. Pickled weights are only ever read with torch's safe ``weights_only`` loader, and no
remote code is ever run.

The model layer, module by module: :mod:`~headstats.model.sources` (a spec resolved to a folder or a hub id,
checked without weights), :mod:`~headstats.model.checkpoint_files` (weight and tokenizer files, their errors),
:mod:`~headstats.model.families` (config.json and the supported families), :mod:`~headstats.model.devices`
(device and dtype), :mod:`~headstats.model.tokenizers` (reading, checking and fingerprinting a tokenizer),
:mod:`~headstats.model.identity` (weight hashes, provenance), :mod:`~headstats.model.task_heads` (which task
head a checkpoint has; heads patched inside a model), and this module (the loading itself).
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headstats.errors import ModelError
from headstats.hub import hub_reachable, not_available_error
from headstats.model.checkpoint_files import (corrupt_weights, first_line, is_loading_error, loadable_weight_files,
                                              not_fetched)
from headstats.model.devices import check_device, check_dtype, resolve_device
from headstats.model.families import check_model_config, max_input_length
from headstats.model.identity import model_provenance
from headstats.model.sources import DEFAULT_MODEL, ModelSource, hub_config, inspect_source
from headstats.model.task_heads import task_head
from headstats.model.tokenizers import check_tokenizer, check_vocabulary_fits, read_tokenizer

__all__ = ["HEADS", "LoadedModel", "describe_model", "load_model", "load_tokenizer",
           "provenance_tokenizer"]

#: What :func:`load_model` can load on top of the encoder (``head=``): the ``transformers`` auto class of each.
#: ``head="task"`` loads the one the checkpoint was saved with (:func:`headstats.model.task_heads.task_head`).
HEADS = {"encoder": "AutoModel", "classifier": "AutoModelForSequenceClassification",
         "masked_lm": "AutoModelForMaskedLM"}
#: Model parameters that may be missing from a checkpoint: they are not used to compute attention
#: (the pooler) or are new by design (a classification head about to be fine-tuned).
_MAY_BE_MISSING = ("pooler", "classifier", "pre_classifier")


@dataclass
class LoadedModel:
    """A model, its tokenizer and the provenance that goes into every output.

    Attributes
    ----------
    name : str
        The spec as the user gave it (``default``, a path or a hub id); the ``model`` column of tables.
    model, tokenizer
        The ``transformers`` objects; the model is in eval mode with eager attention.
    provenance : dict
        ``model``, ``path``, ``revision``, ``model_type``, ``n_layers``, ``n_heads``, ``weights_sha256``
        (file name -> sha256), ``tokenizer_class``, ``vocab_sha256``.
    head, head_note : str
        The head on top of the encoder (:data:`HEADS`) and, for ``head="task"``, its loss or why there is none.
    """

    name: str
    model: Any
    tokenizer: Any
    provenance: dict = field(default_factory=dict)
    #: The head loaded on top of the encoder (a key of :data:`HEADS`).
    head: str = "encoder"
    #: With ``head="task"``: the loss the head gives, or why the checkpoint has none (then ``head`` is the encoder).
    head_note: str = ""

    @property
    def label2id(self) -> dict[str, int]:
        """Class label (as the data set writes it) -> class index of a classifier (empty otherwise)."""
        mapping = getattr(self.model.config, "label2id", None) or {}
        return {str(k): int(v) for k, v in mapping.items()}

    @property
    def n_layers(self) -> int:
        return int(self.provenance["n_layers"])

    @property
    def n_heads(self) -> int:
        return int(self.provenance["n_heads"])

    @property
    def max_input_length(self) -> int:
        """The longest input, in pieces, that the model's position embeddings allow."""
        return max_input_length(self.model.config, self.tokenizer)

    def __repr__(self) -> str:
        """Three lines (never the module tree): name, shape and type, weights and tokenizer, where it runs."""
        p = self.provenance
        weights = ", ".join(f"{k} {v[:12]}" for k, v in (p.get("weights_sha256") or {}).items()) or "hashes unknown"
        return (f"LoadedModel {self.name!r}: {p.get('n_layers')} layers x {p.get('n_heads')} heads, "
                f"{p.get('model_type')} ({p.get('architecture')})\n"
                f"  weights {weights}; tokenizer {p.get('tokenizer_class')} {str(p.get('vocab_sha256'))[:12]}\n"
                f"  {p.get('path') or p.get('hub_id')}" + (f"@{p['revision']}" if p.get("revision") else "")
                + f" on {p.get('device')}, {p.get('dtype')}")


def load_model(
    spec: str = DEFAULT_MODEL,
    *,
    revision: str | None = None,
    device: str = "cpu",
    model_kwargs: Mapping[str, Any] | None = None,
    dtype: str = "float32",
    head: str = "encoder",
    random_init: int | None = None,
) -> LoadedModel:
    """Load a BERT-family encoder and its tokenizer with eager attention, refusing anything broken.

    The one loader of models: the engine's encoders, fine-tuning's classifier and the analyses' task heads.

    Parameters
    ----------
    spec : str
        ``"default"``, a local directory, or a Hugging Face hub id.
    revision : str, optional
        Hub revision (branch, tag or commit); ignored for local directories.
    device : str
        ``"cpu"`` or a torch device such as ``"cuda"``; checked before anything is loaded.
    head : {"encoder", "classifier", "masked_lm", "task"}
        What to load on top of the encoder (:data:`HEADS`): nothing (``AutoModel``, the attention analyses),
        a sequence classifier (``AutoModelForSequenceClassification``: fine-tuning; a new classification head
        may be missing from the weights), the masked-LM head (``AutoModelForMaskedLM``; refused when the
        checkpoint lacks its weights, since an untrained head gives no meaningful loss), or ``"task"``: the head
        the checkpoint was saved with (:func:`headstats.model.task_heads.task_head`), trained, else the bare
        encoder with the reason in :attr:`LoadedModel.head_note` (the gradients and importance analyses).
    model_kwargs : mapping, optional
        More keyword arguments for ``from_pretrained`` (e.g. ``num_labels``, ``id2label``).
    dtype : {"float32", "bfloat16", "float16"}
        Precision of the weights and of the forward pass (attention reaches collectors as float32).
    random_init : int, optional
        A control model (METHODS 6.3): the same configuration and tokenizer with weights drawn by the family's
        own initialiser after ``torch.manual_seed(random_init)`` (:func:`random_init_model`); its provenance
        records the seed (``random_init_seed``), which is part of its identity in cache keys.

    Raises
    ------
    ModelError
        If the device is not available, the model is not a supported encoder (:data:`SUPPORTED_MODEL_TYPES`),
        a file is missing, unreadable, corrupt or unsafe, the tokenizer is empty or does not fit the
        embeddings, the weights do not belong to the config, or a hub id is neither cached nor reachable.
    """
    import torch

    if head not in HEADS and head != "task":
        raise ModelError(f"unknown model head {head!r}; choose among {', '.join(HEADS)}, task")
    device = resolve_device(device)
    check_device(device)
    check_dtype(dtype, device)
    from headstats.model.quiet import quiet_loading

    # the engine runs collectors in inference mode: a model an analysis loads there must still take gradients
    with quiet_loading(), torch.inference_mode(False):  # no bar, log line or warning of transformers' own
        source = inspect_source(spec, revision)
        path, is_local = source.path, source.is_local
        if not is_local and source.config is None and not hub_reachable():
            raise not_available_error(spec)
        config, tokenizer = source.config, source.tokenizer
        if tokenizer is None:  # a hub id: config first (a few bytes), then the tokenizer, both before the weights
            config = config or hub_config(path, spec, revision)
            tokenizer = read_tokenizer(path, spec, is_local=False, revision=revision)
            check_tokenizer(tokenizer, config, spec)
        note, fall_back = "", head == "task"
        if fall_back:
            wanted, note = task_head(getattr(config, "architectures", None))
            head = wanted or "encoder"
        model, info = _load_head(head, source, spec, revision, model_kwargs)
        if fall_back and head != "encoder" and (untrained := _untrained_head(model, info)):
            note = (f"the checkpoint names a {head} head but its weights lack {untrained[0]}: an untrained head "
                    "gives no meaningful loss")
            head = "encoder"
            model, info = _load_head(head, source, spec, revision, model_kwargs)
        check_model_config(model.config.to_dict(), spec)
        if random_init is not None:
            model = random_init_model(model, random_init)
        if head == "masked_lm":
            _check_trained_head(model, info, spec, head)
        _check_loading_info(info, spec)
        check_vocabulary_fits(len(tokenizer), model.get_input_embeddings().num_embeddings, spec,
                               "input embeddings")
        model.eval()
        model.to(device=torch.device(device), dtype=getattr(torch, dtype))
    provenance = model_provenance(spec, path, is_local, revision, model.config, type(model).__name__, tokenizer,
                             device, dtype)
    if random_init is not None:
        provenance["random_init_seed"] = int(random_init)
    return LoadedModel(name=spec, model=model, tokenizer=tokenizer, provenance=provenance, head=head,
                       head_note=note)


def random_init_model(model: Any, seed: int) -> Any:
    """A model of ``model``'s class and configuration with freshly initialised weights: ``torch.manual_seed(seed)``,
    then the class built from the config (``post_init`` runs the family's own ``_init_weights``), as
    ``AutoModel.from_config`` does. The same seed gives the same weights (METHODS 6.3)."""
    import torch

    torch.manual_seed(int(seed))
    fresh = type(model)(model.config)
    return fresh.eval()


def load_tokenizer(spec: str, *, revision: str | None = None) -> Any:
    """The tokenizer of a model (a local folder or a hub id), refusing a broken one in one line (as
    :func:`load_model` does). Loaded at each call: nothing is cached here (during a pass a collector reads the
    runner's, :attr:`headstats.engine.collector.Context.tokenizer`)."""
    spec = str(spec)
    source = inspect_source(spec, revision)
    if source.tokenizer is not None:
        return source.tokenizer
    return read_tokenizer(source.path, spec, is_local=source.is_local, revision=revision)


def provenance_tokenizer(provenance: Mapping[str, Any]) -> Any | None:
    """The tokenizer of a loaded model, found from its provenance (its local folder or hub id, and revision);
    None when the provenance names neither."""
    source = provenance.get("path") or provenance.get("hub_id")
    return load_tokenizer(str(source), revision=provenance.get("revision")) if source else None


def describe_model(spec: str = DEFAULT_MODEL, *, revision: str | None = None, device: str = "cpu",
                   dtype: str = "float32") -> tuple[dict, int]:
    """The provenance :func:`load_model` would record, and the longest input the model takes, without loading
    its weights (config, tokenizer and weight-file hashes only): what the engine's cache keys need.

    Returns
    -------
    (dict, int)
        Provenance (as :attr:`LoadedModel.provenance`) and the maximum input length in pieces.
    """
    from transformers import AutoModel

    device = resolve_device(device)
    source = inspect_source(spec, revision)
    path, is_local = source.path, source.is_local
    config = source.config or hub_config(path, spec, revision)
    tokenizer = source.tokenizer or read_tokenizer(path, spec, is_local=False, revision=revision)
    try:
        architecture = AutoModel._model_mapping[type(config)].__name__
    except (KeyError, AttributeError):
        architecture = None
    provenance = model_provenance(spec, path, is_local, revision, config, architecture, tokenizer, device, dtype)
    return provenance, max_input_length(config, tokenizer)


def _load_weights(cls: Any, source: ModelSource, spec: str, revision: str | None, kwargs: Mapping[str, Any]) -> Any:
    """``cls.from_pretrained`` with eager attention, turning what it raises for a bad file into a ModelError."""
    hub_kwargs: dict[str, Any] = {} if source.is_local else {"revision": revision}
    try:
        return cls.from_pretrained(
            source.path, attn_implementation="eager", output_loading_info=True, **hub_kwargs, **kwargs
        )
    except Exception as exc:
        if not is_loading_error(exc):
            raise
        raise _weights_error(exc, source, spec) from exc


def _weights_error(exc: BaseException, source: ModelSource, spec: str) -> ModelError:
    from safetensors import SafetensorError

    def weight_file(suffix: str) -> str:
        if source.is_local:
            names = [p.name for p in loadable_weight_files(Path(source.path), spec) if p.suffix == suffix]
            if names:
                return ", ".join(names)
        return "model.safetensors" if suffix == ".safetensors" else "pytorch_model.bin"

    if isinstance(exc, pickle.UnpicklingError):
        return ModelError(
            f"weights file {weight_file('.bin')} of model {spec!r} is a pickle that torch refuses to load safely "
            "(it holds more than tensors, e.g. code to run); convert it to safetensors where you trust it, or use "
            "a model saved as model.safetensors"
        )
    if isinstance(exc, SafetensorError):
        return corrupt_weights(weight_file(".safetensors"), spec)
    text = str(exc)
    if isinstance(exc, RuntimeError) and "mismatch" in text.lower():
        return ModelError(
            f"the weights of model {spec!r} do not fit its config.json (tensor shapes differ); give the config.json "
            "that belongs to these weights, or re-save the model with model.save_pretrained(folder)"
        )
    if isinstance(exc, RuntimeError):  # torch's zip reader on a damaged archive
        return corrupt_weights(weight_file(".bin"), spec)
    if not source.is_local and isinstance(exc, OSError):
        return not_fetched(spec)
    return ModelError(
        f"could not build model {spec!r} from its files ({first_line(exc)}); re-download or re-save the model"
    )


def _check_loading_info(info: Mapping[str, Any], spec: str) -> None:
    """Refuse weights that leave parameters of the encoder randomly initialised (another model's weights)."""
    missing = sorted(
        key for key in info.get("missing_keys", ())
        if not any(part in _MAY_BE_MISSING for part in key.split("."))
    )
    if missing:
        raise ModelError(
            f"the weights of model {spec!r} do not belong to its config.json: {len(missing)} of the model's "
            f"tensors are not in them (e.g. {missing[0]}) and would be random; give the weights and config.json "
            "of one model (save both with model.save_pretrained(folder))"
        )


def _untrained_head(model: Any, info: Mapping[str, Any]) -> list[str]:
    """The weights of the model's head (outside its encoder) that the checkpoint lacks: they would be random."""
    prefix = f"{getattr(model, 'base_model_prefix', '')}."
    return sorted(k for k in info.get("missing_keys", ())
                  if not k.startswith(prefix) and "pooler" not in k and "position_ids" not in k)


def _check_trained_head(model: Any, info: Mapping[str, Any], spec: str, head: str) -> None:
    """Refuse a head whose weights are not in the checkpoint (it would be random)."""
    untrained = _untrained_head(model, info)
    if untrained:
        raise ModelError(
            f"model {spec!r} has no trained {head} head: its weights lack {untrained[0]} (and "
            f"{len(untrained) - 1} more), so the head would be random; give a checkpoint saved with its {head} head"
        )


def _load_head(head: str, source: ModelSource, spec: str, revision: str | None,
               model_kwargs: Mapping[str, Any] | None) -> tuple[Any, Mapping[str, Any]]:
    """The weights with the ``transformers`` auto class of ``head``, and the loading info."""
    import transformers

    return _load_weights(getattr(transformers, HEADS[head]), source, spec, revision, dict(model_kwargs or {}))
