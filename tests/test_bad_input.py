"""The bad-input and fault suite (issue 10): every case gives one line ``error: ...``, exit 2, no traceback,
no output or staging folder, and no changed file outside the output folder.

Every case runs inside a temporary HOME and working folder (the ``sandbox``), so that the dangerous ones
(``--out / --overwrite``, ``--out ~ --overwrite``) can only ever touch files made for the test; a snapshot of
the whole sandbox before and after each case shows that nothing was deleted or changed. Runs use a tiny
random BERT; the signal and ``kill -9`` cases run the real CLI in a subprocess.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from conftest import build_tiny_bert

from headstats.cli.main import app

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "data" / "demo"
runner = CliRunner()


# ----------------------------------------------------------------------------------- the sandbox

class Sandbox:
    """A temporary HOME holding a working folder with a thesis, a corpus, a tiny model and a protocol."""

    def __init__(self, root: Path, model: Path):
        self.home = root / "home"
        self.work = self.home / "work"
        self.work.mkdir(parents=True)
        (self.home / ".ssh").mkdir()
        (self.home / ".ssh" / "id_rsa").write_text("secret key")
        (self.work / "thesis").mkdir()
        (self.work / "thesis" / "chapter1.tex").write_text("my thesis")
        self.corpus = self.work / "corpus"
        self.corpus.mkdir()
        lines = DEMO.joinpath("sentences.txt").read_text(encoding="utf-8").splitlines()[:12]
        (self.corpus / "sentences.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        self.model = model

    def protocol(self, filename: str = "protocol.yaml", **overrides) -> Path:
        protocol = {
            "name": "bad",
            "models": [str(self.model)],
            "datasets": [{"name": "single", "path": str(self.corpus / "sentences.txt")}],
            "scoring": {"batch_size": 4, "roles": ["local", "delimiter_cls"]},
            "statistics": {"tau": 1.0, "sensitivity": False},
            "report": {"figures": {"formats": ["png"], "dpi": 72}},  # tables are tested here; figures in tests/report
        }
        for key, value in overrides.items():
            if isinstance(value, dict) and isinstance(protocol.get(key), dict):
                protocol[key] = {**protocol[key], **value}
            else:
                protocol[key] = value
        path = self.work / filename
        path.write_text(yaml.safe_dump(protocol), encoding="utf-8")
        return path

    def write(self, name: str, content: str | bytes) -> Path:
        path = self.work / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content) if isinstance(content, bytes) else path.write_text(content, encoding="utf-8")
        return path

    def snapshot(self) -> dict[str, tuple]:
        """Every file and folder of the sandbox with its content (symlinks as their target)."""
        out = {}
        for path in sorted(self.home.rglob("*")):
            rel = str(path.relative_to(self.home))
            if path.is_symlink():
                out[rel] = ("link", os.readlink(path))
            elif path.is_dir():
                out[rel] = ("dir",)
            else:
                out[rel] = ("file", path.read_bytes())
        return out


@pytest.fixture(scope="session")
def bad_model_dir(tmp_path_factory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("bad_input_model") / "tiny")


@pytest.fixture
def sandbox(tmp_path, bad_model_dir, monkeypatch) -> Sandbox:
    box = Sandbox(tmp_path, bad_model_dir)
    monkeypatch.setenv("HOME", str(box.home))
    # libraries' own caches (matplotlib's font list) live outside the sandbox: only headstats is watched
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "library-cache" / "matplotlib"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "library-cache"))
    monkeypatch.chdir(box.work)
    return box


def refused(box: Sandbox, args: list[str], *needles: str, status: int = 2, prepare=None) -> str:
    """Run the CLI and check the whole contract of a refusal; return the error line."""
    before = box.snapshot()
    result = runner.invoke(app, args)
    output = result.output.strip()
    assert result.exit_code == status, output
    assert "Traceback" not in output, output
    lines = output.splitlines()
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1 and lines[-1] == errors[0], output
    for needle in needles:
        assert needle.lower() in errors[0].lower(), errors[0]
    after = box.snapshot()
    assert after == before, _difference(before, after)
    return errors[0]


def _difference(before: dict, after: dict) -> str:
    gone = sorted(set(before) - set(after))
    new = sorted(set(after) - set(before))
    changed = sorted(k for k in set(before) & set(after) if before[k] != after[k])
    return f"deleted {gone[:5]}, created {new[:5]}, changed {changed[:5]}"


def both_refuse(box: Sandbox, protocol: Path, *needles: str) -> None:
    """``validate`` and ``run`` refuse the protocol with the same line, before any model is loaded."""
    line_validate = refused(box, ["validate", str(protocol)], *needles)
    line_run = refused(box, ["run", str(protocol), "--out", str(box.work / "out"), "--quiet"], *needles)
    assert line_validate == line_run


# ----------------------------------------------------------------------------------- protocols

PROTOCOL_TEXTS = {
    "not_yaml": ("name: [unclosed\n", ["not valid YAML"]),
    "a_list": ("- a\n- b\n", ["mapping"]),
    "a_scalar": ("just words\n", ["mapping"]),
    "empty_file": ("", ["mapping"]),
    "python_tag": ("!!python/object/apply:os.system ['touch pwned']\n", []),
    "billion_laughs": ("a: &a ['x','x','x','x','x','x','x','x','x']\n"
                       + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                                 for p, c in zip("abcdefgh", "bcdefghi")), []),
    "deep_nesting": ("x: " + "[" * 5000 + "]" * 5000 + "\n", []),
    "nul_key": ("name: ok\n\"da\\0tasets\": []\n", []),
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_TEXTS))
def test_unreadable_protocols(sandbox, case):
    text, needles = PROTOCOL_TEXTS[case]
    path = sandbox.write(f"{case}.yaml", text)
    both_refuse(sandbox, path, *needles)
    assert not (sandbox.work / "pwned").exists()


def test_protocol_that_is_missing_a_folder_or_latin1(sandbox):
    both_refuse(sandbox, sandbox.work / "nothing.yaml", "does not exist")
    folder = sandbox.work / "protocol_folder.yaml"
    folder.mkdir()
    both_refuse(sandbox, folder, "folder")
    latin = sandbox.write("latin.yaml", "name: caf\xe9\n".encode("latin-1"))
    both_refuse(sandbox, latin, "UTF-8")


PROTOCOL_VALUES = {
    "unknown_key": ({"colour": "red"}, ["unknown key 'colour'"]),
    "unknown_nested_key": ({"scoring": {"windw": 3}}, ["scoring.windw"]),
    "no_datasets": ({"datasets": []}, ["datasets"]),
    "no_models": ({"models": []}, ["models"]),
    "tau_nan": ({"statistics": {"tau": float("nan")}}, ["tau"]),
    "tau_inf": ({"statistics": {"tau": float("inf")}}, ["tau"]),
    "tau_negative": ({"statistics": {"tau": -1}}, ["tau"]),
    "alpha_zero": ({"statistics": {"alpha": 0}}, ["alpha"]),
    "alpha_above_one": ({"statistics": {"alpha": 1.5}}, ["alpha"]),
    "confidence_two": ({"statistics": {"confidence": 2}}, ["confidence"]),
    "seed_bool": ({"seed": True}, ["seed"]),
    "seed_text": ({"seed": "abc"}, ["seed"]),
    "roles_empty": ({"scoring": {"roles": []}}, ["roles"]),
    "relations_empty": ({"scoring": {"relations": []}}, ["relations"]),
    "role_unknown": ({"scoring": {"roles": ["lokal"]}}, ["lokal", "local"]),
    "relation_unknown": ({"scoring": {"roles": ["syntactic:frobnicate"]}}, ["frobnicate"]),
    "test_unknown": ({"statistics": {"test": "wilcox"}}, ["wilcox", "wilcoxon"]),
    "correction_unknown": ({"statistics": {"correction": "holmes"}}, ["holmes", "holm"]),
    "family_unknown": ({"statistics": {"family": ["galaxy"]}}, ["family"]),
    "window_negative": ({"scoring": {"window": -1}}, ["window"]),
    "max_length_tiny": ({"scoring": {"max_length": 2}}, ["max_length"]),
    "batch_size_zero": ({"scoring": {"batch_size": 0}}, ["batch_size"]),
    "too_long_unknown": ({"scoring": {"too_long": "explode"}}, ["too_long"]),
    "arc_direction_unknown": ({"scoring": {"arc_direction": "sideways"}}, ["arc_direction"]),
    "min_n_one": ({"statistics": {"min_n": 1}}, ["min_n"]),
    "resamples_few": ({"statistics": {"n_resamples": 5}}, ["n_resamples"]),
    "device_quantum": ({"device": "quantum"}, ["quantum"]),
    "device_cuda": ({"device": "cuda"}, ["cuda"]),
    "model_names_repeated": ({"models": [{"name": "m", "path": "x"}, {"name": "m", "path": "y"}]}, ["unique"]),
    "name_nul": ({"name": "a\x00b"}, ["name"]),
    "name_too_long": ({"name": "n" * 300}, ["name"]),
    "top_k_zero": ({"report": {"top_k": 0}}, ["top_k"]),
    "compare_unknown_model": ({"compare": [{"base": "nope", "finetuned": ["also_nope"]}]}, ["nope"]),
    "finetune_epochs_negative": ({"models": [{"name": "ft", "finetune": {"task": "sst2", "epochs": -1}}]},
                                 ["epochs"]),
    "finetune_lr_zero": ({"models": [{"name": "ft", "finetune": {"task": "sst2", "learning_rate": 0}}]},
                         ["learning_rate"]),
    "finetune_unknown_task": ({"models": [{"name": "ft", "finetune": {"task": "sst3"}}]}, ["sst3"]),
}


@pytest.mark.parametrize("case", sorted(PROTOCOL_VALUES))
def test_protocol_values_validate_equals_run(sandbox, case):
    overrides, needles = PROTOCOL_VALUES[case]
    both_refuse(sandbox, sandbox.protocol(**overrides), *needles)


def dataset(**spec):
    return {"datasets": [{"name": "d", **spec}]}


def test_data_set_names_that_differ_only_in_punctuation_or_case_get_their_own_figures(sandbox):
    path = str(sandbox.corpus / "sentences.txt")
    names = ["a/b", "a_b", "A_b"]
    protocol = sandbox.protocol(datasets=[{"name": n, "path": path} for n in names])
    result = runner.invoke(app, ["run", str(protocol), "--out", "out", "--quiet"])
    assert result.exit_code == 0, result.output
    grids = sorted(p.name.lower() for p in (sandbox.work / "out" / "figures").glob("roles_grid_*.png"))
    assert len(set(grids)) == 3


DATA_SPECS = {
    "path_missing": (lambda box: dataset(path=str(box.work / "missing.txt")), ["does not exist"]),
    "path_is_folder": (lambda box: dataset(path=str(box.corpus)), ["folder"]),
    "path_and_glue": (lambda box: dataset(path=str(box.corpus / "sentences.txt"), glue={"task": "sst2"}),
                      ["exactly one"]),
    "neither_path_nor_glue": (lambda box: dataset(), ["exactly one"]),
    "format_unknown": (lambda box: dataset(path=str(box.corpus / "sentences.txt"), format="docx"), ["format"]),
    "glue_task_unknown": (lambda box: dataset(glue={"task": "sst3", "root": str(box.corpus)}), ["sst3"]),
    "glue_split_missing": (lambda box: dataset(glue={"task": "sst2", "split": "train", "root": str(box.corpus)}),
                           ["SST-2"]),
    "glue_root_missing": (lambda box: dataset(glue={"task": "sst2", "root": str(box.work / "no_glue")}), ["no_glue"]),
    "limit_zero": (lambda box: dataset(path=str(box.corpus / "sentences.txt"), limit=0), ["limit"]),
}


@pytest.mark.parametrize("case", sorted(DATA_SPECS))
def test_data_specs_validate_equals_run(sandbox, case):
    make, needles = DATA_SPECS[case]
    both_refuse(sandbox, sandbox.protocol(**make(sandbox)), *needles)


MODEL_SPECS = {
    "folder_missing": (lambda box: str(box.work / "no_model"), ["does not exist"]),
    "folder_without_weights": (lambda box: _model_without(box, "model.safetensors"), ["weight"]),
    "folder_without_config": (lambda box: _model_without(box, "config.json"), ["config.json"]),
    "folder_without_tokenizer": (lambda box: _model_without(box, "vocab.txt", "tokenizer.json",
                                                            "tokenizer_config.json", "special_tokens_map.json"),
                                 ["tokenizer"]),
    "model_path_is_a_file": (lambda box: str(box.corpus / "sentences.txt"), ["file"]),
    "config_not_json": (lambda box: _model_with(box, "config.json", "{not json"), ["config.json"]),
    "truncated_weights": (lambda box: _truncated(box), ["corrupt"]),
    "gpt2": (lambda box: _gpt2(box), ["gpt2", "bert"]),
    "vocab_larger_than_embeddings": (lambda box: _bigger_vocab(box), ["vocab"]),
}


def _copy_model(box: Sandbox, name: str) -> Path:
    import shutil

    target = box.work / name
    shutil.copytree(box.model, target)
    return target


def _model_without(box: Sandbox, *names: str) -> str:
    target = _copy_model(box, "model_without")
    for name in names:
        (target / name).unlink(missing_ok=True)
    return str(target)


def _model_with(box: Sandbox, name: str, text: str) -> str:
    target = _copy_model(box, "model_with")
    (target / name).write_text(text)
    return str(target)


def _truncated(box: Sandbox) -> str:
    target = _copy_model(box, "model_truncated")
    weights = target / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return str(target)


def _gpt2(box: Sandbox) -> str:
    from transformers import GPT2Config, GPT2Model

    target = _copy_model(box, "model_gpt2")
    (target / "model.safetensors").unlink()
    GPT2Model(GPT2Config(n_layer=1, n_head=2, n_embd=8, vocab_size=120)).save_pretrained(target)
    return str(target)


def _bigger_vocab(box: Sandbox) -> str:
    target = _copy_model(box, "model_vocab")
    config = json.loads((target / "config.json").read_text())
    config["vocab_size"] = 20
    (target / "config.json").write_text(json.dumps(config))
    return str(target)


@pytest.mark.parametrize("case", sorted(MODEL_SPECS))
def test_models_validate_equals_run(sandbox, case):
    make, needles = MODEL_SPECS[case]
    both_refuse(sandbox, sandbox.protocol(models=[make(sandbox)]), *needles)


# ----------------------------------------------------------------------------------- data contents

CONLLU_HEADER = "# sent_id = s1\n# text = The cat sat\n"
DATA_FILES = {
    "empty.txt": (b"", ["empty"]),
    "blank_lines.txt": (b"\n\n   \n\t\n", ["no input"]),
    "invisible.txt": ("\u200b\u200c\n\ufeff\u2060\n".encode(), ["no usable inputs"]),
    "latin1.txt": ("caf\xe9 au lait\n".encode("latin-1"), ["UTF-8"]),
    "binary.txt": (b"abc\x00\x01\x02def\n", ["NUL"]),
    "bad.jsonl": (b'{"text_a": "fine"}\n{not json\n', ["line 2"]),
    "no_text.jsonl": (b'{"text": "wrong key"}\n', ["text_a"]),
    "nested.jsonl": (b'{"text_a": ' + b"[" * 100000 + b"]" * 100000 + b"}\n", ["line 1"]),
    "columns.tsv": (b"foo\tbar\nx\ty\n", ["column"]),
    "malformed.conllu": (b"1\tThe\n", ["conllu"]),
    "cycle.conllu": ((CONLLU_HEADER + "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n"
                      "2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_\n3\tsat\tsit\tVERB\t_\t_\t2\tacl\t_\t_\n\n").encode(),
                     ["cycle"]),
    "no_root.conllu": ((CONLLU_HEADER + "1\tThe\tthe\tDET\t_\t_\t2\tdet\t_\t_\n"
                        "2\tcat\tcat\tNOUN\t_\t_\t1\tnsubj\t_\t_\n3\tsat\tsit\tVERB\t_\t_\t2\tacl\t_\t_\n\n").encode(),
                       ["root"]),
    "two_roots.conllu": ((CONLLU_HEADER + "1\tThe\tthe\tDET\t_\t_\t0\troot\t_\t_\n"
                          "2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_\n3\tsat\tsit\tVERB\t_\t_\t0\troot\t_\t_\n\n").encode(),
                         ["root"]),
    "head_out_of_range.conllu": ((CONLLU_HEADER + "1\tThe\tthe\tDET\t_\t_\t9\tdet\t_\t_\n"
                                  "2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_\n3\tsat\tsit\tVERB\t_\t_\t0\troot\t_\t_\n\n"
                                  ).encode(), ["head"]),
    "all_too_long.txt": (("word " * 300 + "\n").encode() * 3, ["could be scored"]),
    "one_megabyte_line.txt": ((("w" * 9 + " ") * 100_000 + "\n").encode(), ["could be scored"]),
}


@pytest.mark.parametrize("name", sorted(DATA_FILES))
def test_bad_data_files_in_run(sandbox, name):
    content, needles = DATA_FILES[name]
    path = sandbox.write(f"data/{name}", content)
    protocol = sandbox.protocol(**dataset(path=str(path)))
    refused(sandbox, ["run", str(protocol), "--out", str(sandbox.work / "out"), "--quiet"], *needles)


@pytest.mark.parametrize("name", ["empty.txt", "latin1.txt", "all_too_long.txt", "cycle.conllu"])
def test_bad_data_files_in_score(sandbox, name):
    content, needles = DATA_FILES[name]
    path = sandbox.write(f"data/{name}", content)
    refused(sandbox, ["score", "--model", str(sandbox.model), "--data", str(path),
                      "--out", str(sandbox.work / "out"), "--quiet"], *needles)


# ----------------------------------------------------------------------------------- output folders

def run_args(box: Sandbox, out: str, *more: str) -> list[str]:
    return ["run", str(box.protocol()), "--out", out, "--quiet", *more]


@pytest.mark.parametrize("target", ["/", "~", ".", "..", "~/..", "thesis", "corpus", "corpus/..", "."])
def test_dangerous_overwrite_targets_are_refused(sandbox, target):
    refused(sandbox, run_args(sandbox, target, "--overwrite"), "choose")


def test_protocol_output_key_cannot_pick_home(sandbox):
    protocol = sandbox.protocol(output="~/")  # (a bare ~ is YAML for null)
    line = refused(sandbox, ["validate", str(protocol)], "home")
    assert refused(sandbox, ["run", str(protocol), "--overwrite", "--quiet"], "home") == line


def test_symlink_output_is_refused(sandbox):
    (sandbox.work / "link").symlink_to(sandbox.work / "thesis")
    refused(sandbox, run_args(sandbox, "link", "--overwrite"), "symbolic link")


def test_existing_output_without_overwrite_is_refused(sandbox):
    (sandbox.work / "out").mkdir()
    (sandbox.work / "out" / "notes.txt").write_text("mine")  # not empty: an empty folder is a valid --out
    refused(sandbox, run_args(sandbox, "out"), "exists", "--overwrite")


def test_output_that_is_a_file(sandbox):
    sandbox.write("out", "a file")
    refused(sandbox, run_args(sandbox, "out", "--overwrite"), "is a file")


def test_user_file_inside_an_earlier_run_is_never_deleted(sandbox):
    result = runner.invoke(app, run_args(sandbox, "out"))
    assert result.exit_code == 0, result.output
    (sandbox.work / "out" / "my_notes.txt").write_text("notes")
    refused(sandbox, run_args(sandbox, "out", "--overwrite"), "did not write", "my_notes.txt")
    # without the foreign file the run's own folder is replaced
    (sandbox.work / "out" / "my_notes.txt").unlink()
    result = runner.invoke(app, run_args(sandbox, "out", "--overwrite"))
    assert result.exit_code == 0, result.output


def test_score_and_finetune_refuse_dangerous_targets(sandbox):
    data = str(sandbox.corpus / "sentences.txt")
    refused(sandbox, ["score", "--model", str(sandbox.model), "--data", data, "--out", "~", "--overwrite"], "home")
    refused(sandbox, ["score", "--model", str(sandbox.model), "--data", data, "--out", "/", "--overwrite"], "root")
    refused(sandbox, ["finetune", "--model", str(sandbox.model), "--task", "sst2", "--data-root",
                      str(sandbox.corpus), "--out", "~", "--overwrite"], "home")


def test_locked_output_is_refused_while_another_run_writes(sandbox):
    from headstats.folders import claim_output

    args = run_args(sandbox, "out")
    with claim_output(sandbox.work / "out"):
        before = sandbox.snapshot()
        result = runner.invoke(app, args)
        assert result.exit_code == 2 and "another headstats run" in result.output
        assert sandbox.snapshot() == before


def test_full_disk_while_writing_tables(sandbox, monkeypatch):
    import errno

    import pandas as pd

    def full(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    refused(sandbox, run_args(sandbox, "out"), "no space left")


def test_read_only_output_location(sandbox, monkeypatch):
    import errno
    import tempfile

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    refused(sandbox, run_args(sandbox, "out"), "read-only")


def test_data_root_that_is_not_a_folder(sandbox):
    refused(sandbox, run_args(sandbox, "out", "--data-root", str(sandbox.corpus / "sentences.txt")), "data-root")


# ----------------------------------------------------------------------------------- signals and kill -9

PAUSING_CLI = r"""
import signal, sys, time
phase, args = sys.argv[1], sys.argv[2:]
# as in a terminal's foreground job: a suite started in the background (`pytest &`) hands its children SIGINT
# ignored, which Python then keeps ignored (so does headstats: Ctrl-C in a terminal does not stop a background job)
signal.signal(signal.SIGINT, signal.default_int_handler)
import rich.console


