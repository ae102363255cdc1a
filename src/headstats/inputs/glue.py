"""GLUE tasks as :class:`~headstats.inputs.records.Record` lists: TSV files in the usual layout, or ``datasets``.

A GLUE data folder has one sub-folder per task, as ``download_glue_data.py`` writes it::

    <root>/SST-2/{train,dev,test}.tsv     <root>/MRPC/{train,dev,test}.tsv    <root>/QNLI/{dev,test}.tsv ...

The files are tab-separated and *not quoted*: a ``"`` is an ordinary character of the text (MRPC and QNLI
have fields that start with one), so they are read with ``csv.QUOTE_NONE``. MRPC's train and dev headers
start with a UTF-8 byte-order mark, and CoLA's train and dev files have no header at all (columns: source,
label, original label, sentence). Test files have no label column and usually an ``index`` column.

Where the files come from, in order: the ``root`` argument (a protocol's ``data_root:`` or ``glue.root:``,
or the CLI's ``--data-root``), else the environment variable ``HEADSTATS_GLUE_ROOT``, else the
``datasets`` library (``nyu-mll/glue`` on the Hugging Face hub, which needs internet).

Labels are kept as the strings the TSV files use (``"0"``/``"1"``, ``"entailment"``/``"not_entailment"``);
rows read through ``datasets`` are given the same strings, so both sources give identical records.
"""

from __future__ import annotations

import csv
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from headstats.errors import DataError, HeadstatsError
from headstats.hub import hub_reachable
from headstats.inputs.files import check_data_file, iter_lines
from headstats.inputs.filters import check_usable
from headstats.inputs.records import Record

#: Environment variable naming a GLUE data folder, used when no root is given.
GLUE_ROOT_ENV = "HEADSTATS_GLUE_ROOT"
#: The dataset on the Hugging Face hub used when no local folder is given.
HF_GLUE = "nyu-mll/glue"


@dataclass(frozen=True)
class GlueTask:
    """How one GLUE task is laid out on disk and in ``datasets``.

    Attributes
    ----------
    name : str
        headstats' key (``sst2``); also the ``datasets`` configuration name.
    folder : str
        The task's folder under a GLUE root (``SST-2``).
    text_a, text_b : str, str or None
        TSV columns of the two sides (``text_b`` None for single-sentence tasks).
    label : str or None
        TSV label column (None for headerless CoLA, whose label is column 1).
    labels : tuple of str
        Label strings as the TSV files write them, in the order of the ``datasets`` class ids.
        Empty for regression (STS-B).
    hf_text_a, hf_text_b : str, str or None
        The same columns in ``datasets``.
    splits : dict
        headstats split name -> TSV file stem (``dev`` -> ``dev_matched`` for MNLI).
    hf_splits : dict
        headstats split name -> ``datasets`` split name.
    metric : str
        The task's usual GLUE metric besides accuracy: ``f1``, ``mcc`` or ``accuracy``.
    """

    name: str
    folder: str
    text_a: str
    text_b: str | None
    label: str | None
    labels: tuple[str, ...]
    hf_text_a: str
    hf_text_b: str | None
    splits: dict[str, str]
    hf_splits: dict[str, str]
    metric: str = "accuracy"
    headerless: tuple[str, ...] = ()

    @property
    def is_pair(self) -> bool:
        return self.text_b is not None

    @property
    def num_labels(self) -> int:
        return len(self.labels)


_SPLITS = {"train": "train", "dev": "dev", "test": "test"}
_HF_SPLITS = {"train": "train", "dev": "validation", "test": "test"}

