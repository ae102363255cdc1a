"""One check of a protocol before any model is loaded or any input read: ``validate`` says what ``run`` does.

:func:`preflight` is called by ``headstats validate``, by :func:`headstats.study.run.run_study` (and so by
``headstats run``) and by ``headstats score``, so that a protocol that ``validate`` passes gets past the
start of ``run``, and one that ``run`` refuses is refused by ``validate`` with the same one-line message.
It reads no data file beyond checking that it can be opened, loads no model, tokenizer or parser, and
writes nothing but a probe file that it deletes at once.

What it checks, in this order, each failure a one-line :class:`~headstats.errors.HeadstatsError` kind
naming the problem and the fix:

1. values (:class:`~headstats.errors.ProtocolError`): the protocol validates again (a protocol changed in
   Python after loading is checked too: tau finite and >= 0, alpha and confidence in (0, 1), whole-number
   seeds, non-empty roles, relations, models and data sets) and every role, relation, test and correction
   name is registered; after the models (their configs give the family size), an explicit
   ``n_resamples`` with which a resampling test could never assign a head is refused, naming the number
   needed (:func:`check_resampling`);
2. names (:class:`~headstats.errors.ProtocolError`): the protocol's ``name`` (the default output folder
   ``runs/<name>``), model and data-set names are used in file names: no control characters (NUL), at
   most :data:`NAME_MAX` characters, no path separator in ``name``, and no two (model, data set) pairs
   whose figure files would have the same name (:func:`file_tag`);
3. device and precision (:class:`~headstats.errors.ModelError`): :func:`headstats.model.devices.check_device`
   (a device that is not on this machine is refused), ``dtype`` (float16 only on a GPU); Ray installed for
   ``execution.executor: ray``; the state cache folder writable and not inside the output folder;
4. models (:class:`~headstats.errors.ModelError`): :func:`headstats.model.sources.check_model_source` for each
   model, or for the base of a fine-tuned one, whose GLUE task and training data must exist;
5. data (:class:`~headstats.errors.DataError`): each data file exists, is a file, can be read and has a
   known format; each GLUE data set names a known task and split whose file exists under its data root
   (or the ``datasets`` library is installed and the hub can be reached when no root is given); the spaCy
   parser is installed when raw text must be parsed;
6. output (:class:`~headstats.errors.OutputError`): :func:`headstats.study.storage.check_output_folder` with
   every input of the run, and a probe file created and deleted where the output folder will be made.
"""

from __future__ import annotations

import importlib.util
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Sequence

from pydantic import ValidationError

from headstats.errors import DataError, HeadstatsError, ModelError, OutputError, ProtocolError
from headstats.config.protocol import DatasetSpec, FinetuneRecipe, Protocol, check_names, printable, validation_message

#: Longest protocol, model or data-set name (they become parts of file names).
NAME_MAX = 100


@contextmanager
def _kind(kind: type[HeadstatsError], prefix: str = "") -> Iterator[None]:
    """Re-raise a :class:`HeadstatsError` from a lower layer as ``kind`` (or its own kind, when it has one),
    with ``prefix`` before its message, on one line."""
    try:
        yield
    except HeadstatsError as exc:
        if type(exc) is not HeadstatsError:
            kind = type(exc)
            if not prefix:
                raise
        raise kind(prefix + printable(exc)) from None


