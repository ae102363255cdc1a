"""The public API: ``import headstats as hs`` is cheap, and its functions give the layers' own numbers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import headstats as hs

DEMO = Path(__file__).resolve().parents[1] / "data" / "demo"


def test_import_is_lazy_and_imports_no_torch():
    code = "import sys, headstats as hs; print('torch' in sys.modules, 'transformers' in sys.modules, hs.__version__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False", hs.__version__]


def test_every_public_name_resolves():
    for name in hs.__all__:
        assert getattr(hs, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        hs.nope
    assert "local" in hs.list_roles() and "holm" in hs.list_corrections() and "t" in hs.list_tests()
    assert issubclass(hs.DataError, hs.HeadstatsError)


def test_score_test_and_roles_equal_the_layers_below(tiny_model):
    from headstats.study.scoring import score_records
    from headstats.analyses.sieves import ScoreSettings
    from headstats.stats.onesample import test_roles

    records = hs.read_records(DEMO / "sentences.txt", limit=10)
    array = hs.score(tiny_model, records, dataset="demo", roles=["local", "delimiter_cls"], batch_size=32)
    direct = score_records(tiny_model, records, dataset="demo", roles=["local", "delimiter_cls"],
                           settings=ScoreSettings())
    np.testing.assert_allclose(array.values, direct.array.values, rtol=1e-5)
    assert array.values.shape == (10, 2, 2, 2) and array.provenance["counts"]["n_scored"] == 10
    tests = hs.test_roles(array, tau=1.0)
    expected = test_roles(direct.scores, tau=1.0)
    columns = list(expected.columns)
    assert list(tests.columns) == [*columns[:2], "measure", *columns[2:]] and set(tests["measure"]) == {"weights"}
    for column in ["n", "mean", "statistic", "p_unc", "p_corr", "reject"]:
        np.testing.assert_array_equal(tests[column].to_numpy(), expected[column].to_numpy(), err_msg=column)
    assert hs.role_table(tests).shape[0] == 4  # 2 layers x 2 heads


def test_score_and_test_several_measures_at_once(tiny_model):
    """``hs.score(..., measures=[weights, norm])``: one array per measure from one pass, each the same bytes as a
    score of that measure alone (the weights' scores run map-free alone and beside the norm's maps: one path, the
    job's own); ``hs.test_roles`` tests each as its own run, a ``measure`` column telling them apart."""
    records = hs.read_records(DEMO / "sentences.txt", limit=10)
    roles = ["local", "delimiter_cls"]
    both = hs.score(tiny_model, records, roles=roles, measures=["weights", "norm"], progress=False)
    assert [a.attention_measure for a in both] == ["weights", "norm"]
    for array in both:
        alone = hs.score(tiny_model, records, roles=roles, measure=array.attention_measure, progress=False)
        np.testing.assert_array_equal(array.values, alone.values)
        one = hs.test_roles(alone, tau=1.0)
        part = hs.test_roles(both, tau=1.0)
        part = part[part["measure"] == array.attention_measure].reset_index(drop=True)
        pd.testing.assert_frame_equal(part, one)
    roles_table = hs.role_table(hs.test_roles(both, tau=1.0))
    assert roles_table.shape[0] == 8 and roles_table["measure"].tolist() == ["weights"] * 4 + ["norm"] * 4


def test_compare_pairs_by_input_and_refuses_other_inputs(tiny_model):
    records = hs.read_records(DEMO / "sentences.txt", limit=8)
    a = hs.score(tiny_model, records, roles=["local"])
    b = hs.MeasureArray("after", a.dataset, a.sentence_ids, a.measures, a.values * 2, a.provenance)
    table = hs.compare(a, b, test="t")
    row = table[(table.layer == 0) & (table["head"] == 1)].iloc[0]
    diff = a.values[:, 0, 1, 0].astype(float)  # after - before = 2x - x
    from scipy import stats

    assert row["p_unc"] == pytest.approx(stats.ttest_1samp(diff, 0.0).pvalue)
    shorter = hs.score(tiny_model, records[:5], roles=["local"])
    with pytest.raises(hs.IncompatibleResultsError):
        hs.compare(a, shorter)


def test_no_submodule_shadows_a_public_name():
    import importlib
    import pkgutil

    for module in pkgutil.walk_packages(hs.__path__, "headstats."):
        if module.name != "headstats.cli.main":
            importlib.import_module(module.name)
    for name in ("load_model", "read_records", "score", "test_roles", "role_table", "compare", "run"):
        assert callable(getattr(hs, name)) and not isinstance(getattr(hs, name), type(hs)), name


def _assert_short(obj, *needles: str) -> str:
    text = repr(obj)
    assert len(text.splitlines()) <= 15, text
    assert max(len(line) for line in text.splitlines()) <= 200, text
    for needle in needles:
        assert needle in text, (needle, text)
    return text


def test_every_public_result_prints_in_at_most_15_lines(tiny_model, tiny_model_dir, tmp_path):
    """repr() of a loaded model, scores, a score run and a whole study: a few lines, never a dump."""
    import yaml

    from headstats.study.scoring import score_records
    from headstats.analyses.sieves import ScoreSettings

    text = _assert_short(tiny_model, "LoadedModel", "2 layers x 2 heads", "model.safetensors")
    assert "BertSelfAttention" not in text and "Linear(" not in text  # not the module tree
    records = hs.read_records(DEMO / "sentences.txt", limit=40)
    assert isinstance(records, list) and len(records) == 40
    first = records[0].text_a
    assert repr(records) == f"RecordList(40 inputs; first {records[0].sentence_id!r}: " + (
        f"{first!r})" if len(first) <= 40 else f"{first[:39] + '…'!r})")
    array = hs.score(tiny_model, records, dataset="demo")  # nine roles (no block on single sentences)
    _assert_short(array, "MeasureArray", "40 inputs x 2 layers x 2 heads x 9 measures", "syntactic")
    run = score_records(tiny_model, records, dataset="demo", roles=["local"], settings=ScoreSettings())
    _assert_short(run, "ScoreRun: 40 of 40 inputs scored")
    protocol = tmp_path / "p.yaml"
    protocol.write_text(yaml.safe_dump({
        "name": "p", "models": [str(tiny_model_dir)], "scoring": {"roles": ["local", "delimiter_cls"]},
        "datasets": [{"name": f"d{i}", "path": str(DEMO / "sentences.txt"), "limit": 8} for i in range(12)],
        "statistics": {"tau": 1.0, "sensitivity": False},
        "report": {"html": False, "figures": {"formats": ["png"], "dpi": 72}}}))
    result = hs.run(protocol, tmp_path / "out")
    _assert_short(result, "StudyResult in", "d0", "more (model, data set) rows", "report.md")


def test_loading_a_model_prints_nothing(tiny_model_dir, capfd):
    """transformers' own bars, logs and warnings stay silent while headstats loads a model."""
    capfd.readouterr()
    hs.load_model(str(tiny_model_dir))
    hs.load_model("default")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")


def test_score_prepares_records_as_headstats_score_does(tmp_path, tiny_model, tiny_model_dir):
    """hs.score leaves out what ``headstats score`` leaves out (a record longer than max_length can hold),
    counts it the same way, and scores the rest to the same numbers; an empty record (which no reader makes,
    but a caller can) is left out and counted too."""
    import json

    import pandas as pd
    import yaml

    from headstats.config.protocol import load_protocol
    from headstats.study.run import run_scores

    lines = (DEMO / "sentences.txt").read_text().splitlines()[:6]
    rows = [{"id": f"s{i}", "text_a": t} for i, t in enumerate(lines)]
    rows.insert(4, {"id": "long", "text_a": " ".join(["word"] * 80)})
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    protocol = {"name": "p", "models": [{"name": "tiny", "path": str(tiny_model_dir)}],
                "datasets": [{"name": "d", "path": str(data)}],
                "scoring": {"roles": ["local", "delimiter_cls"], "max_length": 64, "too_long": "skip"}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(protocol))
    scored = run_scores(load_protocol(tmp_path / "p.yaml"), tmp_path / "out", model="tiny")
    counts = json.loads((scored.out / "manifest.json").read_text())["inputs"]["tiny/d"]

    array = hs.score(tiny_model, data, dataset="d", roles=["local", "delimiter_cls"], max_length=64)
    assert array.provenance["counts"]["skipped"] == counts["skipped"] == {"too_long": 1}
    assert array.provenance["counts"]["n_records"] == counts["n_records"] == 7
    assert list(array.sentence_ids) == list(scored.scores[0].sentence_ids) == [f"s{i}" for i in range(6)]
    np.testing.assert_array_equal(array.values, scored.scores[0].values)
    from headstats.inputs.records import Record

    records = hs.read_records(data) + [Record("blank", " \u200b ")]
    array = hs.score(tiny_model, records, dataset="d", roles=["local", "delimiter_cls"], max_length=64)
    assert array.provenance["counts"]["skipped"] == {"too_long": 1, "empty": 1}
    np.testing.assert_array_equal(array.values, scored.scores[0].values)
    with pytest.raises(hs.DataError, match="no input of data set 'd' could be scored"):
        hs.score(tiny_model, records[4:5] + records[-1:], dataset="d", roles=["local"], max_length=64)


def test_score_shows_progress_by_default_and_none_with_progress_false(tiny_model, capsys):
    records = hs.read_records(DEMO / "sentences.txt", limit=6)
    hs.score(tiny_model, records, dataset="demo", roles=["local"])
    shown = capsys.readouterr().err
    assert f"scoring {tiny_model.name} on demo" in shown and "6/6" in shown  # the bar, done
    hs.score(tiny_model, records, dataset="demo", roles=["local"], progress=False)
    assert capsys.readouterr().err == ""


def test_test_roles_marks_unreachable_roles_and_says_when_it_cannot_know():
    # issue 32 item 10: a role whose mean ceiling (2.5) is at or below tau (3) has no design power (NaN, with
    # the note); a long table without ceilings says that its power assumes tau reachable
    import numpy as np

    import headstats as hs
    from headstats.api import NO_CEILING_NOTE
    from headstats.measures import MeasureArray
    from simulations.planted import planted_scores

    rng = np.random.default_rng(0)
    values = rng.uniform(0, 2.5, size=(30, 2, 2, 2)).astype(np.float32)
    ceilings = np.column_stack([np.full(30, 2.5), np.full(30, 10.0)]).astype(np.float32)
    array = MeasureArray("m", "d", np.array([f"s{i}" for i in range(30)]), ("local", "block"), values,
                         ceilings=ceilings)
    tests = hs.test_roles(array, tau=3.0)
    local, block = tests[tests["role"] == "local"], tests[tests["role"] == "block"]
    assert local["power"].isna().all() and local["power_note"].str.startswith("no power: tau 3 is at or above").all()
    assert block["power"].notna().all()
    table = hs.test_roles(planted_scores(seed=1), tau=3.0)
    assert table["power_note"].str.contains(NO_CEILING_NOTE, regex=False).all()


def test_run_takes_limit_and_overrides_as_the_cli_does(monkeypatch):
    import headstats.study.run
    from headstats.config.protocol import load_protocol

    seen = []
    monkeypatch.setattr(headstats.study.run, "run_study", lambda protocol, out, **kwargs: seen.append(protocol))
    quickstart = DEMO.parents[1] / "protocols" / "quickstart.yaml"
    hs.run(quickstart, limit=7, overrides={"statistics.tau": 1.5}, progress=False)
    hs.run(load_protocol(quickstart), limit=7, overrides={"statistics.correction": "fdr_bh"}, progress=False)
    assert [[d.limit for d in p.datasets] for p in seen] == [[7, 7], [7, 7]]
    assert (seen[0].statistics.tau, seen[1].statistics.correction) == (1.5, "fdr_bh")
    with pytest.raises(hs.HeadstatsError, match="did you mean 'statistics.tau'"):
        hs.run(quickstart, overrides={"statistics.tua": 1.5}, progress=False)


def test_test_roles_names_every_option_of_the_statistics_it_runs():
    """hs.test_roles shows its parameters (it took **options): the same keywords, defaults included, as
    headstats.stats.onesample.test_roles, which it calls measure by measure."""
    import inspect

    from headstats.stats.onesample import test_roles

    mine, theirs = inspect.signature(hs.test_roles).parameters, inspect.signature(test_roles).parameters
    assert list(mine) == list(theirs)
    assert {k: p.default for k, p in mine.items()} == {k: p.default for k, p in theirs.items()}


def test_score_takes_sentences_and_pairs_as_text(tiny_model):
    """A notebook's first call, ``hs.score(model, ["a sentence", ...])``: the same scores as the same Records."""
    texts = ["The cat sat on the mat.", ("The dog barked.", "It was loud.")]
    from headstats.inputs.records import Record

    array = hs.score(tiny_model, texts, roles=["local", "block"], progress=False)
    same = hs.score(tiny_model, [Record("0", texts[0]), Record("1", *texts[1])], roles=["local", "block"],
                    progress=False)
    assert list(array.sentence_ids) == ["0", "1"]
    np.testing.assert_array_equal(array.values, same.values)
    with pytest.raises(hs.DataError, match="input 0 is a int"):
        hs.score(tiny_model, [7], progress=False)
    with pytest.raises(hs.DataError, match="data set 'data' has no input; give at least one sentence or pair"):
        hs.score(tiny_model, [], progress=False)
    with pytest.raises(hs.DataError, match=r"could be scored \({'empty': 1}\); give inputs with visible text"):
        hs.score(tiny_model, ["  "], progress=False)


def test_score_given_a_sentence_instead_of_a_list_says_how_in_one_line(tiny_model, tmp_path):
    with pytest.raises(hs.DataError, match=r"there is no data file 'The cat sat\.': give a data file's path, or "
                                           r"the sentences as a list") as caught:
        hs.score(tiny_model, "The cat sat.", progress=False)
    assert "\n" not in str(caught.value)
    with pytest.raises(hs.DataError, match="there is no data file"):
        hs.score(tiny_model, str(tmp_path / "missing.txt"), progress=False)


@pytest.mark.parametrize("options, message", [
    ({"window": -1}, "invalid score options at 'window': -1 is not allowed; it must be a number >= 0"),
    ({"windw": 2}, "unknown score option 'windw'; did you mean 'window'?"),
    ({"bogus": 1}, "unknown score option 'bogus'; the options are roles, relations, window"),
])
def test_a_bad_score_option_is_one_line_naming_it(tiny_model, options, message):
    with pytest.raises(hs.ProtocolError) as caught:
        hs.score(tiny_model, ["The cat sat."], progress=False, **options)
    assert message in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.parametrize("call, message", [
    (lambda s: hs.compare("a", s), "before is a str; give scores from hs.score (a MeasureArray) or a scores table"),
    (lambda s: hs.compare(s, [1]), "after is a list; give scores from hs.score"),
    (lambda s: hs.test_roles([1, 2, 3]), "scores is a list; give scores from hs.score"),
    (lambda s: hs.role_table(s), "tests is a MeasureArray; give the table of hs.test_roles (a DataFrame)"),
])
def test_the_wrong_kind_of_object_is_one_line_naming_what_to_give(tiny_model, call, message):
    scores = hs.score(tiny_model, ["The cat sat."], roles=["local"], progress=False)
    with pytest.raises(hs.DataError) as caught:
        call(scores)
    assert message in str(caught.value) and "\n" not in str(caught.value)
