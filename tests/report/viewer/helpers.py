"""What the viewer's tests share: Chromium's DOM of a page, the page's data, and the sieve grid as the page's
script computes it (viewer.js, sieveScore), from the page's own data."""

from __future__ import annotations

import base64
import functools
import json
import re
import shutil
import subprocess
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np

SENTENCE = "The cat sat on the mat."
SIEVE_ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep"]


@lru_cache(maxsize=1)
@functools.lru_cache(maxsize=1)
def default_model():
    """The default model, loaded once per test process."""
    import headstats as hs

    return hs.load_model("default")


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


def dump_dom(page: Path, fragment: str = "") -> str:
    """The page's DOM after its script ran, in headless Chromium."""
    result = subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
                             "--dump-dom", page.resolve().as_uri() + fragment],
                            capture_output=True, text=True, timeout=120)
    assert "data-ready=\"1\"" in result.stdout, result.stderr[-2000:]
    return result.stdout


def page_data(html: str) -> dict:
    found = re.search(r"<script type='application/json' class='hs-data'>(.*?)</script>", html, re.S)
    return json.loads(found.group(1))


def js_grid(item: dict, data: dict, sieve: str, scale: str = "bias") -> np.ndarray:
    """The sieve grid as the page's script computes it (viewer.js, sieveScore), from the page's own data."""
    L, H, n = data["n_layers"], data["n_heads"], len(item["tokens"])
    kinds = item["sieve_kinds"]
    sums = np.frombuffer(zlib.decompress(base64.b64decode(item["sieve_data"])), "<f4").reshape(L, H, len(kinds), n).astype(float)
    special = np.array(item["special"])
    queries = np.flatnonzero(np.ones(n, bool) if data["count_special_queries"] else ~special)
    keys = {"delimiter": special, "delimiter_cls": np.array(item["cls"]), "delimiter_sep": np.array(item["sep"])}
    if sieve in keys:
        k = np.flatnonzero(keys[sieve])
        return sums[:, :, kinds.index("col"), k].sum(-1) / len(k) / len(queries)
    if sieve == "local":
        w = data["window"]
        size = np.minimum(n - 1, queries + w) - np.maximum(0, queries - w) + 1
        return (sums[:, :, kinds.index("loc"), queries] / size).mean(-1)
    seg = np.array(item["segment"])
    size = np.array([(~special & (seg == s)).sum() for s in seg[queries]])
    return (sums[:, :, kinds.index("blk"), queries] / size).mean(-1)
