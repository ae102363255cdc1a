"""What the viewer shows of a finished run beside the attention: each head's roles, the run's tau per role, the
claims a head takes part in, and "where does this head do it most" (the run's inputs ranked by the head's stored
per-input score for a role). Read from the run folder's tables (``roles.csv``, ``tests.csv``, ``claims.csv``,
``scores.parquet``): no model, no torch.

The data (:func:`run_stats`):

- ``where``: ``"<model> on <dataset>"``;
- ``roles``: ``"layer-head" -> [roles held]``; ``short``: role -> a short badge for the model view;
- ``tau``: role -> the tau its tests used (``tests.csv``);
- ``claims``: one entry per row of ``claims.csv`` of this model and data set, with the roles it names (a head
  takes part in a claim when it holds one of them: :func:`claim_roles`);
- ``rank``: role -> ``"layer-head" -> [[sentence_id, score, text], ...]``, the :data:`TOP` highest scores.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from headstats.errors import HeadstatsError

__all__ = ["TOP", "claim_roles", "run_stats"]

#: Inputs listed per head and role in "where does this head do it most".
TOP = 5
#: The badge of each built-in role in the model view.
SHORT = {"local": "loc", "delimiter": "del", "delimiter_cls": "cls", "delimiter_sep": "sep", "block": "blk",
         "syntactic": "syn"}


def claim_roles(claim: str, sentence: str, roles: list[str]) -> list[str]:
    """The roles a claim names: a role whose name, or the word after ``delimiter_`` (``cls``, ``sep``), is a word
    of the claim's key or sentence (``cls_early``: delimiter_cls; ``local_syntactic``: local, syntactic)."""
    words = set(re.findall(r"[a-z]+", f"{claim} {sentence}".lower().replace("[", " ").replace("]", " ")))
    out = []
    for role in roles:
        names = {role, role.split(":")[-1], role.removeprefix("delimiter_")}
        if names & words or (role == "delimiter" and "delimiter" in words):
            out.append(role)
    return out


def _texts(protocol, dataset: str) -> dict[str, str]:
    """sentence_id -> text of the run's data set when its file is still where the protocol says (else empty)."""
    from headstats.inputs.readers import read_records

    for spec in getattr(protocol, "datasets", []) or []:
        if getattr(spec, "name", None) == dataset and getattr(spec, "path", None) and Path(spec.path).is_file():
            try:
                records = read_records(spec.path, format=spec.format, limit=spec.limit)
            except HeadstatsError:
                return {}
            return {str(r.sentence_id): " ".join(f"{r.text_a} {r.text_b or ''}".split())[:90] for r in records}
    return {}


def _run_files(run: Path):
    """(protocol, roles, tests, claims) of a run folder, read as its report is built (before its manifest)."""
    import yaml

    from headstats.config.protocol import Protocol, upgrade_resolved
    from headstats.study.run_folder import read_roles

    if not run.is_dir():
        raise HeadstatsError(f"run folder {str(run)!r} does not exist; give the folder a `headstats run` wrote")
    tests = run / "tests.parquet" if (run / "tests.parquet").is_file() else run / "tests.csv"
    missing = [p.name for p in (run / "roles.csv", tests, run / "protocol.resolved.yaml") if not p.is_file()]
    if missing:
        raise HeadstatsError(f"{str(run)!r} lacks {', '.join(missing)}: it is not a finished headstats run folder; "
                             "rerun `headstats run` to make one")
    try:
        protocol = Protocol.model_validate(upgrade_resolved(yaml.safe_load(
            (run / "protocol.resolved.yaml").read_text(encoding="utf-8"))))
        frame = pd.read_parquet(tests) if tests.suffix == ".parquet" else pd.read_csv(tests)
        claims = pd.read_csv(run / "claims.csv") if (run / "claims.csv").is_file() else None
        roles = read_roles(run / "roles.csv")
    except Exception as exc:  # noqa: BLE001 - any unreadable table means the same to the user
        raise HeadstatsError(f"{str(run)!r} cannot be read ({type(exc).__name__}: {' '.join(str(exc).split())[:160]}); "
                             "rerun `headstats run`") from None
    # a run of several attention measures: the viewer shows the primary one (the first), as the report's grids do
    from headstats.measures import attention_measures, on_measure

    primary = attention_measures(roles)[0]
    return protocol, on_measure(roles, primary), on_measure(frame, primary), claims


def _measure_filter(path: Path, run: Path | None = None) -> list:
    """The Parquet filter of ``scores.parquet`` rows of the run's primary attention measure (none for a run
    written before the ``measure`` column)."""
    import pyarrow.parquet as pq

    if "measure" not in pq.read_schema(path).names:
        return []
    from headstats.measures import attention_measures

    roles = (run or path.parent) / "roles.csv"
    measure = attention_measures(pd.read_csv(roles, usecols=lambda c: c == "measure"))[0] if roles.is_file() \
        else "weights"
    return [("measure", "==", measure)]


