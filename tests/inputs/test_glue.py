"""GLUE reading: the task table, headers, ids, sampling, malformed rows, and the ``datasets`` path."""

from __future__ import annotations

from pathlib import Path

import pytest

from headstats.errors import DataError, HeadstatsError
from headstats.inputs.glue import (
    GLUE_ROOT_ENV,
    available_splits,
    get_task,
    load_glue,
    read_glue_tsv,
    records_from_dataset,
)

BOM = "\ufeff"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def glue_root(tmp_path) -> Path:
    """A tiny GLUE folder with the real files' quirks (BOM, quotes, no CoLA header, test without labels)."""
    root = tmp_path / "glue"
    write(root / "SST-2" / "train.tsv", "sentence\tlabel\n" + "".join(
        f"a {'good' if i % 2 else 'bad'} film number {i} \t{i % 2}\n" for i in range(20)))
    write(root / "SST-2" / "dev.tsv", "sentence\tlabel\nit 's a charming journey . \t1\nbleak and dull \t0\n")
    write(root / "SST-2" / "test.tsv", "index\tsentence\n0\tuneasy mishmash .\n1\ta poor imitation .\n")
    write(root / "MRPC" / "dev.tsv",
          BOM + "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
          '1\t1355540\t1355592\tHe said the pie "business" fits.\t"The pie business fits.\n'
          "0\t2029631\t2029565\tMagnarelli said so.\tHis wife said no.\n")
    write(root / "QNLI" / "dev.tsv", "index\tquestion\tsentence\tlabel\n" + "".join(
        f"{10 + i}\tWhat is {i}?\tIt is {i}.\t{'entailment' if i % 2 else 'not_entailment'}\n" for i in range(10)))
    write(root / "CoLA" / "dev.tsv", "gj04\t1\t\tThe sailors rode the breeze.\ngj04\t0\t*\tThe rope stretch over.\n")
    write(root / "RTE" / "test.tsv", "index\tsentence1\tsentence2\n0\tA man sat.\tSomeone sat.\n")
    return root


def test_task_table_names_and_aliases():
    assert get_task("SST-2").name == "sst2"
    assert get_task("sst2").folder == "SST-2"
    assert get_task("CoLA").name == "cola"
    assert get_task("sts-b").name == "stsb"
    assert get_task("qnli").labels == ("entailment", "not_entailment")
    with pytest.raises(HeadstatsError, match="unknown GLUE task 'nope'.*sst2"):
        get_task("nope")


def test_sst2_single_sentences_with_row_index_ids(glue_root):
    recs = read_glue_tsv(glue_root / "SST-2" / "dev.tsv")
    assert [r.sentence_id for r in recs] == ["0", "1"]
    assert recs[0].text_a == "it 's a charming journey . " and recs[0].text_b is None
    assert recs[0].label == "1" and recs[1].label == "0"
    assert recs[0].meta["task"] == "sst2" and recs[0].meta["split"] == "dev" and recs[0].meta["line"] == 2


def test_test_file_uses_index_column_and_has_no_labels(glue_root):
    recs = read_glue_tsv(glue_root / "SST-2" / "test.tsv")
    assert [r.sentence_id for r in recs] == ["0", "1"]
    assert all(r.label is None for r in recs)
    rte = read_glue_tsv(glue_root / "RTE" / "test.tsv")
    assert rte[0].is_pair and rte[0].text_b == "Someone sat." and rte[0].label is None


def test_mrpc_bom_header_and_unquoted_quotes(glue_root):
    recs = read_glue_tsv(glue_root / "MRPC" / "dev.tsv")
    assert len(recs) == 2
    assert recs[0].text_a == 'He said the pie "business" fits.'
    assert recs[0].text_b == '"The pie business fits.'  # a leading quote is text, not CSV quoting
    assert recs[0].label == "1" and recs[0].sentence_id == "0"