def preflight(protocol: Protocol, *, out: str | Path | None = None, overwrite: bool = False,
              cache_dir: str | Path | None = None) -> Path | None:
    """Check everything that can be checked before any model is loaded or any input read.

    Parameters
    ----------
    protocol : Protocol
        A protocol (:func:`headstats.config.protocol.load_protocol`); relation names are normalised in place.
    out : path, optional
        The output folder the run will write. Default: the protocol's ``output``; when neither is given,
        the output is not checked (``validate`` without ``--out``).
    overwrite : bool
        Whether the run may replace an existing output folder that headstats wrote.
    cache_dir : path, optional
        The state cache folder the run will use (None: no cache); it must be writable and must not be, or be
        inside, the output folder (an ``--overwrite`` would delete it).

    Returns
    -------
    Path or None
        The resolved output folder, or None when no output was given.

    Raises
    ------
    ProtocolError, ModelError, DataError, OutputError
        The first problem found, as one line with its fix (see the module docstring for the order).
    """
    check_values(protocol)
    check_file_names(protocol)
    from headstats.model.devices import check_device, check_dtype  # the model layer's checks, ModelError

    check_device(protocol.device)
    check_dtype(protocol.dtype, protocol.device)
    check_executor(protocol)
    model_folders = check_models(protocol, cache_dir=cache_dir)
    check_ablation(protocol)
    check_resampling(protocol)
    data_inputs = check_data(protocol)
    check_parser(protocol)
    target = out if out is not None else protocol.output
    if target is None:
        if cache_dir is not None:
            check_cache_dir(Path(cache_dir))
        return None
    inputs = [*data_inputs, *model_folders]
    if protocol.data_root is not None:
        inputs.append(Path(protocol.data_root))
    if any(spec.finetune is not None for spec in protocol.models):
        inputs.append(checkpoint_root(protocol, cache_dir))
    if cache_dir is not None:
        # the output's own refusals (/, home, a file, ...) come first: they name the bigger problem
        resolved_out, resolved_cache = Path(target).expanduser().resolve(), Path(cache_dir).expanduser().resolve()
        if resolved_cache == resolved_out or resolved_out in resolved_cache.parents:
            check_output(target, overwrite=overwrite, inputs=inputs)
            raise OutputError(f"the cache folder {str(cache_dir)!r} is inside the output folder {str(target)!r}, which "
                              "a run replaces; give a --cache-dir outside it (or --no-cache)")
        inputs.append(Path(cache_dir))
    resolved = check_output(target, overwrite=overwrite, inputs=inputs)
    if cache_dir is not None:
        check_cache_dir(Path(cache_dir))
    return resolved


def checkpoint_root(protocol: Protocol, cache_dir: str | Path | None = None) -> Path:
    """Where the run keeps fine-tuned checkpoints: ``checkpoints/`` under the cache root (``--cache-dir``, the
    protocol's ``cache_dir``, else :func:`headstats.folders.default_cache_root`), also with ``--no-cache``,
    which concerns the state chunks only."""
    from headstats.engine.cache import resolve_cache_root
    from headstats.folders import CHECKPOINTS

    return resolve_cache_root(cache_dir, protocol.cache_dir) / CHECKPOINTS


# ------------------------------------------------------------------------------------------------ values


def check_values(protocol: Protocol) -> None:
    """Validate the protocol's values again and check every registered name.

    A :class:`Protocol` changed after loading (``protocol.statistics.tau = float("nan")``) is not validated
    by pydantic on assignment; this catches it before anything runs.
    """
    try:
        Protocol.model_validate(protocol.model_dump())
    except ValidationError as exc:
        raise ProtocolError(validation_message(exc)) from None
    with _kind(ProtocolError):
        check_names(protocol)


def tau_warnings(protocol: Protocol) -> list[str]:
    """One-line warnings for a tau that is out of reach whatever the inputs (METHODS 1.6), found without data.

    ``validate`` prints them; ``run`` checks every role's ceiling on the encoded inputs and warns with the
    exact numbers (the ceiling warnings of the roles' finish step), since most ceilings depend on the
    inputs' lengths. Found here: a role on the ``mass`` or ``ceiling`` scale (ceiling 1) with tau >= 1, and
    ``block`` on the bias scale, whose ceiling on a pair of a and b pieces is ``2 + 2/a + 1/b`` (counting
    special queries; ``2 + 6/(a + b)`` without), so tau >= 3 needs a side of one or two pieces.
    """
    sc, st = protocol.scoring, protocol.statistics
    out = []
    for role in sc.roles:
        tau, scale = st.tau_of(role), sc.scale_of(role)
        if scale != "bias" and tau >= 1:
            out.append(f"tau = {tau:g} of role {role} is at or above 1, the ceiling of its scale '{scale}': no head "
                       f"can be assigned it; give it a tau below 1 (statistics.tau: {{{role}: 0.5}})")
        elif role == "block" and scale == "bias" and not sc.block_entropy and tau >= 3:
            out.append(f"tau = {tau:g} is out of reach for block on ordinary pairs: its ceiling on a pair of a and "
                       "b pieces is 2 + 2/a + 1/b (about 2.1 to 2.4 on GLUE pairs); give block its own tau "
                       "(statistics.tau: {default: 3, block: 1.5}) or scoring.scale: {block: mass}; run checks "
                       "the ceilings on the encoded inputs")
    return out


