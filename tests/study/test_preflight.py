"""The one check before any work: every refusal with its kind and words, nothing loaded, nothing written."""

from __future__ import annotations

import errno
from pathlib import Path

import numpy as np
import pytest
import yaml

from headstats.study import preflight as preflight_module
from headstats.errors import DataError, ModelError, OutputError, ProtocolError, UnknownNameError
from headstats.study.preflight import NAME_MAX, preflight
from headstats.config.protocol import load_protocol

REPO = Path(__file__).resolve().parents[2]
SENTENCES = REPO / "data" / "demo" / "sentences.txt"
CONLLU = REPO / "data" / "demo" / "mini.conllu"


@pytest.fixture()
def study(tmp_path, tiny_model_dir, monkeypatch):
    """A folder with a GLUE root (SST-2 dev only), a model folder without weights, and a data folder."""
    monkeypatch.delenv("HEADSTATS_GLUE_ROOT", raising=False)
    glue = tmp_path / "glue"
    (glue / "SST-2").mkdir(parents=True)
    (glue / "SST-2" / "dev.tsv").write_text("sentence\tlabel\nthe cat sat\t1\n")
    empty_model = tmp_path / "no_weights"
    empty_model.mkdir()
    (empty_model / "config.json").write_text("{}")
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.md").write_text("x\n")
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "notes.txt").write_text("mine")  # not empty: an empty folder is a valid --out
    return {"root": tmp_path, "glue": glue, "model": str(tiny_model_dir), "no_weights": str(empty_model)}


def protocol_for(study, **overrides) -> dict:
    raw = {
        "name": "tiny",
        "models": [study["model"]],
        "datasets": [{"name": "single", "path": str(SENTENCES)}, {"name": "sst2", "glue": {"task": "sst2"}}],
        "data_root": str(study["glue"]),
    }
    raw.update(overrides)
    return raw


def check(study, raw: dict, *, out=None, overwrite=False):
    path = study["root"] / "p.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True))
    return preflight(load_protocol(path), out=out, overwrite=overwrite)


def test_good_protocol_passes_and_writes_nothing(study):
    out = study["root"] / "runs" / "new"
    (study["root"] / "p.yaml").write_text("")
    before = sorted(p.name for p in study["root"].iterdir())
    assert check(study, protocol_for(study), out=out) == out.resolve()
    assert check(study, protocol_for(study)) is None  # no --out, no 'output': output not checked
    assert sorted(p.name for p in study["root"].iterdir()) == before  # no output folder, no probe file left
    assert check(study, protocol_for(study, output=str(out))) == out.resolve()  # the protocol's 'output'