def test_header_inference_without_folder(glue_root, tmp_path):
    loose = write(tmp_path / "loose" / "x.tsv", (glue_root / "QNLI" / "dev.tsv").read_text())
    recs = read_glue_tsv(loose)
    assert recs[0].meta["task"] == "qnli" and recs[0].sentence_id == "10" and recs[0].text_b == "It is 0."


def test_cola_without_header(glue_root):
    recs = read_glue_tsv(glue_root / "CoLA" / "dev.tsv")
    assert [r.text_a for r in recs] == ["The sailors rode the breeze.", "The rope stretch over."]
    assert [r.label for r in recs] == ["1", "0"]
    assert [r.sentence_id for r in recs] == ["0", "1"]
    assert recs[0].meta["line"] == 1


def test_malformed_rows_are_counted_with_line_numbers(tmp_path):
    bad = write(tmp_path / "SST-2" / "dev.tsv", "sentence\tlabel\ngood one\t1\nno label here\nto\tmany\tfields\n")
    with pytest.raises(HeadstatsError, match=r"2 malformed row\(s\).*line\(s\) 3, 4"):
        read_glue_tsv(bad)


def test_missing_columns_and_files(tmp_path, glue_root):
    with pytest.raises(HeadstatsError, match="does not exist"):
        read_glue_tsv(tmp_path / "nope.tsv")
    with pytest.raises(HeadstatsError, match="no column '#1 String'"):
        read_glue_tsv(glue_root / "SST-2" / "dev.tsv", task="mrpc")
    with pytest.raises(HeadstatsError, match="QNLI has: dev"):
        load_glue("qnli", split="train", root=glue_root)
    with pytest.raises(HeadstatsError, match="no split 'bogus'"):
        load_glue("sst2", split="bogus", root=glue_root)


def test_load_glue_first_random_and_exclusions(glue_root):
    assert [r.sentence_id for r in load_glue("qnli", root=glue_root, n=3)] == ["10", "11", "12"]
    a = load_glue("qnli", root=glue_root, n=4, sample="random", seed=1)
    b = load_glue("qnli", root=glue_root, n=4, sample="random", seed=1)
    c = load_glue("qnli", root=glue_root, n=4, sample="random", seed=2)
    assert [r.sentence_id for r in a] == [r.sentence_id for r in b] != [r.sentence_id for r in c]
    assert [int(r.sentence_id) for r in a] == sorted(int(r.sentence_id) for r in a)  # file order kept
    kept = load_glue("qnli", root=glue_root, n=3, exclude_ids=["10", "12"])
    assert [r.sentence_id for r in kept] == ["11", "13", "14"]
    with pytest.warns(UserWarning, match="only 10 are available"):
        assert len(load_glue("qnli", root=glue_root, n=50)) == 10
    assert load_glue("sst2", split="validation", root=glue_root)[0].label == "1"
    assert available_splits("qnli", glue_root) == ["dev"]


def test_root_from_environment(glue_root, monkeypatch):
    monkeypatch.setenv(GLUE_ROOT_ENV, str(glue_root))
    assert len(load_glue("mrpc")) == 2


def test_datasets_path_on_local_files(tmp_path, monkeypatch):
    """The ``datasets`` branch, fed from a local parquet folder (the hub is unreachable here)."""
    datasets = pytest.importorskip("datasets")
    monkeypatch.delenv(GLUE_ROOT_ENV, raising=False)
    folder = tmp_path / "hf_glue" / "qnli"
    folder.mkdir(parents=True)
    features = datasets.Features({
        "question": datasets.Value("string"), "sentence": datasets.Value("string"),
        "label": datasets.ClassLabel(names=["entailment", "not_entailment"]), "idx": datasets.Value("int32"),
    })
    ds = datasets.Dataset.from_dict(
        {"question": ["Q0?", "Q1?", "Q2?"], "sentence": ["S0.", "S1.", "S2."], "label": [0, 1, 1], "idx": [0, 1, 2]},
        features=features,
    )
    ds.to_parquet(str(folder / "validation.parquet"))
    recs = load_glue("qnli", split="dev", source=tmp_path / "hf_glue", n=2)
    assert [(r.sentence_id, r.text_a, r.text_b, r.label) for r in recs] == [
        ("0", "Q0?", "S0.", "entailment"), ("1", "Q1?", "S1.", "not_entailment")]
    # a callable source, and test labels of -1 become None
    test_ds = datasets.Dataset.from_dict({"sentence": ["x ."], "label": [-1], "idx": [7]})
    recs = load_glue("sst2", split="test", source=lambda task, split: test_ds)
    assert recs[0].sentence_id == "7" and recs[0].label is None and recs[0].text_b is None


