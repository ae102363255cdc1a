"""Run folders from elsewhere (issue 21): a run folder is data, never instructions.

Every case tampers with one file of a finished run (its manifest, figures/, tables, Parquet, protocol) or
with the cache, runs the real command (``headstats report``, ``run --overwrite``, ``run`` on a cache) in a
temporary HOME and working folder (the ``sandbox`` of the bad-input suite) and asserts one line ``error: ...``
naming the problem, exit 2, and a byte-for-byte unchanged sandbox (every file, folder and link below HOME);
the cases that must go on (a stale figure a forged manifest names, a swapped cache chunk) show that the file
is left alone or the chunk recomputed, and say so in one line.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from test_bad_input import Sandbox, bad_model_dir, refused, runner, sandbox  # noqa: F401 - fixtures

from headstats.cli.main import app


@pytest.fixture(scope="module")
def finished(tmp_path_factory, bad_model_dir) -> Path:  # noqa: F811 - the fixture imported above
    """One finished run of the tiny model (written once; each case tampers with a copy)."""
    box = Sandbox(tmp_path_factory.mktemp("finished"), bad_model_dir)
    protocol = box.protocol(analyses=[])
    out = box.work / "run"
    result = runner.invoke(app, ["run", str(protocol), "--out", str(out), "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture
def run(sandbox, finished) -> Path:  # noqa: F811
    """A copy of the finished run in the sandbox's working folder."""
    target = sandbox.work / "run"
    shutil.copytree(finished, target, symlinks=True)
    return target


def manifest(run: Path) -> dict:
    return json.loads((run / "manifest.json").read_text())


def forge(run: Path, **changes) -> None:
    data = {**manifest(run), **changes}
    (run / "manifest.json").write_text(json.dumps(data, indent=2))