#: The task table. Keys are headstats task names; :func:`get_task` also accepts folder names and aliases.
GLUE_TASKS: dict[str, GlueTask] = {
    t.name: t
    for t in (
        GlueTask("sst2", "SST-2", "sentence", None, "label", ("0", "1"), "sentence", None, _SPLITS, _HF_SPLITS),
        GlueTask(
            "mrpc", "MRPC", "#1 String", "#2 String", "Quality", ("0", "1"), "sentence1", "sentence2",
            _SPLITS, _HF_SPLITS, metric="f1",
        ),
        GlueTask(
            "qqp", "QQP", "question1", "question2", "is_duplicate", ("0", "1"), "question1", "question2",
            _SPLITS, _HF_SPLITS, metric="f1",
        ),
        GlueTask(
            "qnli", "QNLI", "question", "sentence", "label", ("entailment", "not_entailment"), "question",
            "sentence", _SPLITS, _HF_SPLITS,
        ),
        GlueTask(
            "rte", "RTE", "sentence1", "sentence2", "label", ("entailment", "not_entailment"), "sentence1",
            "sentence2", _SPLITS, _HF_SPLITS,
        ),
        GlueTask(
            "wnli", "WNLI", "sentence1", "sentence2", "label", ("0", "1"), "sentence1", "sentence2",
            _SPLITS, _HF_SPLITS,
        ),
        GlueTask(
            "cola", "CoLA", "sentence", None, None, ("0", "1"), "sentence", None, _SPLITS, _HF_SPLITS,
            metric="mcc", headerless=("source", "label", "original_label", "sentence"),
        ),
        GlueTask(
            "mnli", "MNLI", "sentence1", "sentence2", "gold_label", ("entailment", "neutral", "contradiction"),
            "premise", "hypothesis",
            {
                "train": "train", "dev": "dev_matched", "dev_matched": "dev_matched",
                "dev_mismatched": "dev_mismatched", "test": "test_matched", "test_matched": "test_matched",
                "test_mismatched": "test_mismatched",
            },
            {
                "train": "train", "dev": "validation_matched", "dev_matched": "validation_matched",
                "dev_mismatched": "validation_mismatched", "test": "test_matched",
                "test_matched": "test_matched", "test_mismatched": "test_mismatched",
            },
        ),
        GlueTask(
            "stsb", "STS-B", "sentence1", "sentence2", "score", (), "sentence1", "sentence2", _SPLITS,
            _HF_SPLITS, metric="pearson",
        ),
    )
}

_ALIASES = {"sst": "sst2", "sts": "stsb", "mnli_matched": "mnli"}
#: Column names that carry a row id, in order of preference.
_ID_COLUMNS = ("index", "id", "idx")
_SPLIT_ALIASES = {"validation": "dev", "val": "dev", "valid": "dev"}


def get_task(task: str) -> GlueTask:
    """Look a task up by name, folder name or alias, case- and punctuation-insensitively.

    Raises
    ------
    HeadstatsError
        If the task is unknown; the message lists the known ones.
    """
    key = task.strip().lower().replace("-", "").replace("_", "")
    key = _ALIASES.get(key, key)
    for t in GLUE_TASKS.values():
        if key in (t.name, t.folder.lower().replace("-", "")):
            return t
    raise HeadstatsError(f"unknown GLUE task {task!r}; choose one of {', '.join(GLUE_TASKS)}")


def _split_name(task: GlueTask, split: str) -> str:
    split = _SPLIT_ALIASES.get(split.lower(), split.lower())
    if split not in task.splits:
        raise HeadstatsError(
            f"GLUE task {task.name!r} has no split {split!r}; choose one of {', '.join(task.splits)}"
        )
    return split


# --------------------------------------------------------------------------------------------------- TSV


