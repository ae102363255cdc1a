"""The functions behind ``import headstats as hs``: a model, records, scores, tests, roles, a comparison, a study.

Each is a thin, documented door to the layer that does the work, so that a user needs no deep import::

    import headstats as hs

    model = hs.load_model("default")
    records = hs.read_records("data/demo/sentences.txt")
    scores = hs.score(model, records, dataset="demo", roles=["local", "delimiter_cls", "syntactic"])
    tests = hs.test_roles(scores, tau=3.0, correction="holm")
    roles = hs.role_table(tests)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from headstats.errors import DataError, IncompatibleResultsError


def score(
    model: Any,
    records: Sequence[Any] | str | Path,
    *,
    dataset: str = "data",
    roles: Sequence[str] | None = None,
    parse: bool | None = None,
    progress: bool = True,
    **options: Any,
):
    """Sieve bias scores (Pande et al. 2021) of every head on every record, as a MeasureArray.

    Parameters
    ----------
    model : LoadedModel or str
        A model from :func:`load_model`, or what it takes (``"default"``, a folder, a hub id).
    records : sequence of Record, str or (str, str); or a path
        Records (:func:`read_records`), sentences, or sentence pairs (each gets its 0-based position as its id:
        :func:`headstats.inputs.records.as_records`); or a data file to read.
    dataset : str
        The data set's name in the results.
    roles : sequence of str, optional
        Registered roles (default: the protocol default, the ten roles of the paper).
    parse : bool, optional
        The preparation of ``headstats run`` (:func:`headstats.study.data.prepare_records`): by default, records
        are parsed with spaCy when a syntactic role is asked for, gold parses kept; ``True`` re-parses every
        record, ``False`` parses none. Records with no visible text, or longer than ``max_length`` can hold
        under ``too_long: skip``, are left out first and counted in ``provenance["counts"]["skipped"]``.
    progress : bool
        Show a progress bar of the inputs scored (a notebook widget in Jupyter, else on stderr); ``False``: none.
    **options
        Any ``scoring`` option of the protocol (``window``, ``max_length``, ``too_long``, ``batch_size``,
        ``count_special_queries``, ``arc_direction``, ``relations``, ``measure``, ``measures``).
        ``measure="norm"`` scores norm-weighted attention (METHODS 6.1); ``measures=["weights", "norm"]`` both, in
        one forward pass.

    Returns
    -------
    MeasureArray, or a list of them
        ``(inputs, layers, heads, roles)`` float32 scores with the inputs' sentence ids; ``.to_frame()`` gives
        the long table of ``scores.parquet``; ``.provenance`` holds the model's and the counts;
        ``.attention_measure`` the measure. In Jupyter it shows as a short table (shape, each role's inputs, mean
        and highest head, provenance). With several ``measures``, a list of one array per measure, in their order
        (:func:`test_roles` takes it and tests each measure).
    """
    from headstats.analyses.sieves import ScoreSettings
    from headstats.inputs.records import as_records
    from headstats.model.loading import LoadedModel, load_model
    from headstats.study.data import prepare_records
    from headstats.study.results import with_skipped
    from headstats.study.scoring import score_records

    loaded = model if isinstance(model, LoadedModel) else load_model(str(model))
    if isinstance(records, str) and not Path(records).exists():  # a sentence, or a path with a typo
        shown = records if len(records) <= 60 else records[:59] + "…"
        raise DataError(f"there is no data file {shown!r}: give a data file's path, or the sentences as a list "
                        "(hs.score(model, [\"The cat sat.\", ...]))")
    if isinstance(records, (str, Path)):
        records = read_records(records)
    records = as_records(records)
    scoring = _score_settings(ScoreSettings, {**({"roles": list(roles)} if roles is not None else {}), **options})
    mode = {None: "auto", True: "spacy", False: "none"}[parse]
    records, skipped, _ = prepare_records(records, scoring, name=dataset, parse=mode)
    bar, _ = python_progress(progress)
    with bar(f"scoring {loaded.name} on {dataset}", len(records)) as advance:
        run = score_records(loaded, records, dataset=dataset, roles=scoring.roles,
                            settings=scoring, max_length=scoring.max_length,
                            too_long=scoring.too_long, batch_size=scoring.batch_size, progress=advance)
    for array in run.arrays:
        array.provenance.update(counts=with_skipped(run.counts, skipped))
    return run.array if len(run.arrays) == 1 else run.arrays


def _score_settings(settings: type, given: dict) -> Any:
    """``settings(**given)`` (the scoring options), or one line naming the first bad option and what it allows
    (:func:`headstats.config.protocol.validation_message`), with the option meant when one is misspelt."""
    from pydantic import ValidationError

    from headstats.config.protocol import validation_message
    from headstats.errors import ProtocolError
    from headstats.registry import did_you_mean

    try:
        return settings(**given)
    except ValidationError as exc:
        unknown = [e["loc"][0] for e in exc.errors() if e["type"] == "extra_forbidden" and e["loc"]]
        if unknown:
            known = list(settings.model_fields)
            raise ProtocolError(f"unknown score option {unknown[0]!r}"
                                + (did_you_mean(str(unknown[0]), known) or f"; the options are {', '.join(known)}")
                                ) from None
        raise ProtocolError(validation_message(exc, what="score options")) from None


class RecordList(list):
    """The records :func:`read_records` gives: a plain list of :class:`~headstats.inputs.records.Record`, whose
    repr is one line (a notebook cell ending in ``hs.read_records(...)`` printed every record, 42 KB for the
    demo sentences)."""

    def __repr__(self) -> str:
        if not self:
            return "RecordList(0 records)"
        from headstats.inputs.records import count_records

        parsed = ", parsed" if all(r.is_parsed for r in self) else ""
        first = self[0].text_a if len(self[0].text_a) <= 40 else self[0].text_a[:39] + "…"
        return f"RecordList({count_records(self)}{parsed}; first {self[0].sentence_id!r}: {first!r})"


def read_records(path: str | Path, *, format: str | None = None, limit: int | None = None) -> RecordList:
    """Records of a data file (``.txt``, ``.jsonl``, GLUE ``.tsv``, ``.conllu``); see the README's formats."""
    from headstats.inputs.readers import read_records as read

    return RecordList(read(path, format=format, limit=limit))


