"""protocols/paper_faithful.yaml reproduces the published notebooks (METHODS 1.6): per-input scores and role
decisions of a whole run, against the notebooks' formulas written out straight here (loops, as they are)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from conftest import SHARED_DATA
from headstats.config.protocol import load_protocol

REPO = Path(__file__).resolve().parents[2]
PROTOCOL = REPO / "protocols" / "paper_faithful.yaml"
GLUE = SHARED_DATA / "glue"


def test_every_variant_is_on():
    p = load_protocol(PROTOCOL)
    sc, st = p.scoring, p.statistics
    assert (sc.block_entropy, sc.first_sep_segment, sc.local_edges, sc.alignment) == (
        True, "B", "published", "first_occurrence")
    assert (st.test, st.tau, st.alpha, st.correction) == ("t_ddof0", 3.0, 0.05, "none")
    assert all(d.glue is not None and d.glue.split == "test" and d.glue.sample == "first" for d in p.datasets)
    assert p.data_root is None  # the GLUE folder is given at run time


# ------------------------------------------------------------------------------- the notebooks, written out
def nb_local(A, n):
    total = 0.0
    for i in range(n):
        lo, hi = max(0, i - 2), min(i + 3, n)
        divisor = min(i + 3, n + 1) - lo  # 5 and 4 for the last two queries
        total += (A[i, lo:hi].sum() / divisor) / (A[i, :n].sum() / n)
    return total / n


def nb_block(A, n, first_sep):
    total = 0.0
    for i in range(n):
        own = list(range(1, first_sep)) if i < first_sep else list(range(first_sep + 1, n - 1))
        ratio = (A[i, own].sum() / len(own)) / (A[i, :n].sum() / n)
        entropy = -sum(p * math.log(p) for p in A[i, :n] if p > 0)
        total += ratio * entropy
    return total / n


def nb_pieces(words, text, tokenizer, start):
    """Words looked up by first occurrence among the pieces of the cleaned copy, from position ``start``."""
    pieces = tokenizer.tokenize(" ".join(re.findall(r"[\w']+|[.,!?;]", text)))
    out = []
    for w in words:
        target = tokenizer.tokenize(w.text)
        hit = [k for k in range(len(pieces) - len(target) + 1) if pieces[k:k + len(target)] == target]
        out.append([start + p for p in range(hit[0], hit[0] + len(target))] if hit and target else [])
    return out


def nb_syntactic(A, n, arcs):
    vals = []
    for dep, head in arcs:
        num = np.mean([np.mean(A[a, head]) for a in dep])
        den = np.mean([np.mean(A[a, :n]) for a in dep])
        vals.append(num / den)
    return np.mean(vals) if vals else np.nan


@pytest.mark.skipif(not GLUE.is_dir(), reason="the shared GLUE data is not here")
def test_a_run_of_the_protocol_reproduces_the_notebooks(tmp_path, tiny_model, tiny_model_dir):
    from headstats.config.protocol import ModelSpec
    from headstats.engine.forward import forward_attentions, pad_batch
    from headstats.model.encoding import encode_record
    from headstats.study.run import load_data, run_study

    protocol = load_protocol(PROTOCOL)
    protocol.models = [ModelSpec(name="tiny", path=str(tiny_model_dir))]
    for d in protocol.datasets:
        d.glue.n = 12
    protocol.datasets = [d for d in protocol.datasets if d.name in ("mrpc", "sst2")]
    protocol.data_root = str(GLUE)
    protocol.scoring.roles = ["local", "block", "syntactic"]
    protocol.statistics.tau = 1.0  # decisions of both kinds on a random tiny model
    result = run_study(protocol, tmp_path / "run")
    tok = tiny_model.tokenizer
    checked = 0
    for array in result.scores:
        data = load_data(next(d for d in protocol.datasets if d.name == array.dataset), protocol)
        encoded = [(rec, encode_record(rec, tok, index=k)) for k, rec in enumerate(data.records)]
        encoded = [(rec, item) for rec, item in encoded if item is not None]  # too long for 128 pieces: skipped
        assert list(array.sentence_ids) == [rec.sentence_id for rec, _ in encoded]
        notebook = np.full((*array.values.shape[:3], 3), np.nan)
        for k, (rec, item) in enumerate(encoded):
            attn = forward_attentions(tiny_model, pad_batch([item], tok.pad_token_id))[0].detach().double().numpy()
            n = item.length
            seps = list(np.flatnonzero(item.sep))
            arcs = []
            for side, (words, text) in enumerate(((rec.words_a, rec.text_a), (rec.words_b, rec.text_b))):
                if words:
                    start = 1 if side == 0 else seps[0] + 1
                    stop = n - 2
                    pieces = [[p for p in ps if p <= stop] for ps in nb_pieces(words, text, tok, start)]
                    arcs += [(pieces[i], pieces[w.head]) for i, w in enumerate(words)
                             if w.head >= 0 and w.deprel in ("nsubj", "dobj", "amod", "advmod")
                             and pieces[i] and pieces[w.head]]
            for layer in range(array.n_layers):
                for head in range(array.n_heads):
                    A = attn[layer, head]
                    notebook[k, layer, head, 0] = nb_local(A, n)
                    if rec.is_pair:
                        notebook[k, layer, head, 1] = nb_block(A, n, seps[0])
                    notebook[k, layer, head, 2] = nb_syntactic(A, n, arcs)
        got = array.values.astype(float)
        assert set(array.measures) == ({"local", "block", "syntactic"} if array.dataset == "mrpc"
                                       else {"local", "syntactic"})
        for r, role in enumerate(array.measures):
            col = ("local", "block", "syntactic").index(role)
            np.testing.assert_allclose(got[..., r], notebook[..., col], rtol=1e-4, err_msg=f"{array.dataset} {role}")
            # decisions: the notebooks' t (np.std, ddof 0) at tau, p from Student's t, nothing corrected
            tests = result.tests[(result.tests["dataset"] == array.dataset) & (result.tests["role"] == role)]
            for row in tests.itertuples():
                s = notebook[:, row.layer, row.head, col]
                s = s[np.isfinite(s)]
                t = (s.mean() - 1.0) / (np.std(s) / math.sqrt(s.size))
                assert row.statistic == pytest.approx(t, rel=1e-3, abs=2e-3)  # float32 scores
                assert bool(row.reject) == bool(sps.t.sf(t, s.size - 1) < 0.05)
                checked += 1
    assert checked > 0 and result.tests["reject"].any() and not result.tests["reject"].all()
