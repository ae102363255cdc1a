"""headstats cache info|prune (merge is tested in tests/study/test_merge.py)."""

from __future__ import annotations

from cli.cli_helpers import runner
from headstats.cli.main import app


def test_cache_info_and_prune_commands(tmp_path):
    import hashlib

    from headstats.engine.cache import StateCache

    cache = StateCache(tmp_path / "c")
    for i in range(3):
        cache.put(hashlib.sha256(bytes([i])).hexdigest(), list(range(100)))
    (tmp_path / "c" / "mine.txt").write_text("keep")
    result = runner.invoke(app, ["cache", "info", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0 and "chunks: 3 " in result.output, result.output
    result = runner.invoke(app, ["cache", "prune", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 2 and "--older-than DAYS, --max-size MIB or --all" in result.output
    result = runner.invoke(app, ["cache", "prune", "--all", "--cache-dir", str(tmp_path / "c")])
    assert result.exit_code == 0 and result.output.startswith("removed 3 file(s)"), result.output
    assert (tmp_path / "c" / "mine.txt").read_text() == "keep" and cache.info().entries == 0
