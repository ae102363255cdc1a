"""The scoring pipeline: batch size does not change a score, table layout, applicable roles, counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from headstats.model.encoding import encode_record
from headstats.engine.forward import pad_batch
from headstats.inputs.records import Record
from headstats.measures import MeasureArray, measure_options
from headstats.study.scoring import SCORE_COLUMNS, long_frame, score_records
from headstats.analyses.roles import register_role, unregister_role

ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic", "syntactic:nsubj",
         "syntactic:dobj"]


from conftest import space_words as words  # noqa: E402


def single(sid, text, heads=None, rels=None):
    return Record(sid, text, words_a=words(text, heads, rels) if heads is not None else None)


def pair(sid, a, b, parse_a=None, parse_b=None):
    return Record(sid, a, b, words_a=words(a, *parse_a) if parse_a else None,
                  words_b=words(b, *parse_b) if parse_b else None)


LONG = " ".join(["the big dog"] * 10)  # 30 words: over max_length=24

RECORDS = [
    single("s0", "the cat sat", [1, 2, -1], ["det", "nsubj", "ROOT"]),
    single("s1", "a dog chased the small cat", [1, 2, -1, 5, 5, 2], ["det", "nsubj", "ROOT", "det", "amod", "dobj"]),
    single("s2", "it ran quickly", [1, -1, 1], ["nsubj", "ROOT", "advmod"]),
    pair("p0", "the cat sat", "a dog ran", ([1, 2, -1], ["det", "nsubj", "ROOT"]), ([1, 2, -1], ["det", "nsubj", "ROOT"])),
    single("s3", "the unhappy child read a new book yesterday", [2, 2, 3, -1, 6, 6, 3, 3],
           ["det", "amod", "nsubj", "ROOT", "det", "amod", "dobj", "npadvmod"]),
    pair("p1", "he likes the red car", "she gave it", ([1, -1, 4, 4, 1], ["nsubj", "ROOT", "det", "amod", "dobj"]),
         ([1, -1, 1], ["nsubj", "ROOT", "dobj"])),
    single("s4", "the tree", [1, -1], ["det", "ROOT"]),  # no arc of the protocol's relations
    single("s5", "", [], []),  # empty: skipped
    single("s6", "big old house", [2, 2, -1], ["amod", "amod", "ROOT"]),
    pair("p2", "the mouse", "the cat ate the mouse very slowly today",
         ([1, -1], ["det", "ROOT"]), ([1, 2, -1, 4, 2, 6, 2, 2], ["det", "nsubj", "ROOT", "det", "dobj", "advmod",
                                                                   "advmod", "npadvmod"])),
    single("s7", LONG, [-1] * 30, ["dep"] * 30),  # too long: skipped
    single("s8", "we saw it", [1, -1, 1], ["nsubj", "ROOT", "dobj"]),
    pair("p3", "the man", "the woman", ([1, -1], ["det", "ROOT"]), ([1, -1], ["det", "ROOT"])),
    single("s9", "you read", [1, -1], ["nsubj", "ROOT"]),
]


@pytest.fixture(scope="module")
def runs(tiny_model):
    return {bs: score_records(tiny_model, RECORDS, dataset="hand", roles=ROLES, max_length=24, batch_size=bs)
            for bs in (1, 7)}


def test_batched_equals_one_at_a_time(runs):
    one, seven = runs[1].scores, runs[7].scores
    pd.testing.assert_frame_equal(one.drop(columns="score"), seven.drop(columns="score"))
    a, b = one["score"].to_numpy(), seven["score"].to_numpy()
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    np.testing.assert_allclose(a, b, rtol=1e-5, equal_nan=True)


def test_scores_table_layout(runs, tiny_model):
    frame = runs[7].scores
    assert list(frame.columns) == SCORE_COLUMNS == ["model", "dataset", "measure", "sentence_id", "layer", "head", "role", "score"]
    kept = [r for r in RECORDS if r.sentence_id not in ("s5", "s7")]
    assert len(frame) == len(kept) * 2 * 2 * len(ROLES)
    # input order (not length order), then layer, head, role
    assert list(dict.fromkeys(frame["sentence_id"])) == [r.sentence_id for r in kept]
    first = frame.iloc[: 2 * 2 * len(ROLES)]
    assert (first["sentence_id"] == "s0").all()
    assert first[["layer", "head"]].drop_duplicates().values.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]
    assert first["role"].tolist()[: len(ROLES)] == ROLES
    assert set(frame["model"]) == {tiny_model.name} and set(frame["dataset"]) == {"hand"}


def test_counts(runs):
    counts = runs[7].counts
    assert counts["n_records"] == 14
    assert counts["n_scored"] == 12
    assert counts["skipped"] == {"empty": 1, "too_long": 1}
    assert counts["roles_not_applicable"] == {}
    assert counts["participation"] == {
        "local": 12, "delimiter": 12, "delimiter_cls": 12, "delimiter_sep": 12,
        "block": 4,                    # the pairs
        "syntactic": 10,               # all but s4 and p3 (no nsubj/dobj/amod/advmod arc)
        "syntactic:nsubj": 9,          # s0 s1 s2 p0 s3 p1 p2 s8 s9
        "syntactic:dobj": 5,           # s1 s3 p1 p2 s8
    }


def test_participation_matches_the_nans(runs):
    frame = runs[1].scores
    finite = frame[np.isfinite(frame["score"])]
    per_role = finite.groupby("role")["sentence_id"].nunique().to_dict()
    assert per_role == runs[1].counts["participation"]
    block_ids = set(finite[finite.role == "block"]["sentence_id"])
    assert block_ids == {"p0", "p1", "p2", "p3"}


def test_a_score_by_hand(tiny_model, runs):
    """delimiter_cls of s0 = mean over queries of A[i, 0] / (1/n), from the model's own attention."""
    record = RECORDS[0]
    enc = encode_record(record, tiny_model.tokenizer, index=0)
    batch = pad_batch([enc], tiny_model.tokenizer.pad_token_id)
    with torch.inference_mode():
        out = tiny_model.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                               token_type_ids=batch.token_type_ids, output_attentions=True)
    attn = torch.stack(out.attentions, dim=1)[0].double().numpy()  # (L, H, n, n)
    n = enc.length
    expected_cls = attn[:, :, :, 0].mean(-1) * n
    # nsubj arc cat -> sat: mean over dependent pieces of mean attention to head pieces, over mean of the row
    dep, head = list(enc.arcs[1].dependent), list(enc.arcs[1].head)
    assert enc.arcs[1].relation == "nsubj"
    rows = attn[:, :, dep, :]
    expected_nsubj = rows[..., head].mean(-1).mean(-1) / rows.mean(-1).mean(-1)
    frame = runs[7].scores
    s0 = frame[frame.sentence_id == "s0"]
    got_cls = s0[s0.role == "delimiter_cls"]["score"].to_numpy().reshape(2, 2)
    got_nsubj = s0[s0.role == "syntactic:nsubj"]["score"].to_numpy().reshape(2, 2)
    np.testing.assert_allclose(got_cls, expected_cls, rtol=1e-5)
    np.testing.assert_allclose(got_nsubj, expected_nsubj, rtol=1e-5)