# ------------------------------------------------------------------------------------------------- names


def _short(name: str, limit: int = 40) -> str:
    """A name for a one-line message: control characters escaped, long names cut with '...'."""
    shown = printable(name)
    return repr(shown if len(shown) <= limit else shown[:limit] + "...")


def _check_name(name: str, what: str, *, fix: str) -> None:
    if not name.strip():
        raise ProtocolError(f"{what} is empty; give it a name ({fix})")
    bad = sorted({c for c in name if not c.isprintable()})
    if bad:
        shown = ", ".join(printable(c) for c in bad)
        raise ProtocolError(f"{what} {_short(name)} holds control characters ({shown}); names become file "
                            f"names: use letters, digits, '-', '_' and '.' ({fix})")
    if len(name) > NAME_MAX:
        raise ProtocolError(f"{what} {_short(name)} is {len(name)} characters long; names become file "
                            f"names: use at most {NAME_MAX} ({fix})")


def check_file_names(protocol: Protocol) -> None:
    """Refuse names that cannot become file names.

    The protocol's ``name`` is the default output folder ``runs/<name>``, so it may hold no path separator
    and may not be ``.`` or ``..``. Model and data-set names become parts of figure file names through
    :func:`headstats.report.blocks.figure_tag`, which keeps distinct names apart.
    """
    _check_name(protocol.name, "protocol 'name'", fix="change 'name:'")
    if "/" in protocol.name or "\\" in protocol.name or protocol.name.strip() in (".", ".."):
        raise ProtocolError(
            f"protocol 'name' {protocol.name!r} is used as the folder runs/<name>, so it may not hold '/' or "
            "'\\' or be '.' or '..'; give a plain name such as 'my-study'"
        )
    for spec in protocol.models:
        _check_name(spec.name, "model name", fix="give the model a short 'name:' and its folder or hub id as 'path:'")
        if spec.path is not None and "\0" in spec.path:
            raise ProtocolError(f"model {_short(spec.name)} has a 'path' with a NUL character; fix the path")
    for spec in protocol.datasets:
        _check_name(spec.name, "data set name", fix="change its 'name:'")


# ---------------------------------------------------------------------------------------- device, models


def check_executor(protocol: Protocol) -> None:
    """``executor: ray`` needs Ray installed (``pip install 'headstats[ray]'``)."""
    if protocol.execution.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ProtocolError("execution.executor is 'ray' but Ray is not installed; pip install 'headstats[ray]' "
                            "or set execution.executor: local")


def check_cache_dir(folder: Path) -> None:
    """Refuse a state cache folder that is a file or cannot be written (fix: --cache-dir or --no-cache)."""
    ancestor = folder
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    fix = "give another --cache-dir (or HEADSTATS_CACHE_DIR), or run with --no-cache"
    if not ancestor.is_dir():
        raise OutputError(f"cache folder {str(folder)!r} cannot be made: {str(ancestor)!r} is a file; {fix}")
    try:
        handle, probe = tempfile.mkstemp(prefix=".headstats-probe-", dir=ancestor)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        reason = (exc.strerror or str(exc)).lower()
        raise OutputError(f"cache folder {str(folder)!r} cannot be written ({reason} in {str(ancestor)!r}); {fix}") \
            from None


def _model_folder(source: str, revision: str | None, what: str, *, checked_before: Callable[[str], bool]
                  = lambda source: False) -> Path | None:
    """Check one model source; its local folder, or None for a hub id. ``checked_before(source)``: whether
    this exact folder passed every check in an earlier run (its checks are then skipped)."""
    from headstats.hub import check_hub_model_available
    from headstats.model.sources import check_model_source, resolve_model_path

    if "\0" in source:
        raise ModelError(f"{what} {printable(source)!r} holds a NUL character; fix the path or hub id")
    with _kind(ModelError, f"{what}: " if what != "model" else ""):
        if not checked_before(source):
            check_model_source(source, revision=revision)
        path, is_local = resolve_model_path(source)
        if not is_local:
            check_hub_model_available(path, revision=revision)
    return Path(path) if is_local else None