def _infer_task_from_header(header: list[str]) -> GlueTask | None:
    """The task whose columns a header shows; None when the header fits none (or is CoLA's first row)."""
    cols = set(header)
    if "#1 String" in cols:
        return GLUE_TASKS["mrpc"]
    if "question1" in cols:
        return GLUE_TASKS["qqp"]
    if {"question", "sentence"} <= cols:
        return GLUE_TASKS["qnli"]
    if {"sentence1", "sentence2"} <= cols:
        if "gold_label" in cols or ("genre" in cols and "score" not in cols):
            return GLUE_TASKS["mnli"]
        if "score" in cols or "genre" in cols:
            return GLUE_TASKS["stsb"]
        # RTE and WNLI have the same columns; the text is read the same way, so RTE stands for both
        # unless the folder name says otherwise.
        return GLUE_TASKS["rte"]
    if "sentence" in cols:
        # SST-2 and CoLA's test file share ``index, sentence``; read the same way.
        return GLUE_TASKS["sst2"]
    return None


def _looks_like_cola_row(row: list[str]) -> bool:
    return len(row) == 4 and row[1] in ("0", "1")


def _task_from_folder(path: Path) -> GlueTask | None:
    try:
        return get_task(path.parent.name)
    except HeadstatsError:
        return None