def digest_of(data: bytes) -> dict:
    return {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def report(run: Path) -> list[str]:
    return ["report", str(run), "--no-svg"]


def overwrite(box: Sandbox, run: Path) -> list[str]:
    return ["run", str(box.protocol(analyses=[])), "--out", str(run), "--overwrite", "--no-cache", "--quiet"]


# ----------------------------------------------------------------------------------- paths in the manifest

@pytest.mark.parametrize("listed", ["figures/../../thesis/chapter1.tex", "../thesis/chapter1.tex", "ABSOLUTE"])
def test_a_manifest_path_out_of_the_run_folder_is_refused(sandbox, run, listed):
    thesis = sandbox.work / "thesis" / "chapter1.tex"
    listed = str(thesis) if listed == "ABSOLUTE" else listed
    data = manifest(run)
    forge(run, output_files=data["output_files"] + [listed],
          output_sha256={**data["output_sha256"], listed: digest_of(thesis.read_bytes())})
    line = refused(sandbox, report(run), "manifest", listed, "headstats reads, writes and deletes only inside")
    assert "\\n" not in line
    refused(sandbox, overwrite(sandbox, run), listed)


def test_a_manifest_path_out_of_the_folder_without_a_checksum_is_refused_by_overwrite(sandbox, run):
    """Listed in ``output_files`` only (no checksum to check): ``--overwrite`` refuses the manifest all the same."""
    listed = "figures/../../thesis/chapter1.tex"
    forge(run, output_files=manifest(run)["output_files"] + [listed])
    refused(sandbox, overwrite(sandbox, run), "manifest", listed, "(--overwrite)", "leads out of the folder")
    refused(sandbox, report(run), listed)


def test_a_symlinked_figures_folder_is_refused(sandbox, run):
    elsewhere = sandbox.work / "pictures"
    elsewhere.mkdir()
    (elsewhere / "holiday.svg").write_text("<svg/>")
    (elsewhere / "pvalue_histogram.png").write_bytes(b"my png")
    shutil.rmtree(run / "figures")
    (run / "figures").symlink_to(elsewhere)
    refused(sandbox, report(run), "symbolic link", "figures")
    refused(sandbox, overwrite(sandbox, run), "figures")


def test_a_listed_file_that_is_a_symlink_is_refused(sandbox, run):
    (run / "report.md").unlink()
    (run / "report.md").symlink_to(sandbox.work / "thesis" / "chapter1.tex")
    refused(sandbox, report(run), "symbolic link", "report.md")


@pytest.mark.parametrize("text", ["not json", "[1, 2]", '{"written_by": "someone else"}'])
def test_a_manifest_that_is_not_headstats_is_refused(sandbox, run, text):
    (run / "manifest.json").write_text(text)
    refused(sandbox, report(run), str(run))
    refused(sandbox, overwrite(sandbox, run), "--overwrite refused")


# ----------------------------------------------------------------------------------- forged and edited outputs

def test_a_forged_output_list_never_deletes_the_users_file(sandbox, run):
    (run / "figures" / "mine.png").write_bytes(b"the user's figure")
    data = manifest(run)
    # a copied manifest that lists the user's figure as a stale one of its own, with a made-up checksum
    forge(run, output_files=data["output_files"] + ["figures/mine.png"],
          output_sha256={**data["output_sha256"], "figures/mine.png": digest_of(b"something else")})
    result = runner.invoke(app, report(run))
    assert result.exit_code == 0, result.output
    assert (run / "figures" / "mine.png").read_bytes() == b"the user's figure"
    [warning] = [line for line in result.output.splitlines() if "mine.png" in line]
    assert warning.startswith("warning:") and "left alone" in warning
    refused(sandbox, overwrite(sandbox, run), "--overwrite refused", "mine.png")


def test_an_edited_report_is_never_replaced(sandbox, run):
    (run / "report.md").write_text("my own notes on the run")
    refused(sandbox, report(run), "report.md", "changed since headstats wrote")
    refused(sandbox, overwrite(sandbox, run), "report.md")


def test_an_untouched_run_is_rebuilt_and_its_manifest_proves_the_new_files(sandbox, run):
    result = runner.invoke(app, report(run))
    assert result.exit_code == 0, result.output
    data = manifest(run)
    for rel, recorded in data["output_sha256"].items():
        assert digest_of((run / rel).read_bytes()) == recorded, rel
    result = runner.invoke(app, overwrite(sandbox, run))  # and the rebuilt run may be overwritten
    assert result.exit_code == 0, result.output


# ----------------------------------------------------------------------------------- damaged tables

def _csv(run: Path, name: str, change) -> None:
    frame = pd.read_csv(run / name)
    change(frame).to_csv(run / name, index=False)


TABLE_DAMAGE = {
    "column_missing": (lambda run: _csv(run, "tests.csv", lambda f: f.drop(columns=["reject"])),
                       ["tests.csv", "lacks column 'reject'"]),
    "column_renamed": (lambda run: _csv(run, "tests.csv", lambda f: f.rename(columns={"p_corr": "p_adj"})),
                       ["tests.csv", "'p_corr'"]),
    "nan_where_numbers": (lambda run: _csv(run, "tests.csv", lambda f: f.assign(mean=float("nan"))),
                          ["tests.csv", "'mean'", "nan", "finite"]),
    "text_where_numbers": (lambda run: _csv(run, "heads_per_layer.csv",
                                            lambda f: f.assign(**{f.columns[-1]: "many"})),
                           ["heads_per_layer.csv", "str values"]),
    "empty_csv": (lambda run: (run / "tests.csv").write_text(""), ["tests.csv", "not a readable csv"]),
    "binary_csv": (lambda run: (run / "roles.csv").write_bytes(bytes(range(256)) * 8), ["roles.csv"]),
    "corrupt_parquet": (lambda run: (run / "tests.parquet").write_bytes(
        (run / "tests.parquet").read_bytes()[:-100]), ["tests.parquet", "not a readable parquet"]),
    "missing_table": (lambda run: (run / "colocation.csv").unlink(), ["colocation.csv"]),
}


@pytest.mark.parametrize("case", sorted(TABLE_DAMAGE))
def test_damaged_tables_are_refused_in_one_line_and_nothing_changes(sandbox, run, case):
    damage, needles = TABLE_DAMAGE[case]
    damage(run)
    refused(sandbox, report(run), *needles)


def test_an_edited_table_of_the_runs_shape_is_read_and_said_to_be_edited(sandbox, run):
    _csv(run, "heads_per_layer.csv", lambda f: f.iloc[::-1])  # reordered rows: same columns, same kinds
    result = runner.invoke(app, report(run))
    assert result.exit_code == 0, result.output
    [warning] = [line for line in result.output.splitlines() if "heads_per_layer.csv" in line]
    assert warning.startswith("warning:") and "changed since the run wrote it" in warning


def _unlist(run: Path, name: str, *, schema: bool = False) -> None:
    data = manifest(run)
    changes = {"output_files": [f for f in data["output_files"] if f != name],
               "output_sha256": {k: v for k, v in data["output_sha256"].items() if k != name}}
    if schema:
        changes["table_schemas"] = {k: v for k, v in data["table_schemas"].items() if k != name}
    forge(run, **changes)


def _link_to_the_key(sandbox, run: Path, name: str) -> None:
    (run / name).unlink()
    (run / name).symlink_to(sandbox.home / ".ssh" / "id_rsa")


LEFT_OUT = {  # a file the report reads whatever the manifest lists, left out of the list (and then damaged)
    "roles_csv_a_link": (lambda box, run: (_link_to_the_key(box, run, "roles.csv"), _unlist(run, "roles.csv")),
                         ["roles.csv", "symbolic link"]),
    "protocol_a_link": (lambda box, run: (_link_to_the_key(box, run, "protocol.resolved.yaml"),
                                          _unlist(run, "protocol.resolved.yaml")),
                        ["protocol.resolved.yaml", "symbolic link"]),
    "roles_csv_unlisted_and_damaged": (
        lambda box, run: (_csv(run, "roles.csv", lambda f: f.drop(columns=["model"])),
                          _unlist(run, "roles.csv", schema=True)),
        ["does not list roles.csv", "not this run's manifest"]),
    "tests_unlisted": (lambda box, run: (_unlist(run, "tests.csv"), _unlist(run, "tests.parquet")),
                       ["does not list tests.csv or tests.parquet"]),
}


@pytest.mark.parametrize("case", sorted(LEFT_OUT))
def test_a_file_the_report_reads_is_checked_whatever_the_manifest_lists(sandbox, run, case):
    damage, needles = LEFT_OUT[case]
    damage(sandbox, run)
    refused(sandbox, report(run), *needles)


def test_tables_of_a_manifest_without_schemas_that_break_the_report_give_one_line(sandbox, run):
    """A manifest stripped of its lists and schemas (as an older headstats wrote it) leaves only "readable" to check:
    a column the report needs that is missing is then the one line of a damaged run, not a traceback."""
    _csv(run, "roles.csv", lambda f: f.drop(columns=["model"]))
    data = manifest(run)
    for key in ("written_by", "output_files", "output_sha256", "table_schemas"):
        data.pop(key)
    (run / "manifest.json").write_text(json.dumps(data))
    refused(sandbox, report(run), "not those of a headstats run", "KeyError", "'model'")


# ----------------------------------------------------------------------------------- hostile protocol

HOSTILE_PROTOCOLS = {
    "python_tag": ("!!python/object/apply:os.system ['touch pwned']\n", ["protocol.resolved.yaml"]),
    "not_a_mapping": ("- a\n- b\n", ["protocol.resolved.yaml"]),
    "bad_values": ("name: x\nmodels: 7\ndatasets: {a: b}\nscoring: {batch_size: -1}\n", ["protocol.resolved.yaml"]),
    "binary": (bytes(range(256)), ["protocol.resolved.yaml"]),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_PROTOCOLS))
