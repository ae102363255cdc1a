"""Nothing executes from a cache or a shard folder (issue 37): every cache entry of a run with many analyses, and
a shard's states, replaced by a malicious pickle (one that creates a marker file when unpickled) or by random
bytes. Nothing runs, each is said in one line, the run recomputes and its tables equal a clean run's; merge
refuses the shard in one line."""

from __future__ import annotations

import hashlib
import json
import os
import pickle

import pytest

from test_bad_input import Sandbox, bad_model_dir, refused, runner, sandbox  # noqa: F401 - fixtures

from headstats.analyses import list_analyses
from headstats.cli.main import app
from headstats.engine.cache import FORMAT, MARKER
from headstats.engine.safe_state import pack

#: The analyses this run covers (their collectors' states go through the cache); the others, and the test
#: that puts their states through the cache (so a new analysis must be added to one of the two).
IN_THE_RUN = ["entropy", "surface", "clustering", "distance", "pictures", "probing", "importance",
              "gradients"]
ELSEWHERE = {"dependency": "tests/analyses/test_dependency.py (runs with a cache; a plain-text run here stops "
                            "before its tables, a separate fault)",
             "coreference": "tests/analyses/test_coreference.py (runs with a cache)",
             "finetune_comparison": "tests/engine/test_safe_state.py::test_every_state_type_round_trips (the "
                                    "similarity and [CLS]/[SEP] mass states)",
             "pande_roles": "every run (the role scores)",
             "offset_control": "tests/analyses/offset_control/test_collect.py and tests/test_testing.py "
                               "(check_analysis: chunked and merged states; its state is a ScoreState)"}
TABLES = ("scores.parquet", "tests.csv", "roles.csv")


class Payload:
    """Unpickling it creates the file ``path`` (harmless stand-in for the code a hostile entry would run)."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (open, (self.path, "w"))


def hostile(kind: str, key: str, marker) -> bytes:
    """A cache file that carries a valid marker, header, key and checksum around a pickle, or random bytes."""
    if kind == "random":
        return os.urandom(512)
    payload = pickle.dumps(Payload(marker))
    header = {"format": FORMAT, "key": key, "sha256": hashlib.sha256(payload).hexdigest(), "size": len(payload)}
    return MARKER + json.dumps(header).encode() + b"\n" + payload


def test_every_analysis_is_covered():
    assert set(list_analyses(selectable=False)) == set(IN_THE_RUN) | set(ELSEWHERE)


def test_every_cache_entry_hostile_runs_nothing_says_one_line_and_recomputes(sandbox):  # noqa: F811
    """Half the entries a pickle with a valid header, key and checksum, the other half random bytes."""
    cache = sandbox.work / "cache"
    marker = sandbox.work / "PWNED"
    protocol = sandbox.protocol(analyses=IN_THE_RUN, execution={"chunk_size": 4})

    def run(out: str, *how: str):
        result = runner.invoke(app, ["run", str(protocol), "--out", str(sandbox.work / out), *how])
        assert result.exit_code == 0, result.output
        return " ".join(result.output.split())  # the console folds long lines

    run("clean", "--cache-dir", str(cache), "--quiet")
    entries = sorted((cache / "states").rglob("*.hsc"))
    assert len(entries) > 10
    kinds = {path: ("pickle", "random")[i % 2] for i, path in enumerate(entries)}
    for path, kind in kinds.items():
        path.write_bytes(hostile(kind, path.name.removesuffix(".hsc"), marker))
    random_bytes = {path: path.read_bytes() for path, kind in kinds.items() if kind == "random"}
    said = run("again", "--cache-dir", str(cache))
    assert not marker.exists()
    assert "Traceback" not in said and said.count("cache damaged") == 1, said
    assert ("not a headstats state" in said or "not a headstats cache file" in said) and "more); recomputing" in said
    for name in TABLES:
        assert (sandbox.work / "again" / name).read_bytes() == (sandbox.work / "clean" / name).read_bytes(), name
    for path, kind in kinds.items():
        if kind == "pickle":  # a file with the marker is headstats': removed, or replaced by the recomputed state
            assert not path.exists() or (path.read_bytes().startswith(MARKER) and b"Payload" not in path.read_bytes())
        else:  # a file without it is not: never read, deleted or overwritten
            assert path.read_bytes() == random_bytes[path]


@pytest.mark.parametrize("kind", ["pickle", "random"])
def test_a_hostile_shard_state_is_refused_in_one_line(sandbox, kind):  # noqa: F811
    from headstats.study.merge import STATES_FILE, states_key

    marker = sandbox.work / "PWNED"
    protocol = sandbox.protocol(analyses=["entropy"], execution={"chunk_size": 4})
    shards = []
    for i in (1, 2):
        out = sandbox.work / f"shard{i}"
        result = runner.invoke(app, ["run", str(protocol), "--shard", f"{i}/2", "--out", str(out), "--no-cache",
                                     "--quiet"])
        assert result.exit_code == 0, result.output
        shards.append(out)
    info = json.loads((shards[1] / "manifest.json").read_text())["headstats_shard"]
    (shards[1] / STATES_FILE).write_bytes(hostile(kind, states_key(info), marker))
    line = refused(sandbox, ["merge", *map(str, shards), "--out", str(sandbox.work / "merged")], STATES_FILE,
                   "run that shard again")
    assert not marker.exists() and "\\n" not in line


def test_a_state_that_is_not_numbers_is_never_written():
    from headstats.engine.safe_state import UnsupportedState

    with pytest.raises(UnsupportedState, match="cannot be stored"):
        pack({"state": Payload("x")})