def read_glue_tsv(path: str | Path, *, task: str | None = None, split: str | None = None) -> list[Record]:
    """Read one GLUE TSV file into records.

    Parameters
    ----------
    path : str or Path
        A GLUE ``.tsv`` file (``train``, ``dev``, ``test`` or MNLI's ``dev_matched`` ...).
    task : str, optional
        The task (``sst2``, ``MRPC``, ...). By default the parent folder's name (``SST-2``) if it names a
        task, else the header's columns (``#1 String`` -> MRPC, ``question1`` -> QQP, ...); a file with no
        known header whose rows have CoLA's four columns is read as CoLA.
    split : str, optional
        Recorded in each record's ``meta``; by default the file's stem.

    Returns
    -------
    list of Record
        In file order. ``sentence_id`` is the row's ``index``/``id`` column where the file has one, else
        the 0-based index of the data row. ``label`` is None in test files. ``meta`` holds ``task``,
        ``split``, ``source`` (the file) and ``line`` (1-based line number in the file).

    Raises
    ------
    DataError
        A missing file or a folder, a file that is not UTF-8 text or holds NUL bytes (a binary file), an
        empty file, a header without the task's columns, or malformed rows (wrong number of fields, a tab
        inside a text): the message gives how many and the first line numbers.
    HeadstatsError
        An unknown task.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"GLUE file {str(path)!r} does not exist; check the path or the GLUE data root")
    check_data_file(path, what="GLUE file")
    gtask = get_task(task) if task is not None else _task_from_folder(path)
    split = split or path.stem
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        return _read_tsv(path, gtask, split)
    except csv.Error as exc:
        raise DataError(f"GLUE file {str(path)!r} cannot be read as TSV ({exc}); give the file as GLUE distributes it") from None


def _read_tsv(path: Path, gtask: GlueTask | None, split: str) -> list[Record]:
    # iter_lines drops MRPC's byte-order mark, keeps the raw line ends for csv, and refuses a file that is not
    # UTF-8 text or holds NUL bytes (naming the line).
    with closing(iter_lines(path, keepends=True)) as numbered:
        reader = csv.reader((line for _, line in numbered), delimiter="\t", quoting=csv.QUOTE_NONE)
        try:
            first = next(reader)
        except StopIteration:
            raise DataError(f"GLUE file {str(path)!r} is empty; give a non-empty file") from None
        header_task = _infer_task_from_header(first)
        if gtask is None:
            gtask = header_task
        if gtask is None and _looks_like_cola_row(first):
            gtask = GLUE_TASKS["cola"]
        if gtask is None:
            raise DataError(
                f"cannot tell which GLUE task {str(path)!r} holds from its header {first[:5]}: it has none of the "
                f"GLUE columns (sentence, sentence1/sentence2, question1, #1 String, ...); give the task "
                f"({', '.join(GLUE_TASKS)}) or a GLUE file"
            )
        headerless = bool(gtask.headerless) and header_task is None and _looks_like_cola_row(first)
        if headerless:
            columns = list(gtask.headerless)
            rows: Iterable[list[str]] = _chain_first(first, reader)
        else:
            columns = first
            rows = reader
        return _rows_to_records(rows, columns, gtask, split, path, reader)


def _chain_first(first: list[str], rest: Iterable[list[str]]):
    yield first
    yield from rest


def _rows_to_records(
    rows: Iterable[list[str]],
    columns: list[str],
    gtask: GlueTask,
    split: str,
    path: Path,
    reader: Any,
) -> list[Record]:
    col = {name: i for i, name in enumerate(columns)}
    if gtask.headerless and columns == list(gtask.headerless):
        label_col = col["label"]
    else:
        label_col = col.get(gtask.label) if gtask.label else None
    for needed in (gtask.text_a, gtask.text_b):
        if needed is not None and needed not in col:
            raise DataError(
                f"GLUE file {str(path)!r} has no column {needed!r} for task {gtask.name} (its header: "
                f"{columns}); give the right task or a GLUE file of this task"
            )
    id_col = next((col[c] for c in _ID_COLUMNS if c in col), None)
    ia, ib = col[gtask.text_a], (col[gtask.text_b] if gtask.text_b else None)
    width = len(columns)
    records: list[Record] = []
    bad: list[int] = []
    row_index = 0
    for row in rows:
        # One row is one line (QUOTE_NONE), and the reader has read exactly up to this row.
        line = reader.line_num
        if not row:  # a blank line (a trailing one is common); not a record
            continue
        row_index += 1
        if len(row) != width:
            bad.append(line)
            continue
        label = row[label_col] if label_col is not None else None
        records.append(
            Record(
                sentence_id=row[id_col] if id_col is not None else str(row_index - 1),
                text_a=row[ia],
                text_b=row[ib] if ib is not None else None,
                label=label if label not in (None, "") else None,
                meta={"task": gtask.name, "split": split, "source": str(path), "line": line},
            )
        )
    if bad:
        shown = ", ".join(str(n) for n in bad[:5]) + (", ..." if len(bad) > 5 else "")
        raise DataError(
            f"GLUE file {str(path)!r} has {len(bad)} malformed row(s) (not {width} tab-separated fields) at "
            f"line(s) {shown}; repair them, or give the file as the GLUE distribution wrote it"
        )
    if not records:
        raise DataError(f"GLUE file {str(path)!r} has no data rows; give a non-empty file")
    return records


# ---------------------------------------------------------------------------------------------- loading


def glue_root(root: str | Path | None = None) -> Path | None:
    """The GLUE data folder: ``root`` if given, else ``$HEADSTATS_GLUE_ROOT``, else None (use ``datasets``)."""
    if root is not None:
        return Path(root).expanduser()
    env = os.environ.get(GLUE_ROOT_ENV)
    return Path(env).expanduser() if env else None


def glue_file(task: str, split: str = "dev", root: str | Path | None = None) -> Path:
    """Path of a task's split under a GLUE root (``<root>/SST-2/dev.tsv``); the root may be the task folder."""
    gtask = get_task(task)
    split = _split_name(gtask, split)
    base = glue_root(root)
    if base is None:
        raise HeadstatsError(
            f"no GLUE data folder given for {gtask.name}; give --data-root, 'data_root:' in the protocol, "
            f"or set {GLUE_ROOT_ENV}"
        )
    if not base.is_dir():
        raise DataError(f"GLUE data folder {str(base)!r} does not exist; check --data-root / data_root:")
    folder = base / gtask.folder
    if not folder.is_dir() and _task_from_folder(base / "x") == gtask:
        folder = base  # the root is the task's own folder
    return folder / f"{gtask.splits[split]}.tsv"


def tsv_rows(path: str | Path) -> int:
    """Rows of a GLUE TSV file (non-empty lines after the header), counted without parsing."""
    with open(path, "rb") as handle:
        return max(0, sum(1 for line in handle if line.strip()) - 1)


