"""The LaTeX tables a paper ``\\input``s (:mod:`headstats.report.latex`): numbers as a paper prints them, every
special character escaped (a row beginning ``[CLS]`` after ``\\\\``), and a layout that compiles in a minimal
``article`` with booktabs and fits ``\\textwidth``, checked with pdflatex where it is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from headstats.report.latex import LatexTable, header_text, latex_escape, latex_p_value, latex_table, write_latex

PREAMBLE = "\\documentclass{article}\n\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\begin{document}\n"


def compile_tables(files: list[Path], folder: Path) -> str:
    """Compile each ``.tex`` in a minimal article with pdflatex -halt-on-error; fail on an error or an overfull
    box; return the text of the PDFs (pdftotext)."""
    if shutil.which("pdflatex") is None or shutil.which("pdftotext") is None:
        pytest.skip("needs pdflatex and pdftotext (apt-get install texlive-latex-base texlive-latex-recommended "
                    "poppler-utils); not installed here")
    assert files, "no .tex file to compile"
    texts = []
    for k, tex in enumerate(files):
        doc = folder / f"doc{k}.tex"
        doc.write_text(f"{PREAMBLE}\\input{{{tex.resolve().as_posix()}}}\n\\end{{document}}\n", encoding="utf-8")
        run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name], cwd=folder,
                             capture_output=True, text=True, timeout=120)
        log = (folder / f"doc{k}.log").read_text(encoding="utf-8", errors="replace")
        assert run.returncode == 0, f"{tex.name} does not compile:\n{run.stdout[-2000:]}"
        assert "Overfull" not in log, f"{tex.name} is wider than the text:\n" + "\n".join(
            line for line in log.splitlines() if "Overfull" in line)
        texts.append(subprocess.run(["pdftotext", "-layout", f"doc{k}.pdf", "-"], cwd=folder, capture_output=True,
                                    text=True, check=True).stdout)
    return "\n".join(texts)


def test_p_values_and_numbers_as_a_paper_prints_them():
    assert [latex_p_value(p) for p in (0.31, 0.0471, 0.0047, 2.345e-5, 1e-310, np.nan, 1.0)] == [
        "0.31", "0.047", "0.0047", "$2.3\\times10^{-5}$", "$<10^{-300}$", "", "1"]
    frame = pd.DataFrame({"n": [1200, 35], "accuracy": [0.41234, -0.5], "big": [123.456, 7.0], "tiny": [2e-5, 0.5]})
    tex = latex_table(frame, "x", "tab:x")
    assert "1,200 & 0.412 & 123.5 & $2.0\\times10^{-5}$ \\\\" in tex
    assert "35 & $-$0.500 & 7.0 & 0.500 \\\\" in tex
    assert "e-0" not in tex and "e+0" not in tex


def test_every_special_character_is_escaped_and_a_leading_bracket_is_braced():
    assert latex_escape("a_b & {x} ~ 5% #1 $ \\ ^") == (
        "a\\_b \\& \\{x\\} \\textasciitilde{} 5\\% \\#1 \\$ \\textbackslash{} \\textasciicircum{}")
    assert latex_escape("[CLS] <= τ") == "{[}CLS{]} \\textless{}= $\\tau$"
    frame = pd.DataFrame({"claim": ["x", "[CLS] heads sit early", "[SEP] heads"], "p": [0.1, 0.2, 0.3]})
    tex = latex_table(frame, "Heads with `min_count` 5% & more", "tab:x")
    assert "\\caption{Heads with \\texttt{min\\_count} 5\\% \\& more}" in tex
    rows = [line for line in tex.splitlines() if line.endswith("\\\\")]
    assert rows[2].startswith("{[}CLS{]} heads") and rows[3].startswith("{[}SEP{]}")
    assert header_text("p_corr_vs_right_branching") == "$p$ corr. vs. right branching"


#: Columns of a Table 1 of Clark et al. (dependency_table.csv): 19 of them, as wide as a report table gets.
WIDE = ["relation", "n", "head", "direction", "accuracy", "accuracy_ci_low", "accuracy_ci_high", "offset",
        "offset_accuracy", "tested_head", "tested_offset", "n_tested", "tested_accuracy", "tested_offset_accuracy",
        "head_only", "offset_only", "p_unc", "p_corr", "reject"]


def _wide_frame(rows: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    data = {}
    for name in WIDE:
        if name in ("relation", "head", "tested_head", "direction"):
            data[name] = [f"{name}_{k}:x" for k in range(rows)]
        elif name in ("n", "n_tested", "head_only", "offset_only", "offset", "tested_offset"):
            data[name] = rng.integers(-3, 5000, rows)
        elif name == "reject":
            data[name] = rng.random(rows) < 0.5
        else:
            data[name] = rng.random(rows) / 10 ** rng.integers(0, 8, rows)
    return pd.DataFrame(data)


def test_tables_compile_in_a_minimal_article_and_fit_the_text_width(tmp_path):
    claims = pd.DataFrame({"claim": ["[CLS] heads sit in the early layers", "[SEP] heads sit in the middle and late "
                                     "layers", "42-88 % of heads are both local & syntactic_x (by task) {~^$#\\}"],
                           "source": ["Pande et al. 2021"] * 3,
                           **{f"data_set_{k}": ["supported (p = 1.4e-17)", "cannot tell (design floor above alpha)",
                                                "contradicted (p = 0.0047)"] for k in range(6)}})
    # the probes table of a reduced clark2019 run: 8 narrow columns, small p-values in powers of ten; laid out at 7
    # pt with the 10 pt font's widths it was 348.8 pt wide against the 345 estimated to fit
    probes = pd.DataFrame({"dataset": ["ewt_dev", "gum_dev"] * 2, "probe": ["attention + words", "distance + words"] * 2,
                           "n_words": [170, 313] * 2, "uas": [0.553, 0.457] * 2,
                           "interval": ["[0.478, 0.626]", "[0.403, 0.512]"] * 2, "paper": [0.77, 0.58] * 2,
                           "p_corr_vs_right_branching": [3.7e-10, 6.5e-7] * 2,
                           "p_corr_vs_distance_and_words": [8.7e-5, 3.5e-11] * 2})
    files = {"claims.tex": (claims, LatexTable("claims.tex", "Claims [CLS] <= τ, `claims.csv` 5%.")),
             "probes.tex": (probes, LatexTable("probes.tex", "Probes.", columns={
                 "dataset": "Data set", "probe": "Probe", "n_words": "Words", "uas": "UAS", "interval": "95\\% CI",
                 "paper": "Paper", "p_corr_vs_right_branching": "$p$ vs. RB",
                 "p_corr_vs_distance_and_words": "$p$ vs. D\\&W"})),
             "wide.tex": (_wide_frame(), LatexTable("wide.tex", "All 19 columns of a Table 1.")),
             "one.tex": (pd.DataFrame({"x": [1.0]}), LatexTable("one.tex", "One cell."))}
    for name, (frame, spec) in files.items():
        (tmp_path / name).write_text(write_latex(spec, frame, "Protocol p_1. "), encoding="utf-8")
    text = compile_tables([tmp_path / name for name in files], tmp_path)
    assert "[CLS] heads sit" in text and "[SEP] heads sit" in text
    assert "Claims [CLS]" in text
