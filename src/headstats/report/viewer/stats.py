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


def run_stats(run_dir: str | Path, *, model: str | None = None, dataset: str | None = None) -> tuple[dict, object]:
    """The statistics of one (model, data set) of a finished run (module docstring), and the run's protocol.

    ``model`` and ``dataset`` default to the first of ``roles.csv``; a model the run did not score is refused
    in one line (:class:`~headstats.errors.HeadstatsError`).
    """
    from headstats.study.run_folder import load_run_tables

    run = Path(run_dir)
    protocol, analysis, _manifest, _ = load_run_tables(run)
    roles, tests = analysis.roles, analysis.tests
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
    claims = analysis.tables.get("claims")
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
                          filters=[("model", "==", model), ("dataset", "==", dataset)])
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