# (overrides of the protocol, error kind, words the one-line message must hold)
REFUSALS = {
    "tau NaN": ({"statistics": {"tau": float("nan")}}, ProtocolError, ["statistics.tau", "finite"]),
    "tau inf": ({"statistics": {"tau": float("inf")}}, ProtocolError, ["statistics.tau", "finite"]),
    "tau negative": ({"statistics": {"tau": -1}}, ProtocolError, ["statistics.tau", "greater than or equal to 0"]),
    "alpha 0": ({"statistics": {"alpha": 0}}, ProtocolError, ["statistics.alpha", "must be a number > 0"]),
    "alpha 1": ({"statistics": {"alpha": 1}}, ProtocolError, ["statistics.alpha", "must be a number < 1"]),
    "confidence 1.5": ({"statistics": {"confidence": 1.5}}, ProtocolError, ["statistics.confidence"]),
    "alpha true": ({"statistics": {"alpha": True}}, ProtocolError, ["statistics.alpha", "not true"]),
    "seed true": ({"seed": True}, ProtocolError, ["'seed'", "not true"]),
    "seed 1.5": ({"seed": 1.5}, ProtocolError, ["'seed'", "must be a whole number"]),
    "seed negative": ({"seed": -1}, ProtocolError, ["'seed'", "must be a number >= 0"]),
    "roles empty": ({"scoring": {"roles": []}}, ProtocolError, ["scoring.roles", "empty", "at least one role"]),
    "relations empty": ({"scoring": {"relations": []}}, ProtocolError, ["scoring.relations", "empty"]),
    "models empty": ({"models": []}, ProtocolError, ["'models'", "empty", "at least one model"]),
    "datasets empty": ({"datasets": []}, ProtocolError, ["'datasets'", "empty", "at least one data set"]),
    "syntactic unknown": ({"scoring": {"roles": ["local", "syntactic:subj"]}}, ProtocolError,
                          ["unknown dependency relation 'subj'"]),
    "relation unknown": ({"scoring": {"relations": ["nsubj", "bogus"]}}, ProtocolError,
                         ["unknown dependency relation 'bogus'"]),
    "role unknown": ({"scoring": {"roles": ["lokal"]}}, UnknownNameError, ["unknown role 'lokal'", "did you mean 'local'"]),
    "role twice": ({"scoring": {"roles": ["local", "local"]}}, ProtocolError, ["local", "more than once"]),
    "test unknown": ({"statistics": {"test": "ztest"}}, UnknownNameError, ["unknown test 'ztest'", "wilcoxon"]),
    "correction unknown": ({"statistics": {"correction": "bh"}}, UnknownNameError, ["unknown correction", "fdr_bh"]),
    "limit true": ({"datasets": [{"name": "a", "path": str(SENTENCES), "limit": True}]}, ProtocolError,
                   ["datasets.0.limit", "not true"]),
    "glue n 0": ({"datasets": [{"name": "g", "glue": {"task": "sst2", "n": 0}}]}, ProtocolError,
                 ["datasets.0.glue.n", "must be a number >= 1"]),
    "finetune epochs -1": ({"models": [{"name": "ft", "finetune": {"task": "sst2", "epochs": -1}}]}, ProtocolError,
                           ["models.0.finetune.epochs", "must be a number > 0"]),
    "finetune lr 0": ({"models": [{"name": "ft", "finetune": {"task": "sst2", "learning_rate": 0}}]},
                      ProtocolError, ["finetune.learning_rate"]),
    "finetune warmup 1": ({"models": [{"name": "ft", "finetune": {"task": "sst2", "warmup_ratio": 1}}]},
                          ProtocolError, ["finetune.warmup_ratio"]),
    # names that become file names
    "name with slash": ({"name": "../../etc"}, ProtocolError, ["'name'", "'/'"]),
    "name dot-dot": ({"name": ".."}, ProtocolError, ["'name'", "'..'"]),
    "name too long": ({"name": "x" * 300}, ProtocolError, ["'name'", "300 characters", f"at most {NAME_MAX}"]),
    "name empty": ({"name": " "}, ProtocolError, ["'name'", "empty"]),
    "dataset name NUL": ({"datasets": [{"name": "a\0b", "path": str(SENTENCES)}]}, ProtocolError,
                         ["data set name", "\\x00", "control characters"]),
    "dataset name too long": ({"datasets": [{"name": "x" * 101, "path": str(SENTENCES)}]}, ProtocolError,
                              ["data set name", "101 characters"]),
    "model name too long": ({"models": [{"name": "x" * 150, "path": "default"}]}, ProtocolError,
                            ["model name", "150 characters", "'path:'"]),
    # device
    "device quantum": ({"device": "quantum"}, ModelError, ["unknown device 'quantum'", "'cpu'"]),
    # models
    "model folder missing": ({"models": ["/nonexistent/headstats/model"]}, ModelError,
                             ["/nonexistent/headstats/model", "does not exist"]),
    "finetune base missing": ({"models": [{"name": "ft", "finetune": {"task": "sst2",
                                                                      "base": "/nonexistent/base"}}]},
                              ModelError, ["base model of model 'ft'", "does not exist"]),
    "finetune task unknown": ({"models": [{"name": "ft", "finetune": {"task": "sst3", "base": "default"}}]},
                              DataError, ["model 'ft'", "unknown GLUE task 'sst3'", "sst2"]),
    "finetune train split missing": ({"models": [{"name": "ft", "finetune": {"task": "sst2", "base": "default",
                                                                             "train_split": "train"}}]},
                                     DataError, ["model 'ft'", "train.tsv", "does not exist", "has: dev"]),
    # data
    "data file missing": ({"datasets": [{"name": "a", "path": "/nonexistent/data.txt"}]}, DataError,
                          ["data set 'a'", "/nonexistent/data.txt", "does not exist"]),
    "data format unknown": ({"datasets": [{"name": "a", "path": str(REPO / "README.md")}]}, DataError,
                            ["data set 'a'", "cannot tell the format", "format:"]),
    "glue task unknown": ({"datasets": [{"name": "g", "glue": {"task": "squad"}}]}, DataError,
                          ["data set 'g'", "unknown GLUE task 'squad'", "sst2, mrpc"]),
    "glue split unknown": ({"datasets": [{"name": "g", "glue": {"task": "sst2", "split": "holdout"}}]},
                           DataError, ["data set 'g'", "no split 'holdout'", "train, dev, test"]),
    "glue split file missing": ({"datasets": [{"name": "g", "glue": {"task": "sst2", "split": "train"}}]},
                                DataError, ["data set 'g'", "SST-2/train.tsv", "does not exist", "has: dev"]),
    "glue root missing": ({"data_root": "/nonexistent/glue"}, DataError,
                          ["data set 'sst2'", "/nonexistent/glue", "does not exist", "data_root"]),
    "glue task folder missing": ({"datasets": [{"name": "g", "glue": {"task": "mrpc"}}]}, DataError,
                                 ["MRPC/dev.tsv", "does not exist"]),
    "parser missing": ({"scoring": {"parser": "no_such_spacy_model"}}, ProtocolError,
                       ["spaCy parser 'no_such_spacy_model'", "not installed"]),
}