def check_models(protocol: Protocol, *, cache_dir: str | Path | None = None) -> list[Path]:
    """Check every model (or fine-tuning base) without loading it; return the local model folders.

    With the run's ``cache_dir``, a local model folder that an earlier run described, unchanged since (see
    :func:`headstats.study.memo.described_before`), is not checked again: its checks load its tokenizer,
    which imports transformers.
    """
    checked_before: Callable[[str], bool] = lambda source: False  # noqa: E731
    if cache_dir is not None:
        from headstats.engine.cache import StateCache
        from headstats.study.memo import described_before

        store = StateCache(cache_dir)
        checked_before = lambda source: described_before(source, device=protocol.device,  # noqa: E731
                                                         dtype=protocol.dtype, cache=store)
    folders = []
    for spec in protocol.models:
        if spec.finetune is None:
            folder = _model_folder(spec.source, spec.revision, "model", checked_before=checked_before)
        else:
            folder = check_finetune(spec.finetune, data_root=protocol.data_root, name=spec.name)
        if folder is not None:
            folders.append(folder)
    return folders


def check_ablation(protocol: Protocol) -> None:
    """Refuse, under an analysis that ablates heads (its spec's ``needs`` holds ``"ablation"``), a model whose heads
    cannot be ablated one by one (ALBERT shares one attention module across its layers;
    :func:`headstats.model.task_heads.ablation_support`), with the reason."""
    from headstats.analyses import get_analysis

    ablating = [name for name in protocol.analyses if "ablation" in get_analysis(name).needs]
    if not ablating:
        return
    import json

    from headstats.model.sources import resolve_model_path
    from headstats.model.task_heads import ablation_support

    for spec in protocol.models:
        source = spec.finetune.base if spec.finetune is not None else spec.source
        try:
            path, is_local = (source, True) if Path(source).is_dir() else resolve_model_path(source)
            model_type = json.loads((Path(path) / "config.json").read_text(encoding="utf-8")).get("model_type") \
                if is_local else None
        except (HeadstatsError, OSError, ValueError):
            model_type = None
        reason = ablation_support(model_type) if model_type is not None else None
        if reason is not None:
            raise ProtocolError(f"analysis {ablating[0]!r} cannot ablate the heads of model {spec.name!r}: {reason}; "
                                f"leave {ablating[0]!r} out of 'analyses' for it")


def _layers_and_heads(source: str) -> tuple[int, int] | None:
    """``(layers, heads)`` from a local model folder's ``config.json``, without loading the model; None when
    the model is on the hub or its config does not say."""
    import json

    from headstats.model.sources import resolve_model_path

    try:
        path, is_local = resolve_model_path(source)
        if not is_local:
            return None
        config = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (HeadstatsError, OSError, ValueError):
        return None
    layers = config.get("num_hidden_layers", config.get("n_layers"))
    heads = config.get("num_attention_heads", config.get("n_heads"))
    return (int(layers), int(heads)) if isinstance(layers, int) and isinstance(heads, int) else None


def largest_family(protocol: Protocol) -> int | None:
    """The most hypotheses one family of the protocol can hold (every role tested on every data set), from
    the models' configs; None when a model's size is unknown before loading (a hub id not on disk)."""
    st = protocol.statistics
    fam = set(st.family)
    sizes = []
    for spec in protocol.models:
        shape = _layers_and_heads(spec.source if spec.finetune is None else spec.finetune.base)
        if shape is None:
            return None
        layers, heads = shape
        sizes.append(heads * (1 if "layer" in fam else layers) * (1 if "role" in fam else len(protocol.scoring.roles))
                     * (1 if "dataset" in fam else len(protocol.datasets)))
    if not sizes:
        return None
    return max(sizes) if "model" in fam else sum(sizes)