def run_stats(run_dir: str | Path, *, model: str | None = None, dataset: str | None = None) -> tuple[dict, object]:
    """The statistics of one (model, data set) of a finished run (module docstring), and the run's protocol.

    ``model`` and ``dataset`` default to the first of ``roles.csv``; a model or data set the run did not score is
    refused in one line (:class:`~headstats.errors.HeadstatsError`).
    """
    run = Path(run_dir)
    protocol, roles, tests, claims = _run_files(run)
    models = list(dict.fromkeys(roles["model"].astype(str)))
    if model is None or model not in models:
        if model is not None and len(models) > 1:
            raise HeadstatsError(f"the run {str(run)!r} scored {', '.join(models)}, not {model!r}; give --model as one "
                                 "of them")
        model = models[0]
    datasets = list(dict.fromkeys(roles.loc[roles["model"].astype(str) == model, "dataset"].astype(str)))
    if dataset is None:
        dataset = datasets[0]
    elif dataset not in datasets:
        raise HeadstatsError(f"the run {str(run)!r} has no data set {dataset!r} for {model}; choose one of "
                             f"{', '.join(datasets)}")
    mine = roles[(roles["model"].astype(str) == model) & (roles["dataset"].astype(str) == dataset)]
    held = {f"{int(r.layer)}-{int(r.head)}": [x for x in str(r.roles).split("+") if x] for r in mine.itertuples()}
    t = tests[(tests["model"].astype(str) == model) & (tests["dataset"].astype(str) == dataset)]
    tau = {str(role): float(v) for role, v in t.groupby("role", sort=False)["tau"].first().items() if np.isfinite(v)}
    out_claims = []
    if claims is not None and not claims.empty:
        c = claims[(claims["model"].astype(str) == model) & (claims["dataset"].astype(str) == dataset)]
        for r in c.itertuples():
            named = claim_roles(str(r.claim), str(r.sentence), list(tau))
            if named:
                out_claims.append({"claim": str(r.claim), "sentence": str(r.sentence), "verdict": str(r.verdict),
                                   "roles": named})
    rank = _ranking(run / "scores.parquet", model, dataset, _texts(protocol, dataset))
    return ({"where": f"{model} on {dataset}", "roles": held, "tau": tau, "claims": out_claims, "rank": rank,
             "short": {r: SHORT.get(r, r.split(":")[-1][:3]) for r in tau}}, protocol)


def _ranking(path: Path, model: str, dataset: str, texts: dict[str, str]) -> dict:
    """role -> head -> the :data:`TOP` inputs with the highest stored score (ties: input order)."""
    if not path.is_file():
        return {}
    import pyarrow.parquet as pq

    table = pq.read_table(path, columns=["model", "dataset", "sentence_id", "layer", "head", "role", "score"],
                          filters=[("model", "==", model), ("dataset", "==", dataset), *_measure_filter(path)])
    frame = table.to_pandas()
    frame = frame[np.isfinite(frame["score"].to_numpy(float))]
    frame = frame.astype({"sentence_id": str, "role": str})
    top = (frame.sort_values("score", ascending=False, kind="stable")
           .groupby(["role", "layer", "head"], sort=False).head(TOP))
    rank: dict[str, dict[str, list]] = {}
    for (role, layer, head), g in top.groupby(["role", "layer", "head"], sort=True):
        rank.setdefault(role, {})[f"{int(layer)}-{int(head)}"] = [
            [sid, round(float(s), 4), texts.get(sid, "")] for sid, s in zip(g["sentence_id"], g["score"])]
    return rank



def stored_scores(run_dir: str | Path, model: str, dataset: str, sentence_ids: list[str], n_layers: int,
                  n_heads: int) -> list[dict]:
    """Per input of ``sentence_ids``: role -> its stored per-input scores ``(n_layers, n_heads)`` from
    ``scores.parquet`` (NaN where it does not take part; empty when the run has no scores)."""
    path = Path(run_dir) / "scores.parquet"
    if not path.is_file() or not sentence_ids:
        return [{} for _ in sentence_ids]
    import pyarrow.parquet as pq

    frame = pq.read_table(path, columns=["sentence_id", "layer", "head", "role", "score"],
                          filters=[("model", "==", model), ("dataset", "==", dataset),
                                   ("sentence_id", "in", list(sentence_ids)), *_measure_filter(path)]).to_pandas()
    frame = frame.astype({"sentence_id": str, "role": str})
    out = []
    for sid in sentence_ids:
        mine = {}
        for role, g in frame[frame["sentence_id"] == sid].groupby("role", sort=False):
            grid = np.full((n_layers, n_heads), np.nan)
            grid[g["layer"].to_numpy(int), g["head"].to_numpy(int)] = g["score"].to_numpy(float)
            mine[role] = grid
        out.append(mine)
    return out
