"""Output folders never cost a user a file: safety checks, lock, staging, sweep and race-free publish."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from headstats.errors import OutputError
from headstats.folders import (
    STAGING_MARKER,
    check_output_folder,
    claim_output,
    is_headstats_output,
)
from headstats.study.storage import write_manifest


@contextmanager
def staged_output(out, *, overwrite=False, inputs=()):
    """The staging folder of :func:`claim_output`, published when the block ends without error (as
    ``run_study`` and ``merge_shards`` use it)."""
    with claim_output(out, overwrite=overwrite, inputs=inputs) as claim:
        yield claim.staging
        claim.publish()


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A temporary HOME and working folder, so that the dangerous cases cannot touch real ones."""
    home = tmp_path / "home"
    work = home / "work"
    work.mkdir(parents=True)
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_rsa").write_text("secret")
    (work / "thesis.tex").write_text("chapter 1")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    return home


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def headstats_folder(path: Path, files=("tests.csv",)) -> Path:
    path.mkdir(parents=True)
    for name in files:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text("old")
    write_manifest(path, {"headstats_run": "x"})
    return path


# ----------------------------------------------------------------------------------- refused targets

@pytest.mark.parametrize("target", ["/", "~", ".", "..", "~/..", "../.."])
def test_root_home_cwd_and_their_ancestors_are_refused_even_with_overwrite(home, target):
    before = snapshot(home)
    with pytest.raises(OutputError, match="refusing to write to .*choose a new folder for --out"):
        with staged_output(target, overwrite=True) as stage:
            (stage / "x").write_text("x")
    assert snapshot(home) == before
    assert sorted(p.name for p in home.iterdir()) == [".ssh", "work"]


def test_folder_holding_an_input_is_refused(home):
    data = home / "work" / "corpus"
    data.mkdir()
    (data / "sentences.txt").write_text("A sentence.")
    headstats_folder(home / "work" / "runs" / "r")
    model = home / "work" / "runs" / "r" / "model"
    with pytest.raises(OutputError, match="it holds an input of this run"):
        check_output_folder(data, overwrite=True, inputs=[data / "sentences.txt"])
    with pytest.raises(OutputError, match="it holds an input"):
        check_output_folder(home / "work" / "runs", overwrite=True, inputs=[home / "work" / "runs" / "r"])
    # an input that does not exist (yet) protects nothing; an output beside the data is fine
    assert check_output_folder(home / "work" / "out", inputs=[data / "sentences.txt", model, None])


def test_unrelated_existing_folder_is_never_replaced(home):
    thesis = home / "work" / "thesis"
    thesis.mkdir()
    (thesis / "chapter1.tex").write_text("words")
    with pytest.raises(OutputError, match="exists; choose another --out or pass --overwrite"):
        check_output_folder(thesis)
    with pytest.raises(OutputError, match="was not written by headstats"):
        with staged_output(thesis, overwrite=True) as stage:
            (stage / "tests.csv").write_text("new")
    assert snapshot(thesis) == {"chapter1.tex": b"words"}
    assert sorted(p.name for p in thesis.parent.iterdir()) == ["thesis", "thesis.tex"]


def test_headstats_folder_with_a_users_file_in_it_is_not_replaced(home):
    run = headstats_folder(home / "work" / "run")
    (run / "my_notes.txt").write_text("notes")
    with pytest.raises(OutputError, match=r"holds files headstats did not write \(my_notes.txt\)"):
        check_output_folder(run, overwrite=True)
    assert (run / "my_notes.txt").read_text() == "notes"


def test_fake_manifest_without_the_marker_is_not_enough(home):
    fake = home / "work" / "fake"
    fake.mkdir()
    (fake / "manifest.json").write_text(json.dumps({"anything": 1}))
    (fake / "data.bin").write_text("precious")
    with pytest.raises(OutputError, match="not written by headstats"):
        check_output_folder(fake, overwrite=True)


def test_symlink_target_is_refused_and_its_target_untouched(home):
    real = headstats_folder(home / "work" / "real")
    link = home / "work" / "link"
    link.symlink_to(real)
    before = snapshot(real)
    with pytest.raises(OutputError, match="is a symbolic link"):
        with staged_output(link, overwrite=True):
            pass
    assert snapshot(real) == before and link.is_symlink()