@pytest.mark.parametrize("overrides, kind, words", list(REFUSALS.values()), ids=list(REFUSALS))
def test_refusals(study, overrides, kind, words):
    with pytest.raises(kind) as info:
        check(study, protocol_for(study, **overrides), out=study["root"] / "o")
    message = str(info.value)
    assert "\n" not in message and "\0" not in message
    for word in words:
        assert word in message, message
    assert not (study["root"] / "o").exists()


FOLDER_REFUSALS = {
    "data path is a folder": (lambda s: {"datasets": [{"name": "a", "path": str(s["root"] / "folder")}]},
                              DataError, ["data set 'a'", "is a folder", "name one data file"]),
    "model without weights": (lambda s: {"models": [s["no_weights"]]}, ModelError, ["no weight files"]),
    "model without config": (lambda s: {"models": [str(s["root"] / "folder")]}, ModelError, ["config.json"]),
    "glue root is a file": (lambda s: {"data_root": str(s["root"] / "notes.md")}, DataError, ["is not a folder"]),
}


@pytest.mark.parametrize("make, kind, words", list(FOLDER_REFUSALS.values()), ids=list(FOLDER_REFUSALS))
def test_refusals_of_local_folders(study, make, kind, words):
    with pytest.raises(kind) as info:
        check(study, protocol_for(study, **make(study)), out=study["root"] / "o")
    for word in words:
        assert word in str(info.value), str(info.value)


def test_cuda_refused_without_a_gpu(study):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(ModelError, match="device 'cuda' is not available on this machine; use one of: cpu"):
        check(study, protocol_for(study, device="cuda"))


def test_changed_after_loading_is_checked(study):
    path = study["root"] / "p.yaml"
    path.write_text(yaml.safe_dump(protocol_for(study)))
    protocol = load_protocol(path)
    protocol.statistics.tau = float("nan")  # pydantic does not validate assignments
    with pytest.raises(ProtocolError, match=r"statistics\.tau.*finite"):
        preflight(protocol)
    protocol.statistics.tau = 3.0
    protocol.scoring.roles = ["syntactic:nope"]
    with pytest.raises(ProtocolError, match="unknown dependency relation 'nope'"):
        preflight(protocol)


def test_unreadable_data_file(study, monkeypatch):
    real_open = open

    def deny(path, *args, **kwargs):
        if Path(path) == SENTENCES:
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(preflight_module, "open", deny, raising=False)
    with pytest.raises(DataError, match="data set 'single'.*cannot be read \\(Permission denied\\); check its permissions"):
        check(study, protocol_for(study))


