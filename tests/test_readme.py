"""The README is the user's door: every link in it resolves inside the repository (a fresh clone)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a Markdown file's headings."""
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in
            re.findall(r"^#+\s+(.*)$", markdown, re.M)}


def test_every_readme_link_resolves_to_a_tracked_file_of_the_repository():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\(([^)\s]+)\)", text)
    assert links
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    files = set(tracked.stdout.split()) if tracked.returncode == 0 else None
    for link in links:
        assert not link.startswith(("http://", "https://")) or "github.com" not in link, link
        if link.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = link.partition("#")
        target = (REPO / (path or "README.md")).resolve()  # "#anchor": a heading of the README itself
        assert target.is_file() and REPO in target.parents, f"{link} is not a file of the repository"
        if files is not None:
            assert target.relative_to(REPO).as_posix() in files, f"{link} is not tracked by git"
        if anchor:
            assert anchor in _anchors(target.read_text(encoding="utf-8")), f"{link}: no such heading"