def test_datasets_failure_is_one_line_error(tmp_path, monkeypatch):
    monkeypatch.delenv(GLUE_ROOT_ENV, raising=False)

    def offline(task, split):
        raise ConnectionError("no network")

    with pytest.raises(HeadstatsError, match="--data-root") as info:
        load_glue("sst2", source=offline)
    assert "\n" not in str(info.value)


def test_records_from_dataset_checks_columns():
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["a"], "label": [0]})
    with pytest.raises(HeadstatsError, match="no column 'sentence'"):
        records_from_dataset(ds, "sst2", split="dev")


@pytest.mark.shared_data
def test_real_glue_files(shared_data):
    root = shared_data / "glue"
    sizes = {("sst2", "dev"): 872, ("mrpc", "dev"): 408, ("qnli", "dev"): 5463, ("cola", "dev"): 1043,
             ("rte", "dev"): 277, ("sst2", "test"): 1821}
    for (task, split), n in sizes.items():
        recs = load_glue(task, split=split, root=root)
        assert len(recs) == n, (task, split)
    mrpc = load_glue("mrpc", root=root, n=1)[0]
    assert mrpc.is_pair and mrpc.label == "1"
    assert available_splits("qnli", root) == ["dev", "test"]


def test_non_utf8_file_is_a_one_line_error(tmp_path):
    bad = tmp_path / "SST-2" / "dev.tsv"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"sentence\tlabel\ncaf\xe9 au lait\t1\n")
    with pytest.raises(DataError, match=r"dev\.tsv, line 2: not UTF-8 text \(byte 4 of the line, 0xe9"):
        read_glue_tsv(bad)


def test_bad_glue_files_are_data_errors(tmp_path, glue_root):
    with pytest.raises(DataError, match=r"GLUE file '.*SST-2' is a folder, not a file"):
        read_glue_tsv(glue_root / "SST-2")
    binary = write(tmp_path / "SST-2" / "dev.tsv", "sentence\tlabel\ngood\t1\nbad\x00\x00\t0\n")
    with pytest.raises(DataError, match=r"dev\.tsv, line 3: a NUL byte; this is a binary file"):
        read_glue_tsv(binary)
    empty = write(tmp_path / "RTE" / "dev.tsv", "")
    with pytest.raises(DataError, match=r"GLUE file '.*dev\.tsv' is empty; give a non-empty file"):
        read_glue_tsv(empty)
    with pytest.raises(DataError, match=r"no column 'question1' for task qqp"):
        read_glue_tsv(glue_root / "SST-2" / "dev.tsv", task="qqp")
    headless = write(tmp_path / "x" / "dev.tsv", "text\tgold\nA cat.\t1\n")
    with pytest.raises(DataError, match=r"cannot tell which GLUE task .* from its header \['text', 'gold'\]: it has "
                                        r"none of the GLUE columns"):
        read_glue_tsv(headless)


def test_glue_rows_without_visible_text(tmp_path):
    root = tmp_path / "glue"
    write(root / "SST-2" / "dev.tsv", "sentence\tlabel\n\u200b \t1\n\u00ad\t0\n")
    with pytest.raises(DataError, match=r"no usable inputs in GLUE sst2 dev: all 2 record\(s\) are empty"):
        load_glue("sst2", split="dev", root=root)
    write(root / "SST-2" / "dev.tsv", "sentence\tlabel\n\u200b \t1\nA fine film.\t0\n")
    assert [r.text_a for r in load_glue("sst2", split="dev", root=root)] == ["\u200b ", "A fine film."]