def test_long_frame_order():
    values = np.arange(2 * 2 * 3 * 2, dtype=float).reshape(2, 2, 3, 2)
    frame = long_frame([MeasureArray("m", "d", np.array(["a", "b"]), ("local", "block"), values)])
    assert list(frame.columns) == SCORE_COLUMNS
    assert len(frame) == 24
    assert frame.iloc[0].tolist() == ["m", "d", "weights", "a", 0, 0, "local", 0.0]
    assert frame.iloc[1].tolist() == ["m", "d", "weights", "a", 0, 0, "block", 1.0]
    assert frame.iloc[2].tolist() == ["m", "d", "weights", "a", 0, 1, "local", 2.0]
    assert frame.iloc[6].tolist() == ["m", "d", "weights", "a", 1, 0, "local", 6.0]
    assert frame.iloc[12].tolist() == ["m", "d", "weights", "b", 0, 0, "local", 12.0]
    # every row holds values[s, l, h, r]
    idx = {"a": 0, "b": 1}
    roles = {"local": 0, "block": 1}
    for row in frame.itertuples():
        assert row.score == values[idx[row.sentence_id], row.layer, row.head, roles[row.role]]


def test_user_pair_role_dropped_for_singles(tiny_model):
    register_role("pairs_only_pipeline_test", lambda layout, options: np.ones((layout.length,) * 2, bool),
                  pairs_only=True)
    try:
        run = score_records(tiny_model, [Record("0", "the cat sat")], dataset="d",
                            roles=["local", "pairs_only_pipeline_test"])
        assert run.counts["roles_not_applicable"] == {"pairs_only_pipeline_test": "the data set has no sentence pairs"}
        assert set(run.scores["role"]) == {"local"}
    finally:
        unregister_role("pairs_only_pipeline_test")


def test_score_run_holds_an_array(runs, tiny_model):
    array = runs[7].array
    assert array.values.shape == (12, 2, 2, len(ROLES)) and array.values.dtype == np.float32
    assert array.measures == tuple(ROLES) and array.model == tiny_model.name and array.dataset == "hand"
    np.testing.assert_array_equal(runs[7].scores["score"].to_numpy(), array.values.reshape(-1).astype(float))


