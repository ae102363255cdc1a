"""Shared fixtures: a tiny random-initialised BERT built from a config, and the shared data folder."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from headstats.measures import MeasureArray

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"

TINY_WORDS = (
    "the a an cat dog mouse mat man woman child house car tree bird sat ran saw chased ate likes "
    "gave quickly slowly very big small red green happy old new on in under with and but is was "
    "it he she they we you . , ? ! ' s ##s ##ed ##ing ##ly un ##happy yesterday today book read"
).split()


def build_tiny_bert(folder: Path, *, layers: int = 2, heads: int = 2, hidden: int = 16, seed: int = 0) -> Path:
    """Save a random-initialised BertModel with a small uncased vocabulary and a fast tokenizer."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *TINY_WORDS]
    vocab += [c for c in "abcdefghijklmnopqrstuvwxyz0123456789"] + [f"##{c}" for c in "abcdefghijklmnopqrstuvwxyz"]
    vocab = list(dict.fromkeys(vocab))
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # transformers 5 ignores vocab_file in the constructor; from_pretrained reads vocab.txt (4 and 5 alike)
    tokenizer = BertTokenizerFast.from_pretrained(folder, do_lower_case=True)
    tokenizer.save_pretrained(folder)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=2 * hidden,
        max_position_embeddings=256,
    )
    torch.manual_seed(seed)
    BertModel(config).save_pretrained(folder)
    return folder