def view(model: Any = "default", text: str | None = None, *, pair: str | None = None, data: str | Path | None = None,
         limit: int = 3, measure: str = "weights", run: str | Path | None = None, dataset: str | None = None,
         window: int | None = None, max_length: int | None = None):
    """Look at any sentence: a model view of every head, a head view, a heat map and a sieve grid, in one offline
    HTML page (shown inline in Jupyter; ``.save("v.html")`` writes it). The same as ``headstats view``.

    Parameters
    ----------
    model : LoadedModel or str
        A model from :func:`load_model`, or what it takes.
    text, pair : str, optional
        The input (``pair``: its sentence B); or ``data`` (a data file) and ``limit`` (its first inputs).
    measure : str
        What is drawn: ``weights`` (the attention weights).
    run : path, optional
        A finished run folder: each head's roles, tau, claims and the run's inputs where it scores highest.
    dataset, window, max_length
        The run's data set shown; w of the ``local`` sieve (default the run's, else 2); truncation length
        (default the model's maximum).

    Returns
    -------
    AttentionView
        ``.html``, ``.save(path)``; its sieve grid for a role equals :func:`score`'s per-input score.
    """
    from headstats.report.viewer.build import build_view

    return build_view(model, text, pair=pair, data=data, limit=limit, measure=measure, run=run, dataset=dataset,
                      window=window, max_length=max_length)


def compare(before, after, *, test: str = "wilcoxon", alternative: str = "two-sided", correction: str = "holm",
            family: Sequence[str] = ("dataset",), confidence: float = 0.95, alpha: float = 0.05):
    """Head-by-head paired tests of the change from ``before`` to ``after`` scores of the same inputs.

    Parameters
    ----------
    before, after : MeasureArray or DataFrame
        Scores of two models on the same inputs (:func:`score`), scored with the same tokenizer.

    Returns
    -------
    DataFrame
        One row per (dataset, role, layer, head): ``model_before``, ``model_after``, the median change, its
        Hodges-Lehmann interval, the p-values and ``reject`` (see ``docs/statistics.md``).

    Raises
    ------
    IncompatibleResultsError
        If the two hold different inputs, or came from models whose tokenizers differ.
    """
    from headstats.measures import MeasureArray, check_same_inputs
    from headstats.model.tokenizers import check_same_tokenizer
    from headstats.study.scoring import long_frame
    from headstats.stats.paired import paired_tests

    _check_kind(before, "before")
    _check_kind(after, "after")
    if isinstance(before, MeasureArray) and isinstance(after, MeasureArray):
        check_same_inputs(before, after)
        check_same_tokenizer(*(x.provenance.get("model", {}) for x in (before, after)),
                             names=[before.model, after.model])
        records = [*_provenance(before), *_provenance(after)]
        before, after = long_frame([before]), long_frame([after])
    else:
        records = [*_provenance(before), *_provenance(after)]
    out = paired_tests(before, after, test=test, alternative=alternative, correction=correction,
                       family=tuple(family), confidence=confidence, alpha=alpha)
    return _attach(out, records)