def available_splits(task: str, root: str | Path | None = None) -> list[str]:
    """The splits of a task that exist as files under a GLUE root (all of them when reading ``datasets``)."""
    gtask = get_task(task)
    if glue_root(root) is None:
        return [s for s in ("train", "dev", "test")]
    out = []
    for split in ("train", "dev", "test"):
        try:
            if glue_file(gtask.name, split, root).is_file():
                out.append(split)
        except HeadstatsError:
            pass
    return out


def load_glue(
    task: str,
    *,
    split: str = "dev",
    root: str | Path | None = None,
    n: int | None = None,
    sample: Literal["first", "random"] = "first",
    seed: int = 0,
    exclude_ids: Iterable[str] = (),
    source: str | Path | Callable[..., Any] | None = None,
) -> list[Record]:
    """Records of one GLUE task and split, optionally the first ``n`` or a seeded random sample of ``n``.

    Parameters
    ----------
    task : str
        ``sst2``, ``mrpc``, ``qqp``, ``qnli``, ``rte``, ``wnli``, ``cola``, ``mnli``, ``stsb`` (folder
        names such as ``SST-2`` work too).
    split : str
        ``train``, ``dev`` (``validation``) or ``test``; MNLI also ``dev_mismatched``/``test_mismatched``.
    root : str or Path, optional
        A GLUE data folder. Default: ``$HEADSTATS_GLUE_ROOT``; when neither is set, the ``datasets``
        library (``nyu-mll/glue``, online).
    n : int, optional
        How many records to return (all by default). If fewer remain, all of them are returned with a
        warning.
    sample : {"first", "random"}
        The first ``n`` rows in file order, or ``n`` rows drawn without replacement with
        ``numpy.random.default_rng(seed)`` and returned in file order.
    seed : int
        Seed of the random sample.
    exclude_ids : iterable of str
        ``sentence_id`` values to leave out before taking ``n`` (e.g. the dev rows a model was
        fine-tuned on, see :func:`headstats.model.finetune.finetune_train_ids`).
    source : str, Path or callable, optional
        Only when reading through ``datasets``: what to pass to ``datasets.load_dataset`` instead of
        ``nyu-mll/glue`` (a local folder of parquet/csv files named by split, or a hub id), or a callable
        ``source(task_name, hf_split) -> datasets.Dataset`` (tests use it; the hub is unreachable offline).

    Raises
    ------
    DataError
        A missing or unreadable file, or one whose rows are all empty (no visible character).
    HeadstatsError
        Unknown task or split, or no local folder and no reachable hub.
    """
    if sample not in ("first", "random"):
        raise HeadstatsError(f"unknown sample {sample!r}; choose 'first' or 'random'")
    if n is not None and n < 1:
        raise HeadstatsError(f"n must be at least 1, not {n}")
    gtask = get_task(task)
    split = _split_name(gtask, split)
    base = glue_root(root)
    if base is not None:
        path = glue_file(gtask.name, split, base)
        if not path.is_file():
            have = available_splits(gtask.name, base)
            raise DataError(
                f"GLUE file {str(path)!r} does not exist ({gtask.folder} has: {', '.join(have) or 'nothing'}); "
                f"give another split or a data root that holds {gtask.folder}/{path.name}"
            )
        records = read_glue_tsv(path, task=gtask.name, split=split)
    else:
        records = _load_from_datasets(gtask, split, source)
    check_usable(records, f"GLUE {gtask.name} {split}")
    return select_records(records, n=n, sample=sample, seed=seed, exclude_ids=exclude_ids)