def test_file_target_and_nul_are_refused(home):
    target = home / "work" / "file"
    target.write_text("x")
    with pytest.raises(OutputError, match="is a file"):
        check_output_folder(target, overwrite=True)
    with pytest.raises(OutputError, match="NUL"):
        check_output_folder("a\x00b")
    assert target.read_text() == "x"


# ----------------------------------------------------------------------------------- staging and publish

def test_success_publishes_and_leaves_nothing_else(home):
    out = home / "work" / "nested" / "run"
    with staged_output(out) as stage:
        assert stage.parent == out.parent and stage.name.startswith(".run.partial-")
        assert (out.parent / ".run.headstats-lock").exists()
        assert not out.exists()
        (stage / "a.txt").write_text("done")
    assert snapshot(out) == {"a.txt": b"done"}
    assert sorted(p.name for p in out.parent.iterdir()) == ["run"]


@pytest.mark.parametrize("exc", [RuntimeError("boom"), KeyboardInterrupt(), SystemExit(143)])
def test_failure_leaves_nothing_not_even_created_parents(home, exc):
    out = home / "work" / "a" / "b" / "run"
    with pytest.raises(type(exc)):
        with staged_output(out) as stage:
            (stage / "half.csv").write_text("half written")
            raise exc
    assert sorted(p.name for p in (home / "work").iterdir()) == ["thesis.tex"]


def test_overwrite_replaces_a_headstats_folder_and_a_failure_keeps_it(home):
    out = headstats_folder(home / "work" / "run", files=("tests.csv", "figures/a.png"))
    before = snapshot(out)
    with pytest.raises(ValueError):
        with staged_output(out, overwrite=True) as stage:
            (stage / "new.csv").write_text("new")
            raise ValueError("fail")
    assert snapshot(out) == before
    with staged_output(out, overwrite=True) as stage:
        (stage / "new.csv").write_text("new")
    assert snapshot(out) == {"new.csv": b"new"}
    assert sorted(p.name for p in out.parent.iterdir()) == ["run", "thesis.tex"]


def test_a_folder_that_appears_while_writing_is_not_deleted(home):
    out = home / "work" / "run"
    with pytest.raises(OutputError, match="appeared while this run wrote; nothing was replaced"):
        with staged_output(out) as stage:
            (stage / "tests.csv").write_text("mine")
            out.mkdir()
            (out / "theirs.txt").write_text("theirs")
    assert snapshot(out) == {"theirs.txt": b"theirs"}
    assert sorted(p.name for p in out.parent.iterdir()) == ["run", "thesis.tex"]


def test_with_overwrite_a_foreign_folder_that_appears_while_writing_is_not_deleted(home):
    out = headstats_folder(home / "work" / "run")
    with pytest.raises(OutputError, match="holds files headstats did not write"):
        with staged_output(out, overwrite=True) as stage:
            (stage / "tests.csv").write_text("mine")
            (out / "added_meanwhile.txt").write_text("theirs")
    assert (out / "added_meanwhile.txt").read_text() == "theirs"


def test_published_folder_is_itself_replaceable(home):
    out = home / "work" / "run"
    with staged_output(out) as stage:
        (stage / "tests.csv").write_text("1")
        write_manifest(stage, {"headstats_run": "x"})
    assert is_headstats_output(out)
    with staged_output(out, overwrite=True) as stage:
        (stage / "tests.csv").write_text("2")
    assert (out / "tests.csv").read_text() == "2"


# ----------------------------------------------------------------------------------- lock and sweep