def test_a_hostile_resolved_protocol_is_refused(sandbox, run, case):
    text, needles = HOSTILE_PROTOCOLS[case]
    path = run / "protocol.resolved.yaml"
    path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    line = refused(sandbox, report(run), *needles)
    assert "\\n" not in line
    assert not (sandbox.work / "pwned").exists()


def test_a_resolved_protocol_naming_other_places_writes_only_into_the_run(sandbox, run):
    import yaml

    path = run / "protocol.resolved.yaml"
    protocol = yaml.safe_load(path.read_text())
    protocol["output"] = str(sandbox.work / "thesis")
    protocol["cache_dir"] = str(sandbox.home)
    path.write_text(yaml.safe_dump(protocol))
    before = {k: v for k, v in sandbox.snapshot().items() if not k.startswith("work/run")}
    result = runner.invoke(app, report(run))
    assert result.exit_code == 0, result.output
    assert {k: v for k, v in sandbox.snapshot().items() if not k.startswith("work/run")} == before


# ----------------------------------------------------------------------------------- the cache

def chunk_files(cache: Path) -> list[Path]:
    """The cache's chunk states (not its memos of data sets and models), in the order they were written."""
    from headstats.engine.cache import decode

    found = [p for p in (cache / "states").rglob("*.hsc")
             if "state" in (decode(p.read_bytes(), key=p.stem.removesuffix(".hsc")) or {})]
    return sorted(found, key=lambda p: p.stat().st_mtime_ns)