def select_records(
    records: Sequence[Record],
    *,
    n: int | None = None,
    sample: Literal["first", "random"] = "first",
    seed: int = 0,
    exclude_ids: Iterable[str] = (),
) -> list[Record]:
    """Leave out ``exclude_ids``, then take the first ``n`` or a seeded sample of ``n`` (in file order)."""
    excluded = {str(i) for i in exclude_ids}
    pool = [r for r in records if r.sentence_id not in excluded] if excluded else list(records)
    if n is None:
        return pool
    if n > len(pool):
        warnings.warn(f"asked for {n} records but only {len(pool)} are available; using all of them", stacklevel=3)
        return pool
    if sample == "first":
        return pool[:n]
    rng = np.random.default_rng(seed)
    keep = np.sort(rng.choice(len(pool), size=n, replace=False))
    return [pool[i] for i in keep]


def _load_from_datasets(gtask: GlueTask, split: str, source: Any) -> list[Record]:
    hf_split = gtask.hf_splits[split]
    offline_hint = (
        f"could not load GLUE {gtask.name} ({hf_split}) with the datasets library (offline?); give a local GLUE "
        f"folder with --data-root, 'data_root:' in the protocol, or {GLUE_ROOT_ENV}"
    )
    try:
        if callable(source):
            ds = source(gtask.name, hf_split)
        else:
            try:
                import datasets
            except ImportError:
                raise HeadstatsError(
                    f"reading GLUE without a local folder needs the datasets library ('pip install datasets'); "
                    f"or give --data-root, 'data_root:' or {GLUE_ROOT_ENV}"
                ) from None
            if source is None:
                offline = any(os.environ.get(v, "0").lower() in ("1", "true", "yes")
                              for v in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
                if not offline and not hub_reachable():
                    # set HF_DATASETS_OFFLINE=1 to read a copy already in the datasets cache
                    raise HeadstatsError(offline_hint)
                ds = datasets.load_dataset(HF_GLUE, gtask.name, split=hf_split)
            else:
                local = Path(source).expanduser()
                if local.exists() and (local / gtask.name).is_dir():
                    ds = datasets.load_dataset(str(local), data_dir=gtask.name, split=hf_split)
                elif local.exists():
                    ds = datasets.load_dataset(str(local), split=hf_split)
                else:
                    ds = datasets.load_dataset(str(source), gtask.name, split=hf_split)
    except HeadstatsError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of the hub or the files is the same user problem
        raise HeadstatsError(offline_hint) from exc
    return records_from_dataset(ds, gtask.name, split=split, source=str(source or HF_GLUE))


def records_from_dataset(ds: Any, task: str, *, split: str, source: str = HF_GLUE) -> list[Record]:
    """Records from a ``datasets.Dataset`` with the columns of ``nyu-mll/glue`` (``idx``, ``label`` ...).

    Integer class labels become the strings the TSV files use (``-1``, the test sets' "no label", becomes
    None), so the records equal those read from the TSV files.
    """
    gtask = get_task(task)
    cols = set(ds.column_names)
    for needed in (gtask.hf_text_a, gtask.hf_text_b):
        if needed is not None and needed not in cols:
            raise DataError(
                f"dataset for GLUE {gtask.name} has no column {needed!r} (it has {sorted(cols)}); "
                f"give a dataset with the columns of {HF_GLUE}"
            )
    records = []
    for i, row in enumerate(ds):
        label = row.get("label")
        if label is None or (isinstance(label, (int, np.integer)) and label < 0):
            label_s = None
        elif gtask.labels and isinstance(label, (int, np.integer)):
            label_s = gtask.labels[int(label)]
        else:
            label_s = str(label)
        sid = row.get("idx", row.get("id", row.get("index", i)))
        records.append(
            Record(
                sentence_id=str(sid),
                text_a=row[gtask.hf_text_a],
                text_b=row[gtask.hf_text_b] if gtask.hf_text_b else None,
                label=label_s,
                meta={"task": gtask.name, "split": split, "source": source, "line": None},
            )
        )
    if not records:
        raise DataError(f"GLUE {gtask.name} {split} from {source} has no rows")
    return records