def check_resampling(protocol: Protocol) -> None:
    """Refuse an explicit ``n_resamples`` with which a resampling test could not assign any head.

    The smallest p-value of ``bootstrap`` or ``permutation`` is 1 / (B + 1); corrected over a family of m
    hypotheses it must still reach alpha (:func:`headstats.stats.onesample.resamples_needed`). ``auto`` always
    passes (it picks enough).
    """
    from headstats.stats.onesample import auto_resamples, get_test, resamples_needed

    st = protocol.statistics
    if st.n_resamples == "auto" or not get_test(st.test).resampling:
        return
    m = largest_family(protocol)
    if m is None:
        return
    need = resamples_needed(m, alpha=st.alpha, correction=st.correction)
    if st.n_resamples < need:
        raise ProtocolError(
            f"statistics.n_resamples = {st.n_resamples} is too small for test '{st.test}' with correction "
            f"'{st.correction}' over families of up to {m} hypotheses: its smallest p-value 1/(B+1) can never "
            f"be corrected to alpha = {st.alpha:g}, so no head could be assigned; set n_resamples to at least "
            f"{need} (or 'auto', which takes {auto_resamples(m, alpha=st.alpha, correction=st.correction)})"
        )


def check_finetune(recipe: FinetuneRecipe, *, data_root: str | Path | None = None, name: str | None = None) -> Path | None:
    """Check a fine-tuning recipe before training: its base model, GLUE task and training data.

    Training reads the task's dev split (and its train split where there is one) under the GLUE data root
    (``data_root``, else ``$HEADSTATS_GLUE_ROOT``), or through the ``datasets`` library when no root is
    given. Returns the base model's local folder (None for a hub id).

    Raises
    ------
    ModelError
        The base model is missing, has no weights or is of an unsupported kind.
    DataError
        Unknown task, a missing data root or split file, or no ``datasets`` library without a data root.
    """
    from headstats.inputs.glue import available_splits, get_task, glue_file, glue_root

    label = f"model {name!r}" if name else "fine-tuning"
    folder = _model_folder(recipe.base, None, f"base model of {label}")
    with _kind(DataError, f"{label}: "):
        task = get_task(recipe.task)
    root = glue_root(data_root)
    if root is None:
        _check_datasets_library(f"{label} (GLUE {task.name})", needs_hub=False)
        return folder
    if not root.is_dir():
        raise DataError(f"{label}: GLUE data folder {str(root)!r} does not exist; give --data-root, 'data_root:' "
                        "or HEADSTATS_GLUE_ROOT naming a folder with <root>/SST-2/dev.tsv, ...")
    needed = ["dev"] + (["train"] if recipe.train_split == "train" else [])
    have = available_splits(task.name, root)
    for split in needed:
        if split not in have:
            path = glue_file(task.name, split, root)
            raise DataError(f"{label}: GLUE file {str(path)!r} does not exist ({task.folder} has: "
                            f"{', '.join(have) or 'nothing'}); give a data root that holds {task.folder}/{path.name}")
    return folder


# ------------------------------------------------------------------------------------------------- data


def _check_readable(path: Path, what: str) -> None:
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise DataError(f"{what} {str(path)!r} cannot be read ({exc.strerror or exc}); check its permissions") from None


def _check_data_file(spec: DatasetSpec) -> Path:
    from headstats.inputs.readers import infer_format

    what = f"data file of data set {spec.name!r}"
    if "\0" in spec.path:
        raise DataError(f"{what} {printable(spec.path)!r} holds a NUL character; fix the path")
    path = Path(spec.path)
    if not path.exists():
        raise DataError(f"{what} {spec.path!r} does not exist; check the path (a relative path starts from the "
                        "working folder or the protocol's folder)")
    if path.is_dir():
        raise DataError(f"{what} {spec.path!r} is a folder; name one data file (.txt, .jsonl, .tsv, .conllu)")
    if not path.is_file():
        raise DataError(f"{what} {spec.path!r} is not a regular file; name one data file")
    _check_readable(path, what)
    if spec.format is None:
        with _kind(DataError, f"data set {spec.name!r}: "):
            infer_format(path)
    return path