def test_second_run_into_the_same_folder_is_refused(home):
    out = home / "work" / "run"
    with claim_output(out) as first:
        with pytest.raises(OutputError, match=rf"another headstats run \(pid {os.getpid()}\) is writing to"):
            with claim_output(out):
                pass
        (first.staging / "tests.csv").write_text("first")
        first.publish()
    assert snapshot(out) == {"tests.csv": b"first"}


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_lock_and_staging_of_a_killed_run_are_swept(home):
    out = home / "work" / "run"
    owner = json.dumps({"pid": dead_pid(), "host": os.uname().nodename})
    (out.parent / ".run.headstats-lock").write_text(owner)
    stale = out.parent / ".run.partial-abc123"
    stale.mkdir()
    (stale / STAGING_MARKER).write_text(owner)
    (stale / "scores.parquet").write_text("half")
    not_ours = out.parent / ".run.partial-userfolder"  # same pattern, no marker: never removed
    not_ours.mkdir()
    (not_ours / "keep.txt").write_text("keep")
    with pytest.warns(UserWarning, match=r"cleared '.run.partial-abc123' beside .*stopped before it finished") as said:
        with staged_output(out) as stage:
            (stage / "tests.csv").write_text("new")
    assert len(said) == 1 and "\n" not in str(said[0].message)
    assert sorted(p.name for p in out.parent.iterdir()) == [".run.partial-userfolder", "run", "thesis.tex"]
    assert (not_ours / "keep.txt").read_text() == "keep"


def test_the_sweep_ends_the_helpers_a_killed_run_left_and_no_other_process(home):
    """A killed run's figure workers are listed in its staging marker (pid and start time): the next run into
    the same folder ends those still running, and never a process that only has a listed pid."""
    from headstats.folders import HELPERS_KEY, process_start

    out = home / "work" / "run"
    sleepers = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"]) for _ in range(2)]
    try:
        left, stranger = sleepers
        helpers = [{"pid": left.pid, "start": process_start(left.pid)},
                   {"pid": stranger.pid, "start": process_start(stranger.pid) + 1}]  # its pid, not its start
        stale = out.parent / ".run.partial-abc123"
        stale.mkdir()
        (stale / STAGING_MARKER).write_text(json.dumps({"pid": dead_pid(), "host": os.uname().nodename,
                                                        HELPERS_KEY: helpers}))
        with staged_output(out) as stage:
            (stage / "tests.csv").write_text("new")
        assert left.wait(timeout=30) == -9  # SIGKILL (bounded wait: a kill is delivered at once)
        assert stranger.poll() is None and not stale.exists()
    finally:
        for proc in sleepers:
            proc.kill()
            proc.wait()


