"""How far the quickstart's numbers move from the golden tables under another float32 summation order.

Run (from the repository's root; a few minutes on 2 cores per batch size):

    python tests/golden/differences.py [--batch-sizes 32 8 1] [--keep DIR]

Each batch size reruns ``protocols/quickstart.yaml`` without the cache (batch size 32 is the protocol as
written; any other sums every score in another order, as another CPU, BLAS kernel or thread count does) and
prints, per column of ``scores.parquet`` and ``tests.csv``, against ``tests/golden/quickstart``:

- ``rel``: the largest relative difference ``|new - golden| / |golden|`` (over rows where golden is not 0);
- ``log``: for p-values the largest ``|ln p_new - ln p_golden|``, for Bayes factors ``|log10 BF_new - log10
  BF_golden|`` (the scales ``tests/golden_rule.py`` compares them on);
- ``share``: the largest change as a share of the column's tolerance in ``tests/golden_rule.py`` (``<= 1``
  passes), and whether the golden comparison passes as a whole.

The golden test (``tests/test_golden.py``) runs two of these conditions; this script is for the record (the
table in ``tests/golden/README.md``) and for checking the rule on another machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden" / "quickstart"
sys.path.insert(0, str(ROOT / "tests"))

from golden_rule import compare_roles, compare_scores, compare_tests, score_tolerance  # noqa: E402

LOG_E = ("p_unc", "p_corr")
LOG_10 = ("bf10_two_sided",)


def run_quickstart(batch_size: int, out: Path) -> Path:
    """The quickstart at ``batch_size``, recomputed (no cache), written to ``out``."""
    import headstats as hs

    here = os.getcwd()
    os.chdir(ROOT)
    try:
        protocol = hs.load_protocol(ROOT / "protocols" / "quickstart.yaml")
        protocol = protocol.model_copy(update={
            "execution": protocol.execution.model_copy(update={"cache": False}),
            "scoring": protocol.scoring.model_copy(update={"batch_size": batch_size})})
        return hs.run(protocol, out).out
    finally:
        os.chdir(here)


def column_differences(new: pd.DataFrame, old: pd.DataFrame) -> dict[str, tuple[float, float]]:
    """Per float column: (largest relative difference, largest difference on the column's log scale or NaN)."""
    out = {}
    for column in old.columns:
        if not pd.api.types.is_float_dtype(old[column]):
            continue
        a, b = new[column].to_numpy(float), old[column].to_numpy(float)
        both = np.isfinite(a) & np.isfinite(b) & (b != 0)
        rel = float(np.max(np.abs(a[both] - b[both]) / np.abs(b[both]), initial=0.0))
        log = float("nan")
        if column in LOG_E + LOG_10:
            with np.errstate(divide="ignore"):
                la, lb = (np.log(a), np.log(b)) if column in LOG_E else (np.log10(a), np.log10(b))
            fin = np.isfinite(la) & np.isfinite(lb)
            log = float(np.max(np.abs(la[fin] - lb[fin]), initial=0.0))
        out[column] = (rel, log)
    return out


def report(batch_size: int, run: Path) -> list[str]:
    scores_new, scores_old = pd.read_parquet(run / "scores.parquet"), pd.read_parquet(GOLDEN / "scores.parquet")
    tests_new, tests_old = pd.read_csv(run / "tests.csv"), pd.read_csv(GOLDEN / "tests.csv")
    shares: dict[str, float] = {}
    verdict = "passes"
    try:
        shares["score"] = compare_scores(scores_new, scores_old)
        shares.update(compare_tests(tests_new, tests_old))
        let_through = compare_roles(pd.read_csv(run / "roles.csv"), pd.read_csv(GOLDEN / "roles.csv"), tests_old)
        if let_through:
            verdict = f"passes, letting through borderline cells {let_through}"
    except AssertionError as exc:
        verdict = f"FAILS: {str(exc).splitlines()[0]}"
    a, b = scores_new["score"].to_numpy(float), scores_old["score"].to_numpy(float)
    ok = np.isfinite(a) & np.isfinite(b) & (b != 0)
    rows = {"score (scores.parquet)": (float(np.max(np.abs(a[ok] - b[ok]) / np.abs(b[ok]), initial=0.0)),
                                       float("nan"))}
    rows.update(column_differences(tests_new, tests_old))
    same_bytes = {name: (run / name).read_bytes() == (GOLDEN / name).read_bytes()
                  for name in ("scores.parquet", "tests.csv", "roles.csv")}
    lines = [f"batch size {batch_size}: golden comparison {verdict}; byte-identical to golden: "
             + ", ".join(f"{k} {'yes' if v else 'no'}" for k, v in same_bytes.items()),
             f"  {'column':<24} {'largest rel':>12} {'largest log':>12} {'share of tol':>12}"]
    for column, (rel, log) in rows.items():
        key = "score" if column.startswith("score (") else column
        share = shares.get(key, float("nan"))
        lines.append(f"  {column:<24} {rel:>12.3g} {log:>12.3g} {share:>12.3g}")
    lines.append(f"  (largest score change relative to DELTA * |score|: "
                 f"{float(np.max(np.abs(a[ok] - b[ok]) / score_tolerance(b[ok]), initial=0.0)):.3g})")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 8, 1])
    parser.add_argument("--keep", type=Path, default=None, help="keep the runs in this folder")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        where = args.keep or Path(tmp)
        for batch_size in args.batch_sizes:
            started = time.perf_counter()
            run = run_quickstart(batch_size, where / f"batch{batch_size}")
            print("\n".join(report(batch_size, run)))
            print(f"  (run in {time.perf_counter() - started:.0f} s; load {os.getloadavg()[0]:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