def test_glue_without_root_needs_datasets_and_the_hub(study, monkeypatch):
    raw = protocol_for(study, data_root=None)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    import headstats.hub

    monkeypatch.setattr(headstats.hub, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(DataError, match="data set 'sst2'.*hub cannot be reached.*--data-root"):
        check(study, raw)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # a copy in the datasets cache is read offline
    real_find_spec = preflight_module.importlib.util.find_spec
    if real_find_spec("datasets") is not None:
        assert check(study, raw) is None
    monkeypatch.setattr(preflight_module.importlib.util, "find_spec",
                        lambda name: None if name == "datasets" else real_find_spec(name))
    with pytest.raises(DataError, match="needs the datasets library"):
        check(study, raw)
    monkeypatch.setenv("HEADSTATS_GLUE_ROOT", str(study["glue"]))  # the environment's root is used
    assert check(study, raw) is None


def test_conllu_only_needs_no_parser(study):
    raw = protocol_for(study, datasets=[{"name": "gold", "path": str(CONLLU)}])
    raw["scoring"] = {"parser": "no_such_spacy_model"}
    assert check(study, raw) is None
    raw["scoring"]["roles"] = ["local"]  # no arc role: nothing is parsed
    raw["datasets"] = [{"name": "single", "path": str(SENTENCES)}]
    assert check(study, raw) is None


# ------------------------------------------------------------------------------------------------ output


def test_existing_output_refused_unless_overwrite(study):
    with pytest.raises(OutputError, match="exists; choose another --out or pass --overwrite"):
        check(study, protocol_for(study), out=study["root"] / "existing")
    with pytest.raises(OutputError, match="exists"):
        check(study, protocol_for(study, output=str(study["root"] / "existing")))


def test_output_that_is_a_file_refused(study):
    with pytest.raises(OutputError, match="is a file"):
        check(study, protocol_for(study), out=study["root"] / "notes.md", overwrite=True)
    with pytest.raises(OutputError, match="cannot be made.*notes.md' is a file"):
        check(study, protocol_for(study), out=study["root"] / "notes.md" / "run")


def test_output_name_too_long_for_its_staging_folder(study):
    with pytest.raises(OutputError, match="is 250 bytes long.*at most 215"):
        check(study, protocol_for(study), out=study["root"] / ("r" * 250))
    assert check(study, protocol_for(study), out=study["root"] / ("r" * 215)) == (study["root"] / ("r" * 215)).resolve()


@pytest.mark.parametrize("code, words", [(errno.EROFS, "read-only file system"), (errno.EACCES, "permission denied")])
def test_unwritable_output_refused_up_front(study, monkeypatch, code, words):
    def refuse(*args, **kwargs):
        raise OSError(code, words.capitalize())

    monkeypatch.setattr(preflight_module.tempfile, "mkstemp", refuse)
    out = study["root"] / "new" / "deeper" / "run"
    with pytest.raises(OutputError) as info:
        check(study, protocol_for(study), out=out)
    message = str(info.value)
    assert words in message and str(study["root"]) in message and "choose another --out" in message
    assert not (study["root"] / "new").exists()


def test_output_check_gets_every_input(study, monkeypatch):
    """storage.check_output_folder is asked with every data file, data root and local model folder."""
    import headstats.study.storage

    seen = {}

    def record(out, *, overwrite=False, inputs=()):
        seen.update(out=out, overwrite=overwrite, inputs={Path(p) for p in inputs})
        return Path(out).resolve()

    monkeypatch.setattr(headstats.study.storage, "check_output_folder", record)
    raw = protocol_for(study, models=[study["model"], "default",
                                      {"name": "ft", "finetune": {"task": "sst2", "base": "default"}}],
                       cache_dir=str(study["root"] / "cache"))
    check(study, raw, out=study["root"] / "o", overwrite=True)
    from headstats.model.sources import default_model_path

    assert seen["overwrite"] is True
    assert seen["inputs"] == {
        SENTENCES, study["glue"], study["glue"] / "SST-2" / "dev.tsv", Path(study["model"]),
        default_model_path(), study["root"] / "cache" / "checkpoints",  # where the fine-tuned checkpoint goes
    }


def test_unsafe_output_refusal_is_an_output_error(study, monkeypatch):
    """Whatever storage refuses (/, home, the working folder, inputs) reaches the user as an OutputError."""
    import headstats.study.storage
    from headstats.errors import HeadstatsError

    def refuse(out, *, overwrite=False, inputs=()):
        raise HeadstatsError(f"output folder {str(out)!r} holds the run's inputs; choose another --out")

    monkeypatch.setattr(headstats.study.storage, "check_output_folder", refuse)
    with pytest.raises(OutputError, match="holds the run's inputs"):
        check(study, protocol_for(study), out=study["glue"], overwrite=True)


# ------------------------------------------------------------------------------------------------ nothing loaded


def test_nothing_is_loaded_or_read(study, monkeypatch):
    import transformers

    import headstats.inputs.parsing
    import headstats.inputs.readers
    import headstats.model.loading

    def forbidden(*args, **kwargs):
        raise AssertionError("preflight must not load models or read inputs")

    monkeypatch.setattr(headstats.model.loading, "load_model", forbidden)
    # the tokenizer files are read (a model folder's vocabulary is checked against its embeddings), no weights
    for cls in (transformers.AutoModel, transformers.AutoModelForSequenceClassification):
        monkeypatch.setattr(cls, "from_pretrained", forbidden)
    monkeypatch.setattr(headstats.inputs.readers, "read_records", forbidden)
    monkeypatch.setattr(headstats.inputs.parsing, "load_parser", forbidden)
    monkeypatch.setattr(headstats.inputs.parsing, "parse_records", forbidden)
    raw = protocol_for(study, models=[study["model"], {"name": "ft", "finetune": {"task": "sst2"}}],
                       datasets=[{"name": "single", "path": str(SENTENCES)}, {"name": "gold", "path": str(CONLLU)},
                                 {"name": "sst2", "glue": {"task": "sst2"}}])
    assert check(study, raw, out=study["root"] / "o") == (study["root"] / "o").resolve()


# ------------------------------------------------------------------------------------------------ file names


def test_names_differing_only_in_punctuation_get_their_own_figure_files(study):
    raw = protocol_for(study, datasets=[{"name": "a/b", "path": str(SENTENCES)}, {"name": "a_b", "path": str(SENTENCES)}])
    assert check(study, raw) is None


def test_longest_names_fit_file_names(study):
    # a 100-character model name and a 100-character data set name still make a file name that fits
    raw = protocol_for(study, models=[{"name": "m" * NAME_MAX, "path": study["model"]}],
                       datasets=[{"name": "d" * NAME_MAX, "path": str(SENTENCES)}])
    assert check(study, raw) is None
    # 100 characters of four UTF-8 bytes each too: figure names are cut and given a hash
    raw["datasets"] = [{"name": "\U0001F600" * NAME_MAX, "path": str(SENTENCES)}]
    assert check(study, raw) is None


def test_resampling_too_few_resamples_refused_before_any_model_loads(study):
    # issue 8: bootstrap/permutation with B = 9,999 over a family of 720 hypotheses could never assign a head
    import json

    config = json.loads((Path(study["model"]) / "config.json").read_text())
    layers, heads = config["num_hidden_layers"], config["num_attention_heads"]
    roles = ["local", "delimiter", "block"]
    m = layers * heads * len(roles)  # family [model, dataset]: all heads x roles of one model on one data set
    raw = protocol_for(study, scoring={"roles": roles},
                       statistics={"test": "permutation", "n_resamples": 99, "correction": "bonferroni"})
    need = int(np.ceil(m / 0.05)) - 1  # 1 / (B + 1) * m <= alpha
    if need <= 99:
        pytest.skip("the tiny model's family is too small for B = 99 to be refused")
    with pytest.raises(ProtocolError) as info:
        check(study, raw)
    message = str(info.value)
    assert "\n" not in message and f"at least {need}" in message and f"up to {m} hypotheses" in message
    # enough, 'auto' and a test that does not resample pass
    for statistics in ({"test": "permutation", "n_resamples": need, "correction": "bonferroni"},
                       {"test": "permutation", "n_resamples": "auto"}, {"test": "t", "n_resamples": 99}):
        assert check(study, protocol_for(study, scoring={"roles": roles}, statistics=statistics)) is None
    # a family per role and layer is smaller: 99 resamples suffice when heads / 0.05 <= 100
    small = protocol_for(study, scoring={"roles": roles}, statistics={
        "test": "bootstrap", "n_resamples": 99, "family": ["model", "dataset", "role", "layer"], "alpha": 0.05})
    if heads / 0.05 <= 100:
        assert check(study, small) is None
# --------------------------------------------------------------------------------- tau out of reach (issue 8)
def test_tau_warnings_found_without_data(study):
    from headstats.study.preflight import tau_warnings

    def warnings(**overrides):
        path = study["root"] / "w.yaml"
        path.write_text(yaml.safe_dump(protocol_for(study, **overrides)))
        return tau_warnings(load_protocol(path))

    assert any("block" in w and "2 + 2/a + 1/b" in w for w in warnings())  # default tau 3, block on the bias scale
    assert warnings(statistics={"tau": {"default": 3, "block": 1.5}}) == []
    assert warnings(scoring={"block_entropy": True}) == []  # the entropy factor lifts block's scale
    unit = warnings(scoring={"scale": {"default": "bias", "block": "mass", "local": "ceiling"}},
                    statistics={"tau": {"default": 3, "block": 0.5}})
    assert len(unit) == 1 and "role local is at or above 1" in unit[0] and "'ceiling'" in unit[0]
    assert all("\n" not in w for w in unit)
# ------------------------------------------------------------------ issue 12: precision, executor, cache folder


def test_float16_on_a_cpu_is_refused_before_any_work(study):
    with pytest.raises(ModelError, match="float16' needs a GPU"):
        check(study, protocol_for(study, dtype="float16"))
    check(study, protocol_for(study, dtype="bfloat16"))


def test_ray_executor_needs_ray(study, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else real(name, *a))
    with pytest.raises(ProtocolError, match=r"pip install 'headstats\[ray\]'"):
        check(study, protocol_for(study, execution={"executor": "ray"}))


def test_cache_folder_checks(study):
    path = study["root"] / "p.yaml"
    path.write_text(yaml.safe_dump(protocol_for(study)))
    protocol = load_protocol(path)
    with pytest.raises(OutputError, match="cache folder .* is a file.*--no-cache"):
        preflight(protocol, cache_dir=study["root"] / "notes.md" / "cache")
    out = study["root"] / "runs" / "out"
    with pytest.raises(OutputError, match="inside the output folder"):  # a run replaces its output
        preflight(protocol, out=study["root"] / "runs", cache_dir=study["root"] / "runs" / "cache")
    assert preflight(protocol, out=out, cache_dir=study["root"] / "new" / "cache") == out.resolve()
    assert not (study["root"] / "new").exists()  # nothing made


def test_hub_model_neither_cached_nor_reachable_is_refused_before_any_data(study, monkeypatch):
    """validate and run refuse it with the line load_model gives, before any data is read."""
    import headstats.hub
    from headstats.hub import not_available_error

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(headstats.hub, "cached_hub_file", lambda *a, **k: None)
    raw = protocol_for(study, models=["someone/uncached-bert"])
    raw["datasets"] = [{"name": "gone", "path": str(study["root"] / "missing.txt")}]  # data comes later
    with pytest.raises(ModelError) as info:
        check(study, raw)
    assert str(info.value) == str(not_available_error("someone/uncached-bert"))
    # the same for the base model of a fine-tuning
    raw["models"] = [{"name": "ft", "finetune": {"base": "someone/uncached-bert", "task": "sst2"}}]
    with pytest.raises(ModelError, match="base model of model 'ft': model 'someone/uncached-bert' is not on disk"):
        check(study, raw)
    # cached config and weights: no network needed
    monkeypatch.setattr(headstats.hub, "cached_hub_file", lambda repo, name, revision=None: Path("/x") / name)
    headstats.hub.check_hub_model_available("someone/uncached-bert")