def test_write_scores_streams_the_long_table(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from headstats.measures import MeasureArray
    from headstats.study.scoring import write_scores

    rng = np.random.default_rng(0)
    a = MeasureArray("m", "d1", ["x", "y", "z"], ("local", "block"), rng.random((3, 2, 2, 2)))
    a.values[1, :, :, 1] = np.nan
    b = MeasureArray("m", "d2", ["10", "2"], ("local",), rng.random((2, 2, 2, 1)))
    empty = MeasureArray("n", "d1", [], ("local",), np.zeros((0, 2, 2, 1)))
    path = tmp_path / "scores.parquet"
    assert write_scores([a, empty, b], path, inputs_per_group=2) == 24 + 8
    schema = pq.read_schema(path)
    assert schema.names == SCORE_COLUMNS
    for key in ("model", "dataset", "sentence_id", "role"):
        assert pa.types.is_dictionary(schema.field(key).type)
    assert schema.field("layer").type == pa.int16() and schema.field("score").type == pa.float64()
    back = pd.read_parquet(path)
    expected = pd.concat([a.to_frame(), b.to_frame()], ignore_index=True)
    for column in SCORE_COLUMNS[:-1]:
        assert back[column].astype(str).tolist() == expected[column].astype(str).tolist(), column
    np.testing.assert_array_equal(back["score"].to_numpy(), expected["score"].to_numpy(float))
    assert pq.ParquetFile(path).num_row_groups == 3  # d1 in groups of 2 inputs, then d2


def test_long_frame_has_keys_sorted_as_text():
    from headstats.measures import MeasureArray
    from headstats.study.scoring import long_frame

    a = MeasureArray("m", "d2", ["b", "10", "2"], ("x", "block"), np.arange(6, dtype=float).reshape(3, 1, 1, 2))
    b = MeasureArray("m", "d1", ["a"], ("x",), np.full((1, 1, 1, 1), 7.0))
    frame = long_frame([a, b])
    assert list(frame.columns) == SCORE_COLUMNS
    assert frame["sentence_id"].tolist() == ["b", "b", "10", "10", "2", "2", "a"]
    assert frame["role"].tolist() == ["x", "block"] * 3 + ["x"] and frame["score"].tolist() == [0, 1, 2, 3, 4, 5, 7]
    assert list(frame["sentence_id"].cat.categories) == ["10", "2", "a", "b"]
    assert list(frame["role"].cat.categories) == ["block", "x"]
    assert list(frame["dataset"].cat.categories) == ["d1", "d2"]
    assert frame["layer"].dtype == np.int16 and long_frame([]).columns.tolist() == SCORE_COLUMNS


def test_the_norm_measure_scores_norm_weighted_maps_and_keeps_weights_keys(tmp_path, tiny_model_dir):
    """``scoring: {measure: norm}``: every score is the sieve bias of ``A_norm`` (METHODS 6.1), computed in the
    same pass; a weights run's jobs carry no ``measure`` option, so their cache keys are the ones they had."""
    import torch
    import yaml
    from tiny_study import tiny_protocol

    from headstats.analyses.pande_roles.collect import RoleScores
    from headstats.config.protocol import load_protocol
    from headstats.engine.batch import forward_views, view_of
    from headstats.engine.runner import Job, build_collector
    from headstats.model.encoding import encode_records
    from headstats.model.loading import load_model
    from headstats.study.run import run_study

    path = tiny_protocol(tmp_path, tiny_model_dir, ["local", "delimiter_cls"])
    weights = load_protocol(path)
    assert measure_options(weights.scoring) == {}
    raw = yaml.safe_load(path.read_text())
    raw["scoring"]["measure"] = "norm"
    path.write_text(yaml.safe_dump(raw))
    norm = load_protocol(path)
    assert measure_options(norm.scoring) == {"measure": "norm"}
    study = run_study(norm, tmp_path / "run")
    got = study.scores[0].values
    loaded = load_model(str(tiny_model_dir))
    from tiny_study import DEMO
    from headstats.inputs.readers import read_records

    records = read_records(DEMO / "sentences.txt", limit=12)
    inputs = encode_records(records, loaded.tokenizer).inputs
    collector = build_collector(Job(RoleScores, (loaded.name,), "single", {"roles": ["local", "delimiter_cls"]}),
                                {loaded.name: loaded})
    with torch.inference_mode():
        view = forward_views(loaded, inputs, dataset="single", measures=("norm",))["norm"]
    collector.update(view_of(view.attention, view.inputs, dataset="single"))
    np.testing.assert_allclose(got, collector.state().values, rtol=1e-5)
    with torch.inference_mode():
        plain = forward_views(loaded, inputs, dataset="single")["weights"]
    assert not torch.allclose(plain.attention, view.attention)


def test_an_unknown_measure_is_refused_with_the_measures():
    from headstats.analyses.sieves import ScoreSettings

    with pytest.raises(ValueError, match="the measures are weights, norm"):
        ScoreSettings(measure="values")


def test_both_measures_in_one_run_one_forward_pass_each_as_its_own_run(tmp_path, tiny_model_dir):
    """``scoring: {measures: [weights, norm]}``: the role scores run once per measure over the same forward passes
    as a run of one measure; each measure's scores and tests are those of a run of that measure alone, with a
    ``measure`` column (the primary first); roles.csv gains robust_across_measures, the run measure_agreement.csv."""
    import yaml
    from tiny_study import tiny_protocol

    from headstats.config.protocol import load_protocol
    from headstats.study.run import run_study

    path = tiny_protocol(tmp_path, tiny_model_dir, ["local", "delimiter_cls"])
    raw = yaml.safe_load(path.read_text())
    runs = {}
    for label, scoring in (("both", {"measures": ["weights", "norm"]}), ("weights", {}), ("norm", {"measure": "norm"})):
        raw["scoring"] = {"roles": ["local", "delimiter_cls"], **scoring}
        path.write_text(yaml.safe_dump(raw))
        runs[label] = run_study(load_protocol(path), tmp_path / label)
    both = runs["both"]
    # 12 inputs, one batch: one forward pass for both measures; each measure's states are those a run of that
    # measure alone keys, so the runs of one measure after it find them in the cache
    assert both.manifest["execution"]["forward_passes"] == 1
    assert [runs[m].manifest["execution"]["forward_passes"] for m in ("weights", "norm")] == [0, 0]
    assert [a.attention_measure for a in both.scores] == ["weights", "norm"]
    for i, label in enumerate(("weights", "norm")):
        np.testing.assert_array_equal(both.scores[i].values, runs[label].scores[0].values)
    scores = pd.read_parquet(both.out / "scores.parquet")
    assert list(scores.columns) == SCORE_COLUMNS and scores["measure"].astype(str).unique().tolist() == ["weights", "norm"]
    tests = pd.read_csv(both.out / "tests.csv")
    assert list(tests.columns[:3]) == ["model", "dataset", "measure"]
    for label in ("weights", "norm"):
        alone = pd.read_csv(runs[label].out / "tests.csv")
        assert alone["measure"].unique().tolist() == [label]
        pd.testing.assert_frame_equal(tests[tests["measure"] == label].reset_index(drop=True), alone,
                                      check_dtype=False)  # a text column empty under one measure reads as float
    roles = pd.read_csv(both.out / "roles.csv")
    assert roles["measure"].unique().tolist() == ["weights", "norm"] and "robust_across_measures" in roles
    assert pd.read_csv(runs["weights"].out / "roles.csv")["robust_across_measures"].isna().all()
    agreement = pd.read_csv(both.out / "measure_agreement.csv")
    assert list(agreement.columns[-3:]) == ["weights", "norm", "robust_across_measures"]
    claims = pd.read_csv(both.out / "claims.csv")
    assert {"survives_norm:local", "survives_norm:delimiter_cls"} <= set(claims["claim"])
    assert not ({"survives_norm:local"} & set(pd.read_csv(runs["weights"].out / "claims.csv")["claim"]))
    # Pande et al.'s claims read the primary measure: the same verdicts as the weights run
    paper = ["delimiter_largest", "cls_early"]
    pick = lambda c: c[c["claim"].isin(paper)][["claim", "verdict"]].reset_index(drop=True)  # noqa: E731
    pd.testing.assert_frame_equal(pick(claims), pick(pd.read_csv(runs["weights"].out / "claims.csv")))
    from headstats.analyses.sieves import ScoreSettings
    from headstats.report.methods import _measure_text

    text = _measure_text(ScoreSettings(measures=["weights", "norm"]))  # the Methods paragraph names each measure
    assert "(`measures: [weights, norm]`)" in text and "norm-weighted attention (`norm`" in text


def test_measure_is_the_one_element_measures_and_both_are_refused():
    from headstats.analyses.sieves import ScoreSettings

    assert ScoreSettings(measure="norm").measures == ["norm"] and ScoreSettings().measures == ["weights"]
    both = ScoreSettings(measures=["norm", "weights"])
    assert both.measure == "norm" and measure_options(both) == {"measure": "norm"}
    assert measure_options(both, "weights") == {}
    with pytest.raises(ValueError, match="given as measure or as measures, not both"):
        ScoreSettings(measure="norm", measures=["norm"])
    with pytest.raises(ValueError, match="names each measure once"):
        ScoreSettings(measures=["norm", "norm"])