def test_roles(scores, *, options=None, tau=None, alpha=None, test=None, correction=None, family=None,
               confidence=None, seed: int = 0, min_n=None, n_resamples=None, sequential=None, power_target=None,
               effect_of_interest=None):
    """:func:`headstats.stats.onesample.test_roles` (the same arguments: ``tau``, ``test``, ``correction``,
    ``alpha``, ``family`` ...), with the scores' :class:`~headstats.provenance.Provenance` (model weights,
    tokenizer, inputs, versions) in the table's ``.attrs["provenance"]``.

    Design power is NaN, with a note, where tau is at or above the mean ceiling of the head's inputs (as in a
    run: :func:`headstats.stats.power.mark_out_of_reach`) when the scores carry their ceilings (MeasureArrays);
    a long table read from disk carries none, and its power notes say that the power assumes tau reachable.

    Scores of several attention measures (:func:`score` with ``measures=[...]``, or ``scores.parquet`` of such a
    run) are tested measure by measure, as a run does; the table has a ``measure`` column after ``dataset``
    (``weights`` for scores that name none), the first measure's rows first."""
    import pandas as pd

    from headstats.analyses.pande_roles.finish.tables import add_ceilings
    from headstats.measures import attention_measures, on_measure
    from headstats.stats.onesample import test_roles as tests_of
    from headstats.stats.power import mark_out_of_reach

    _check_kind(scores, "scores")
    options = dict(options=options, tau=tau, alpha=alpha, test=test, correction=correction, family=family,
                   confidence=confidence, seed=seed, min_n=min_n, n_resamples=n_resamples, sequential=sequential,
                   power_target=power_target, effect_of_interest=effect_of_interest)
    parts = []
    for measure in attention_measures(scores):
        mine = on_measure(scores, measure)
        if isinstance(mine, pd.DataFrame) and "measure" in mine.columns:
            mine = mine.drop(columns="measure")
        tests = tests_of(mine, **options)
        marked = mark_out_of_reach(add_ceilings(tests, mine))
        if marked["score_ceiling"].isna().all() and "power_note" in marked:
            notes = marked["power_note"].fillna("").astype(str)
            marked["power_note"] = [f"{n}; " * bool(n) + NO_CEILING_NOTE for n in notes]
        marked = marked[list(tests.columns)]
        marked.insert(list(marked.columns).index("dataset") + 1, "measure", measure)
        parts.append(marked)
    out = parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)
    return _attach(out, _provenance(scores))


#: The power note of a test on scores without ceilings (a long table read from disk).
NO_CEILING_NOTE = ("power assumes tau is reachable: these scores carry no ceilings (METHODS 1.6), so a role whose "
                   "mean ceiling is at or below tau would show a power it cannot have")


def role_table(tests, **options):
    """:func:`headstats.analyses.pande_roles.finish.role_assignment.role_table` (the same arguments), carrying the tests'
    ``.attrs["provenance"]`` over to the role table."""
    from headstats.analyses.pande_roles.finish.role_assignment import role_table as roles_of
    from headstats.provenance import of_frame

    _check_kind(tests, "tests", tests=True)
    return _attach(roles_of(tests, **options), of_frame(tests))