def test_kill_9_during_a_run_then_the_next_run_succeeds(home, tmp_path):
    out = home / "work" / "run"
    script = (
        "import os, sys, time\n"
        "from headstats.folders import claim_output\n"
        f"with claim_output({str(out)!r}) as claim:\n"
        "    (claim.staging / 'half.csv').write_text('x')\n"
        "    print('ready', flush=True)\n"
        "    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    with pytest.raises(OutputError, match="another headstats run"):
        check = claim_output(out)
        check.__enter__()
    proc.kill()
    proc.wait()
    assert not out.exists()
    with staged_output(out) as stage:
        (stage / "tests.csv").write_text("new")
    assert sorted(p.name for p in out.parent.iterdir()) == ["run", "thesis.tex"]


@pytest.mark.parametrize("code, words", [(30, r"\(read-only file system\); choose another --out"),
                                         (28, r"\(no space left on device\); free some space")])
def test_unwritable_or_full_disk_fails_before_any_work(home, monkeypatch, code, words):
    import errno
    import tempfile

    assert (errno.EROFS, errno.ENOSPC) == (30, 28)

    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(tempfile, "mkdtemp", refuse)
    with pytest.raises(OutputError, match=words):
        with claim_output(home / "work" / "new" / "run"):
            pytest.fail("the block must not run")
    assert sorted(p.name for p in (home / "work").iterdir()) == ["thesis.tex"]


def test_full_disk_while_writing_leaves_nothing(home):
    import errno

    out = home / "work" / "run"
    with pytest.raises(OSError, match="No space left"):
        with staged_output(out) as stage:
            (stage / "a.csv").write_text("a")
            raise OSError(errno.ENOSPC, "No space left on device")
    assert sorted(p.name for p in (home / "work").iterdir()) == ["thesis.tex"]


# ----------------------------------------------------------------------------------- folders from elsewhere

@pytest.mark.parametrize("rel, why", [
    ("../thesis.tex", r"leads out of the folder \(\.\.\)"),
    ("figures/../../thesis.tex", r"leads out of the folder \(\.\.\)"),
    ("/etc/passwd", "is an absolute path"),
    ("", "is not a relative path"),
    (7, "is not a relative path"),
    ("a\x00b", "is not a relative path"),
    ("figures/a.png", r"passes through a symbolic link \(figures\)"),
    ("link.csv", r"passes through a symbolic link \(link.csv\)"),
])
def test_member_path_refuses_paths_out_of_the_folder_and_through_links(home, rel, why):
    from headstats.folders import member_path

    run = headstats_folder(home / "work" / "run")
    (home / "elsewhere").mkdir()
    (run / "figures").symlink_to(home / "elsewhere")
    (run / "link.csv").symlink_to(home / "work" / "thesis.tex")
    with pytest.raises(OutputError, match=f"refusing its manifest: it names .*, which {why}") as caught:
        member_path(run, rel, named_by="its manifest")
    assert "\n" not in str(caught.value)
    assert member_path(run, "tables/x.csv", named_by="m") == run / "tables" / "x.csv"


def test_the_manifest_records_size_and_sha256_of_every_file(home):
    import hashlib

    run = headstats_folder(home / "work" / "run", files=("tests.csv", "figures/a.png"))
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["output_sha256"] == {
        "figures/a.png": {"size": 3, "sha256": hashlib.sha256(b"old").hexdigest()},
        "tests.csv": {"size": 3, "sha256": hashlib.sha256(b"old").hexdigest()},
    }


def test_overwrite_never_replaces_a_file_the_user_edited(home):
    run = headstats_folder(home / "work" / "run", files=("tests.csv", "report.md"))
    (run / "report.md").write_text("my edits to the report")
    before = snapshot(home)
    with pytest.raises(OutputError, match=r"not as headstats wrote them \(report.md: edited since"):
        with staged_output(run, overwrite=True) as stage:
            (stage / "tests.csv").write_text("new")
    assert snapshot(home) == before


def test_overwrite_never_deletes_a_file_a_forged_manifest_lists(home):
    run = home / "work" / "run"
    run.mkdir()
    (run / "thesis.tex").write_text("chapter 1")
    headstats_folder(home / "work" / "other", files=("tests.csv",))
    manifest = json.loads((home / "work" / "other" / "manifest.json").read_text())
    manifest["output_files"].append("thesis.tex")  # a copied manifest that lists the user's file
    manifest["output_sha256"]["thesis.tex"] = manifest["output_sha256"]["tests.csv"]
    (run / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(home)
    with pytest.raises(OutputError, match=r"--overwrite refused: .*thesis.tex"):
        with staged_output(run, overwrite=True) as stage:
            (stage / "tests.csv").write_text("new")
    assert snapshot(home) == before
    del manifest["output_sha256"]  # an older manifest without checksums proves nothing either
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(OutputError, match="records no checksums"):
        check_output_folder(run, overwrite=True)
    manifest["output_sha256"] = {"../thesis.tex": {"size": 9, "sha256": "0" * 64}}
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(OutputError, match=r"it names '\.\./thesis.tex', which leads out of the folder"):
        check_output_folder(run, overwrite=True)
    assert (run / "thesis.tex").read_text() == "chapter 1"


def test_overwrite_never_follows_a_link_inside_the_folder(home):
    run = headstats_folder(home / "work" / "run", files=("tests.csv",))
    (run / "tests.csv").unlink()
    (run / "tests.csv").symlink_to(home / "work" / "thesis.tex")  # listed, and a link to the user's file
    before = snapshot(home)
    with pytest.raises(OutputError, match=r"it names 'tests.csv', which passes through a symbolic link"):
        check_output_folder(run, overwrite=True)
    assert snapshot(home) == before and not is_headstats_output(run)


@pytest.mark.parametrize("overwrite", [False, True])
def test_an_empty_folder_is_a_valid_out_and_gets_the_users_umask(home, overwrite):
    # `mkdir out && headstats run p.yaml --out out`: the empty folder is filled, with or without --overwrite,
    # and the run folder's mode is the one the user's umask gives a new folder (not mkdtemp's 0700)
    out = home / "work" / "out"
    out.mkdir()
    old = os.umask(0o022)
    try:
        assert check_output_folder(out, overwrite=overwrite) == out.resolve()
        with staged_output(out, overwrite=overwrite) as stage:
            (stage / "tests.csv").write_text("new")
    finally:
        os.umask(old)
    assert (out / "tests.csv").read_text() == "new"
    assert out.stat().st_mode & 0o777 == 0o755