def test_swapped_and_foreign_cache_chunks_are_reported_recomputed_and_never_used(sandbox):
    cache, other = sandbox.work / "cache", sandbox.work / "other-cache"
    protocol = sandbox.protocol(analyses=[], execution={"chunk_size": 4})
    result = runner.invoke(app, ["run", str(protocol), "--out", str(sandbox.work / "a"), "--cache-dir", str(cache),
                                 "--quiet"])
    assert result.exit_code == 0, result.output
    windows = sandbox.protocol("window.yaml", analyses=[], execution={"chunk_size": 4},
                               scoring={"window": 3})
    result = runner.invoke(app, ["run", str(windows), "--out", str(sandbox.work / "w"), "--cache-dir", str(other),
                                 "--quiet"])
    assert result.exit_code == 0, result.output
    mine, theirs = chunk_files(cache), chunk_files(other)
    mine[0].write_bytes(theirs[0].read_bytes())  # a chunk of a window: 3 cache over one of a window: 2 cache
    mine[1].write_bytes(mine[2].read_bytes())  # another position's chunk
    before = sandbox.snapshot()
    result = runner.invoke(app, ["run", str(protocol), "--out", str(sandbox.work / "b"), "--cache-dir", str(cache)])
    assert result.exit_code == 0, result.output
    after = sandbox.snapshot()
    changed = {k for k in set(before) | set(after) if before.get(k) != after.get(k)}
    assert {k.split("/")[1] for k in changed} == {"cache", "b"}, sorted(changed)  # the cache and the new run only
    assert {k for k in changed if k.startswith("work/cache/")} == {f"work/{p.relative_to(sandbox.work)}"
                                                                   for p in mine[:2]}  # the two chunks, rewritten
    said = " ".join(result.output.split())  # the console folds long lines
    assert said.count("cache damaged") == 1, said and "holds the state of another key" in said and "(and 1 more)" in said
    result = runner.invoke(app, ["run", str(protocol), "--out", str(sandbox.work / "c"), "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
    for name in ("tests.csv", "scores.parquet", "roles.csv"):
        assert (sandbox.work / "b" / name).read_bytes() == (sandbox.work / "c" / name).read_bytes(), name


def test_a_run_served_from_the_cache_equals_a_no_cache_run_whatever_batch_size_filled_it(sandbox):
    """Batch sizes 8 and 1 give scores that differ in the last float32 digits (a padded batch sums in another order),
    so a cache filled at 8 must not serve a run at 1: the batching is in every chunk's key."""
    cache = sandbox.work / "cache"
    at = {b: sandbox.protocol(f"batch{b}.yaml", analyses=[], execution={"chunk_size": 4}, scoring={"batch_size": b})
          for b in (1, 8)}

    said: dict[str, str] = {}

    def run_at(batch: int, out: str, *how: str) -> Path:
        result = runner.invoke(app, ["run", str(at[batch]), "--out", str(sandbox.work / out), *how])
        assert result.exit_code == 0, result.output
        said[out] = " ".join(result.output.split())  # the console folds long lines
        return sandbox.work / out

    tables = ("scores.parquet", "tests.csv", "tests.parquet", "roles.csv")
    plain = run_at(1, "plain", "--no-cache", "--quiet")
    filled = run_at(8, "filled", "--cache-dir", str(cache), "--quiet")
    assert (filled / "scores.parquet").read_bytes() != (plain / "scores.parquet").read_bytes()  # batching shows
    first = run_at(1, "first", "--cache-dir", str(cache))  # on the cache filled at batch size 8
    served = run_at(1, "served", "--cache-dir", str(cache))  # now every chunk is in the cache
    again = run_at(8, "again", "--cache-dir", str(cache))
    assert "0 of 12 inputs found in the cache" in said["first"]
    assert "12 of 12 inputs found in the cache; no forward pass" in said["served"], said["served"]
    assert "12 of 12 inputs found in the cache; no forward pass" in said["again"], said["again"]
    for name in tables:
        assert (first / name).read_bytes() == (plain / name).read_bytes(), name
        assert (served / name).read_bytes() == (plain / name).read_bytes(), name
        assert (again / name).read_bytes() == (filled / name).read_bytes(), name


# ----------------------------------------------------------------------------------- init never writes onto its inputs

@pytest.mark.parametrize("case", ["the_data_file", "a_link_to_it", "into_the_model_folder"])
def test_init_never_writes_onto_one_of_its_inputs_force_or_not(sandbox, case):
    data = sandbox.corpus / "sentences.txt"
    model = sandbox.work / "model"
    shutil.copytree(sandbox.model, model)
    out = {"the_data_file": data, "a_link_to_it": sandbox.work / "link.txt",
           "into_the_model_folder": model / "protocol.yaml"}[case]
    if case == "a_link_to_it":
        out.symlink_to(data)
    for force in ([], ["--force"]):
        refused(sandbox, ["init", "--model", str(model), "--data", str(data), "--out", str(out), *force],
                "refusing to write", "an input of this command")


def test_a_pickle_torch_refuses_gives_the_error_line_alone(sandbox, tmp_path):
    """In a real process (libraries' warnings go to the real stderr): the one line, nothing around it."""
    import os
    import subprocess
    import sys

    import torch

    model = sandbox.work / "pickled"
    model.mkdir()
    for path in sandbox.model.iterdir():
        if not path.name.startswith("model."):
            shutil.copy(path, model / path.name)
    torch.save({"embeddings.word_embeddings.weight": _Code(str(sandbox.work / "ran"))}, model / "pytorch_model.bin")
    protocol = sandbox.protocol(models=[str(model)], analyses=[])
    before = sandbox.snapshot()
    env = {**os.environ, "PYTHONWARNINGS": "default", "HEADSTATS_VERBOSE": ""}
    done = subprocess.run([sys.executable, "-c", "from headstats.cli.main import main; main()", "run", str(protocol), "--out",
                           str(sandbox.work / "out"), "--no-cache", "--quiet"],
                          capture_output=True, text=True, env=env, cwd=sandbox.work, timeout=300)
    assert done.returncode == 2 and done.stdout == "", done.stdout + done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith("error: weights file pytorch_model.bin") and "refuses to load safely" in line
    assert sandbox.snapshot() == before


class _Code:
    """A pickle that would create a file if it were ever loaded unsafely."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))