def _check_datasets_library(what: str, *, needs_hub: bool = True) -> None:
    from headstats.inputs.glue import GLUE_ROOT_ENV

    if importlib.util.find_spec("datasets") is None:
        raise DataError(f"{what} has no GLUE data folder, and reading GLUE without one needs the datasets library "
                        f"('pip install datasets'); or give --data-root, 'data_root:' or {GLUE_ROOT_ENV}")
    if not needs_hub:
        return
    from headstats.hub import hub_reachable

    offline = any(os.environ.get(v, "0").lower() in ("1", "true", "yes") for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    if not offline and not hub_reachable():
        raise DataError(f"{what} has no GLUE data folder and the Hugging Face hub cannot be reached (offline?); "
                        f"give a local GLUE folder with --data-root, 'data_root:' in the protocol, or {GLUE_ROOT_ENV}")


def _check_glue(spec: DatasetSpec, protocol: Protocol) -> list[Path]:
    from headstats.inputs.glue import _split_name, available_splits, get_task, glue_file, glue_root

    glue = spec.glue
    prefix = f"data set {spec.name!r}: "
    with _kind(DataError, prefix):
        task = get_task(glue.task)
        split = _split_name(task, glue.split)
    given = glue.root or protocol.data_root
    if given is not None and "\0" in str(given):
        raise DataError(f"{prefix}the GLUE data folder holds a NUL character; fix data_root / glue.root")
    root = glue_root(given)
    if root is None:
        _check_datasets_library(f"data set {spec.name!r} (GLUE {task.name})")
        return []
    if not root.is_dir():
        state = "is not a folder" if root.exists() else "does not exist"
        raise DataError(f"{prefix}GLUE data folder {str(root)!r} {state}; check --data-root, 'data_root:', "
                        "'glue.root:' or HEADSTATS_GLUE_ROOT")
    path = glue_file(task.name, split, root)
    if not path.is_file():
        have = available_splits(task.name, root)
        raise DataError(f"{prefix}GLUE file {str(path)!r} does not exist ({task.folder} has: "
                        f"{', '.join(have) or 'nothing'}); give another split or a data root that holds "
                        f"{task.folder}/{path.name}")
    _check_readable(path, f"GLUE file of data set {spec.name!r}")
    return [root, path]


def check_data(protocol: Protocol) -> list[Path]:
    """Check every data set without reading it; return the files and folders the run will read."""
    inputs: list[Path] = []
    for spec in protocol.datasets:
        if spec.path is not None:
            inputs.append(_check_data_file(spec))
        else:
            inputs.extend(_check_glue(spec, protocol))
    return inputs


def _needs_spacy(protocol: Protocol) -> bool:
    from headstats.analyses.roles import get_role

    arcs = any(get_role(r).kind == "arc" for r in protocol.scoring.roles)
    for spec in protocol.datasets:
        if spec.parse == "spacy":
            return True
        if spec.parse == "auto" and arcs:
            fmt = spec.format or (Path(spec.path).suffix.lower() if spec.path else "glue")
            if fmt not in ("conllu", ".conllu", ".conll"):
                return True
    return False


def check_parser(protocol: Protocol) -> None:
    """Refuse a spaCy parser that is not installed when raw text must be parsed (nothing is loaded)."""
    name = protocol.scoring.parser
    if not _needs_spacy(protocol):
        return
    try:
        found = Path(name).is_dir() or importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ProtocolError(
            f"spaCy parser {printable(name)!r} (scoring.parser) is not installed, and raw text must be parsed "
            f"for the syntactic roles; install it (pip install {name.replace('_', '-')}) or use CoNLL-U data"
        )


# ------------------------------------------------------------------------------------------------ output


def check_output(out: str | Path, *, overwrite: bool = False, inputs: Sequence[str | Path] = ()) -> Path:
    """:func:`headstats.study.storage.check_output_folder`, then a probe where the folder will be made.

    The staging folder is made beside the output folder, so a probe file is created and deleted in the
    output's parent, or in its nearest existing ancestor when the parent does not exist yet.
    """
    from headstats.study.storage import check_output_folder

    with _kind(OutputError):
        resolved = check_output_folder(out, overwrite=overwrite, inputs=inputs)
    check_writable(resolved)
    return resolved


def check_writable(out: Path) -> None:
    """Refuse an output folder whose parent cannot be created or written (read-only, no permission)."""
    ancestor = out.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"output folder {str(out)!r} cannot be made: {str(ancestor)!r} is a file; "
                          "choose another --out")
    try:
        handle, probe = tempfile.mkstemp(prefix=".headstats-probe-", dir=ancestor)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OutputError(f"output folder {str(out)!r} cannot be written ({reason.lower()} in {str(ancestor)!r}); "
                          "choose another --out or make that folder writable") from None