def pytest_collection_finish(session):
    """Settings of each test process, once, before any fixture runs.

    A report's figures are drawn in the test's own process (``HEADSTATS_FIGURE_WORKERS=1``, unless set):
    pytest-xdist already runs one test process per core, and forked figure workers would contend for the same
    cores (``tests/report/test_figures.py`` tests the workers, asking for them by number).

    The heap of the big libraries is moved out of the garbage collector's sight.
    statsmodels' Holm runs ``gc.collect()`` on every call; with torch, transformers and matplotlib imported
    (most test processes import them), each call would scan their millions of objects again: seconds per test
    that corrects many families. Frozen objects are never collected, which is what module-level objects are.
    """
    import gc
    import os

    os.environ.setdefault("HEADSTATS_FIGURE_WORKERS", "1")
    import matplotlib.pyplot  # noqa: F401
    import torch  # noqa: F401
    import transformers  # noqa: F401
    from transformers import BertModel  # noqa: F401 - transformers' lazy modules, loaded by the tiny model

    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _state_cache_per_test(tmp_path_factory, monkeypatch):
    """Each test gets its own, empty state cache: no test writes to ~/.cache or sees another test's chunks; and
    its own in-process memo of model descriptions (a description made by an earlier test of the same process
    would stand in for this test's cache reads)."""
    monkeypatch.setenv("HEADSTATS_CACHE_DIR", str(tmp_path_factory.mktemp("state-cache")))
    monkeypatch.setattr("headstats.study.memo._DESCRIBED", {})


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """Directory of a tiny random BERT (2 layers x 2 heads, hidden 16)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


@pytest.fixture(scope="session")
def tiny_model(tiny_model_dir):
    from headstats.model.loading import load_model

    return load_model(str(tiny_model_dir))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.exists():
        pytest.skip(f"needs the shared data folder {SHARED_DATA} (present in CI, absent in a fresh clone)")
    return SHARED_DATA


def space_words(text: str, heads: list[int], rels: list[str]):
    """Words of a space-separated text with their character offsets and the given arcs (heads 0-based)."""
    from headstats.inputs.records import Word

    out, start = [], 0
    for token, head, rel in zip(text.split(" "), heads, rels):
        out.append(Word(token, start, start + len(token), head, rel))
        start += len(token) + 1
    return tuple(out)


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """An empty, offline Hugging Face cache; call the result with (repo_id, folder) to put a model in it.

    Returns the snapshot folder, laid out as ``huggingface_hub`` does (``refs/main`` -> ``snapshots/<sha>``).
    """
    import shutil

    import huggingface_hub.constants

    cache = tmp_path / "hf_cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads both at import; its functions (and transformers') look them up when called
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))

    def put(repo_id: str, folder: Path, sha: str = "0123456789abcdef0123456789abcdef01234567") -> Path:
        repo = cache / ("models--" + repo_id.replace("/", "--"))
        snapshot = repo / "snapshots" / sha
        shutil.copytree(folder, snapshot)
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / "main").write_text(sha)
        return snapshot

    return put


#: Heads holding each role in a planted role table of 6 layers x 2 heads, by hand (layer, head).
PLANTED_HELD = {
    "local": {(0, 0), (5, 0), (5, 1)},
    "delimiter": {(1, 1), (2, 1)},
    "delimiter_cls": {(0, 0), (0, 1), (1, 0)},
    "delimiter_sep": {(2, 0), (3, 0), (4, 1)},
    "syntactic": {(0, 1), (3, 0)},
    "syntactic:nsubj": {(3, 0), (3, 1), (5, 1)},
}


def planted_roles(held: dict = PLANTED_HELD, *, dataset: str = "d1", untested: tuple[str, ...] = ("block",)) -> pd.DataFrame:
    """A role table (:func:`headstats.analyses.pande_roles.finish.role_assignment.role_table` shape) of model ``m`` holding
    ``held``; the roles in ``untested`` all NA."""
    rows = []
    for layer in range(6):
        for head in range(2):
            row = dict(model="m", dataset=dataset, layer=layer, head=head)
            row.update({role: (layer, head) in heads for role, heads in held.items()})
            rows.append(row)
    roles = pd.DataFrame(rows)
    for role in held:
        roles[role] = roles[role].astype("boolean")
    for role in untested:
        roles[role] = pd.array([pd.NA] * len(roles), dtype="boolean")
    return roles


def planted_arrays(seed: int = 0) -> list[MeasureArray]:
    """Two data sets of one model and one of another, shuffled ids, roles not in lexical order, NaNs."""
    rng = np.random.default_rng(seed)

    def one(model, dataset, n, roles, layers=2, heads=3):
        v = (3 + 0.5 * rng.standard_normal((n, layers, heads, len(roles)))).astype(np.float32)
        v[rng.random(n) < 0.3, :, :, -1] = np.nan  # the last role: some inputs take no part
        ids = [f"s{i}" for i in rng.permutation(n)]
        return MeasureArray(model, dataset, ids, roles, v)

    return [one("m", "single", 30, ("local", "syntactic", "delimiter")),
            one("m", "pairs", 25, ("local", "syntactic", "delimiter")),
            one("k", "pairs", 12, ("zeta", "block"))]


def long_frame(arrays: list[MeasureArray]) -> pd.DataFrame:
    """The long table as a study writes it (text key columns)."""
    frame = pd.concat([a.to_frame() for a in arrays], ignore_index=True)
    return frame.astype({"model": str, "dataset": str, "sentence_id": str, "role": str})


#: Two sentences of a GUM document with entity brackets: Mary ... the old dog; She ... the dog (coreference).
#: Two GAP rows (tests/inputs/test_coref.py: the first gives one query; the second names neither candidate).
GAP = ("ID\tText\tPronoun\tPronoun-offset\tA\tA-offset\tA-coref\tB\tB-offset\tB-coref\tURL\n"
       "t-1\tAnn met Bo Li. Later she left.\tshe\t21\tAnn\t0\tTRUE\tBo Li\t8\tFALSE\tx\n"
       "t-2\tAnn met Bo. Then he left.\the\t17\tAnn\t0\tFALSE\tBo\t8\tFALSE\tx\n")

GUM = """# newdoc id = doc1
# sent_id = doc1-1
# text = Mary saw the old dog .
1	Mary	Mary	PROPN	NNP	_	2	nsubj	_	Entity=(1-person-new-x-y-1-coref)
2	saw	see	VERB	VBD	_	0	root	_	_
3	the	the	DET	DT	_	5	det	_	Entity=(2-animal-new-x-y-1-coref
4	old	old	ADJ	JJ	_	5	amod	_	_
5	dog	dog	NOUN	NN	_	2	obj	_	Entity=2)
6	.	.	PUNCT	.	_	2	punct	_	_