def _check_kind(value, name: str, *, tests: bool = False) -> None:
    """Refuse, in one line, what is not scores (a MeasureArray of :func:`score`, a list of them, or a long scores
    table) or, with ``tests``, not a test table (a DataFrame of :func:`test_roles`)."""
    import pandas as pd

    from headstats.measures import MeasureArray

    if isinstance(value, pd.DataFrame):
        return
    if not tests and (isinstance(value, MeasureArray) or (isinstance(value, (list, tuple)) and value
                                                          and all(isinstance(a, MeasureArray) for a in value))):
        return
    wanted = ("the table of hs.test_roles (a DataFrame)" if tests
              else "scores from hs.score (a MeasureArray) or a scores table (a DataFrame, e.g. scores.parquet)")
    raise DataError(f"{name} is a {type(value).__name__}; give {wanted}")


def _provenance(scores) -> list:
    """The :class:`~headstats.provenance.Provenance` records of scores: one per MeasureArray, or those a
    table carries in its ``attrs``."""
    from headstats.measures import MeasureArray
    from headstats.provenance import Provenance, of_frame

    if isinstance(scores, MeasureArray):
        return [Provenance.of_array(scores)]
    if isinstance(scores, (list, tuple)) and all(isinstance(a, MeasureArray) for a in scores):
        return [Provenance.of_array(a) for a in scores]
    return of_frame(scores)


def _attach(frame, records: list):
    from headstats.provenance import attach, versioned
    from headstats.provenance import package_versions

    return attach(frame, versioned(records, package_versions()))


def run(protocol: str | Path | Any, out: str | Path | None = None, *, overwrite: bool = False,
        progress: bool = True, limit: int | None = None, overrides: Mapping[str, Any] | None = None):
    """Run a YAML protocol (a path or a loaded Protocol) end to end, as ``headstats run`` does.

    With ``progress`` (the default) each step says what it does and the passes show a progress bar (a notebook
    widget in Jupyter, else on stderr); ``progress=False`` runs silently. ``limit`` and ``overrides`` are
    ``--limit N`` and ``--set KEY=VALUE`` (``overrides={"statistics.tau": 2}``), checked as the protocol's keys
    are and kept in the run's ``protocol.resolved.yaml`` (:mod:`headstats.config.overrides`).

    Returns the :class:`headstats.study.results.StudyResult` (tables, arrays, manifest, output folder). In Jupyter it
    shows as a table of the heads holding each role, and ``result.show_report()`` shows the run's report.
    """
    from headstats.config.overrides import load_overridden, validate_with_overrides
    from headstats.config.protocol import Protocol, validate_protocol
    from headstats.report.builder import build_report
    from headstats.study.run import run_study

    if not isinstance(protocol, Protocol):
        protocol = load_overridden(protocol, overrides or {}, limit=limit)
    elif overrides or limit is not None:
        protocol = validate_with_overrides(protocol.model_dump(mode="json"), overrides or {}, limit=limit,
                                           validate=validate_protocol)
    bar, log = python_progress(progress)
    return run_study(protocol, out, overwrite=overwrite, report=build_report, log=log, progress=bar)


def open_run(run_dir: str | Path):
    """Reopen a finished run folder (``headstats run``'s ``--out``) as the
    :class:`~headstats.study.results.StudyResult` :func:`run` returned: its tests, roles, analysis tables and
    manifest, read without any model (``scores`` is empty: the scores stay in ``scores.parquet``).

    Raises
    ------
    HeadstatsError
        When the folder is not a finished headstats run folder, in one line naming the file.
    """
    from headstats.study.results import StudyResult
    from headstats.study.run_folder import load_run_tables

    folder = Path(run_dir).expanduser()
    _, tables, manifest = load_run_tables(folder)
    return StudyResult(out=folder, scores=[], tests=tables["tests"], roles=tables["roles"],
                       tables=tables.without("tests", "roles"), manifest=manifest)


def python_progress(enabled: bool = True):
    """``(progress, log)`` callbacks for the Python API: tqdm bars (``tqdm.auto``: a widget in Jupyter, text on
    stderr elsewhere) and messages written beside them; both silent when ``enabled`` is False."""
    import sys
    from contextlib import contextmanager

    from headstats.engine.runner import no_progress

    if not enabled:
        return no_progress, lambda message: None
    from tqdm.auto import tqdm

    @contextmanager
    def bar(description: str, total: int):
        with tqdm(total=total, desc=description, unit="input", file=sys.stderr, dynamic_ncols=True) as shown:
            yield shown.update

    def log(message: str) -> None:
        tqdm.write(str(message), file=sys.stderr)

    return bar, log