def pause():
    # short sleeps: a signal the kernel hands to another thread (torch's) does not wake a long sleep in the
    # main thread, but the main thread runs its Python handler at the next wake-up, as real work would
    for _ in range(1200):
        time.sleep(0.1)

original_log = rich.console.Console.log

def log(self, *objects, **kwargs):
    text = " ".join(str(o) for o in objects)
    if text.startswith(phase):
        print("PHASE " + phase, flush=True)
        pause()
    return original_log(self, *objects, **kwargs)

rich.console.Console.log = log
if phase == "scoring":
    from transformers.models.bert import modeling_bert

    original_forward = modeling_bert.BertModel.forward

    def forward(self, *a, **k):
        print("PHASE scoring", flush=True)
        pause()
        return original_forward(self, *a, **k)

    modeling_bert.BertModel.forward = forward
from headstats.cli.main import app
sys.argv = ["headstats", *args]
app()
"""

#: The log line that opens each phase of a run (``scoring``: the first forward pass).
PHASES = ["reading data set", "loading model", "scoring", "testing every head", "writing"]


def start_paused(box: Sandbox, phase: str) -> subprocess.Popen:
    script = box.home.parent / "pausing_cli.py"
    script.write_text(PAUSING_CLI)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "MPLCONFIGDIR": str(box.home.parent / "mpl")}
    proc = subprocess.Popen([sys.executable, str(script), phase, "run", str(box.protocol()), "--out", "out"],
                            cwd=box.work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        line = proc.stdout.readline()
        if line.startswith("PHASE"):
            return proc
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"the run never reached {phase!r}: {proc.stderr.read()[-2000:]}")


def leftovers(box: Sandbox) -> list[str]:
    return sorted(p.name for p in box.work.iterdir() if p.name.startswith((".out", "out")))


@pytest.mark.parametrize("phase", PHASES)
def test_sigterm_in_each_phase_cleans_up_with_one_line(sandbox, phase):
    before = sandbox.snapshot()
    proc = start_paused(sandbox, phase)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    assert "Traceback" not in stderr and lines[-1].startswith("error: terminated"), stderr
    assert sum(line.startswith("error:") for line in lines) == 1, stderr
    assert leftovers(sandbox) == []
    after = {k: v for k, v in sandbox.snapshot().items() if k != "work/protocol.yaml"}  # the test wrote it
    assert after == before, _difference(before, after)


def test_ctrl_c_prints_one_line(sandbox):
    proc = start_paused(sandbox, "scoring")
    status = Path(f"/proc/{proc.pid}/status")
    masks = [line for line in status.read_text().splitlines() if line.startswith("Sig")] if status.exists() else []
    proc.send_signal(signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"SIGINT did not stop the run; the child's signal masks: {masks}")
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith("error: interrupted"), stderr
    assert leftovers(sandbox) == []


@pytest.mark.parametrize("phase", ["reading data set", "scoring", "writing"])
def test_kill_9_in_a_phase_then_the_next_run_sweeps_and_succeeds(sandbox, phase):
    proc = start_paused(sandbox, phase)
    proc.kill()
    proc.wait(timeout=60)
    assert not (sandbox.work / "out").exists()
    result = runner.invoke(app, ["run", str(sandbox.protocol()), "--out", "out", "--quiet"])
    assert result.exit_code == 0, result.output
    assert leftovers(sandbox) == ["out"]


def test_a_one_megabyte_line_is_left_out_before_parsing_and_counted(sandbox):
    path = sandbox.write("data/huge.txt", "The cat sat on the mat.\n" + ("word " * 200_000) + "\nA dog ran.\n")
    protocol = sandbox.protocol(**dataset(path=str(path)), scoring={"roles": ["local", "syntactic"]})
    result = runner.invoke(app, ["run", str(protocol), "--out", "out", "--quiet"])
    assert result.exit_code == 0, result.output
    counts = json.loads((sandbox.work / "out" / "manifest.json").read_text())["inputs"]
    (entry,) = counts.values()
    assert entry["n_records"] == 3 and entry["n_scored"] == 2 and entry["skipped"] == {"too_long": 1}