# sent_id = doc1-2
# text = She liked the dog .
1	She	she	PRON	PRP	_	2	nsubj	_	Entity=(1-person-giv-x-y-1-ana)
2	liked	like	VERB	VBD	_	0	root	_	_
3	the	the	DET	DT	_	4	det	_	Entity=(2-animal-giv-x-y-1-coref
4	dog	dog	NOUN	NN	_	2	obj	_	Entity=2)
5	.	.	PUNCT	.	_	2	punct	_	_

"""



@pytest.fixture()
def no_model_loading(monkeypatch):
    """Fail the test if a model is loaded (checks that must run before any model is loaded)."""
    import headstats.model.loading

    def forbidden(*args, **kwargs):
        raise AssertionError("a model was loaded before the checks")

    monkeypatch.setattr(headstats.model.loading, "load_model", forbidden)


# ------------------------------------------------------------------------------------------------------
# broken or unsupported models (tests/model): one ModelError, found without loading weights where possible
# ------------------------------------------------------------------------------------------------------
@pytest.fixture
def no_weight_loading(monkeypatch):
    """Make any loading of model weights (transformers or torch) fail the test."""
    import torch
    import transformers

    def forbidden(*args, **kwargs):
        raise AssertionError("weights were loaded")

    monkeypatch.setattr(transformers.PreTrainedModel, "from_pretrained", classmethod(forbidden))
    monkeypatch.setattr(torch, "load", forbidden)
    import safetensors.torch

    monkeypatch.setattr(safetensors.torch, "load_file", forbidden)


def copy_model(tiny_model_dir: Path, tmp_path: Path, name: str = "model", keep=None) -> Path:
    """A copy of a model folder (only the files named in ``keep``, when given), to break."""
    import shutil

    folder = tmp_path / name
    folder.mkdir()
    for p in Path(tiny_model_dir).iterdir():
        if keep is None or p.name in keep:
            shutil.copy(p, folder / p.name)
    return folder


TOKENIZER_AND_CONFIG = {"config.json", "vocab.txt", "tokenizer.json", "tokenizer_config.json"}


def refused_model(spec, *words_in_message, **kwargs) -> str:
    """check_model_source(spec) and load_model(spec) both raise one ModelError with the given words."""
    from headstats.errors import ModelError
    from headstats.model.loading import load_model
    from headstats.model.sources import check_model_source

    messages = []
    for call in (check_model_source, load_model):
        with pytest.raises(ModelError) as info:
            call(str(spec), **kwargs)
        messages.append(str(info.value))
    for message in messages:
        assert "\n" not in message
        for word in words_in_message:
            assert word in message, (word, message)
    return messages[0]


def run_collectors(models: dict, texts, jobs, *, batch_size: int = 16) -> list:
    """Run ``jobs`` (engine Jobs on data set ``"d"``) over ``texts`` ((text_a, text_b or None) pairs) with the
    loaded ``models`` (name -> LoadedModel) through the engine's Runner, as a study does; the filled collectors."""
    from headstats.engine.runner import Runner
    from headstats.inputs.records import Record

    records = [Record(sentence_id=str(i), text_a=a, text_b=b) for i, (a, b) in enumerate(texts)]
    Runner(batch_size=batch_size).run(lambda name: models[name], {"d": records}, jobs)
    return [job.collector for job in jobs]


def process_running(pid: int) -> bool:
    """Whether process ``pid`` runs, from /proc (a zombie has ended: only its exit status is left)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_until(condition, seconds: float, step: float = 0.05) -> bool:
    """Poll ``condition()`` until it holds or ``seconds`` have passed; whether it held."""
    import time

    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True
