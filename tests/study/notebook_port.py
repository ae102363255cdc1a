"""The published notebooks of Pande et al. (AAAI 2021; github.com/iitmnlp/heads-hypothesis), ported as the loops
they are: a test oracle for ``protocols/paper_faithful.yaml`` (METHODS 1.6).

Written from the notebooks' text, not from headstats' code: nothing here imports headstats. The syntactic part
follows ``syntactic_score.ipynb``: ``cleanup``, ``dataset.parse_dep_relations``, ``dataset.get_data_for_pred``
(with ``get_distance``) and ``Heads1.get_score`` (direction ``l2r``); the others follow ``local_score``,
``block_score`` and ``delimiter_score``. Attention maps are given as the notebooks read them: (layers, heads,
width, width) with width at least the sequence length they cut to (the notebooks' pickles are 128 wide).
"""

from __future__ import annotations

import math
import re

import numpy as np

#: The relations of the paper's syntactic sieve, as spaCy labels them.
RELATIONS = ("nsubj", "dobj", "amod", "advmod")
MAX_SEQ_LEN = 128


def cleanup(sent: str) -> str:
    s = re.findall(r"[\w']+|[.,!?;]", sent)
    return " ".join(s)


def get_distance(w1: str, w2: str, sent: str) -> float:
    sent1 = sent.split()
    if w1 in sent1 and w2 in sent1:
        return sent1.index(w1) - sent1.index(w2)
    return float("inf")


def data_for_pred(text_a, text_b, nlp, tokenize, relations=RELATIONS, max_seq_len=MAX_SEQ_LEN):
    """``parse_dep_relations`` and ``get_data_for_pred`` for one input.

    Returns the kept arcs, ``[(w1_idx, w2_idx, reln)]`` (dependent pieces, head pieces, relation), and the
    length the score cuts the attention to, ``sent_len = min(128, len(final_sent))`` of ``Heads1.get_score``.
    """
    sent = ["idx", cleanup(text_a), cleanup(text_b) if text_b is not None else None]
    if text_b is not None:
        final_sent = ["CLS"] + tokenize(sent[1]) + ["SEP"] + tokenize(sent[2]) + ["SEP"]
    else:
        final_sent = ["CLS"] + tokenize(sent[1]) + ["SEP"]
    tuples = []
    for sub_sent_num, text in (("a", sent[1]), ("b", sent[2])):
        if text is None:
            continue
        for token in nlp(text):
            if token.dep_ in relations:
                tuples.append((sub_sent_num, token.text, token.head.text, token.dep_))
    data = []
    for sub_sent_num, w1, w2, reln in tuples:
        w1_tok, w2_tok = tokenize(w1), tokenize(w2)
        if sub_sent_num == "a":
            try:
                w1_idx = [final_sent.index(x) for x in w1_tok]
                w2_idx = [final_sent.index(x) for x in w2_tok]
            except ValueError:
                continue
            side = sent[1]
        else:
            senta_tok, sentb_tok = tokenize(sent[1]), tokenize(sent[2])
            try:
                w1_idx = [sentb_tok.index(x) for x in w1_tok]
                w2_idx = [sentb_tok.index(x) for x in w2_tok]
            except ValueError:
                continue
            w1_idx = [x + len(senta_tok) + 2 for x in w1_idx]
            w2_idx = [x + len(senta_tok) + 2 for x in w2_idx]
            side = sent[2]
        if (get_distance(w1, w2, side) != float("inf") and all(x < max_seq_len for x in w1_idx)
                and all(x < max_seq_len for x in w2_idx)):
            data.append((w1_idx, w2_idx, reln))
    if text_b is not None:
        length = len(["CLS "] + tokenize(sent[1]) + [" SEP "] + tokenize(sent[2]) + [" SEP"])
    else:
        length = len(["CLS "] + tokenize(sent[1]) + [" SEP "])
    return data, min(128, length)


def syntactic_score(attn: np.ndarray, arcs, sent_len: int) -> np.ndarray:
    """``Heads1.get_score`` (``l2r``) of one input: (layers, heads); NaN when no arc took part."""
    num_layers, num_heads = attn.shape[:2]
    score = np.zeros((num_layers, num_heads))
    if not arcs:
        return np.full((num_layers, num_heads), np.nan)
    for w1_idx, w2_idx, _ in arcs:
        for l in range(num_layers):  # noqa: E741
            for h in range(num_heads):
                attn_per_head = attn[l, h, :sent_len, :sent_len]
                token_score = 0
                w1_total = 0
                for id1 in w1_idx:
                    partial_tok_score = 0
                    w1_total += np.sum(attn_per_head[id1, :])
                    for id2 in w2_idx:
                        partial_tok_score += attn_per_head[id1, id2]
                    token_score += partial_tok_score / len(w2_idx)
                w1_w2_attention = token_score / len(w1_idx)
                w1_total /= len(w1_idx)
                w1_total /= sent_len
                score[l, h] += w1_w2_attention / w1_total
    return score / len(arcs)


def padded_attention(model, tokenizer, text_a, text_b=None, width=MAX_SEQ_LEN):
    """The model's attention on the raw input padded to ``width`` pieces, as the notebooks' pickles hold it:
    ``(attn (layers, heads, width, width), input ids)``."""
    import torch

    enc = tokenizer(text_a, text_b) if text_b is not None else tokenizer(text_a)
    ids = list(enc["input_ids"])
    n = len(ids)
    pad = width - n
    types = list(enc.get("token_type_ids") or [0] * n)
    with torch.inference_mode():
        outputs = model(input_ids=torch.tensor([ids + [tokenizer.pad_token_id] * pad]),
                        attention_mask=torch.tensor([[1] * n + [0] * pad]),
                        token_type_ids=torch.tensor([types + [0] * pad]), output_attentions=True)
    return torch.stack(outputs.attentions, 1)[0].double().numpy(), ids


def local_score(A: np.ndarray, n: int) -> float:
    """``local_score.ipynb`` (w = 2) of one head: the last two queries divide by 5 and 4."""
    total = 0.0
    for i in range(n):
        lo, hi = max(0, i - 2), min(i + 3, n)
        divisor = min(i + 3, n + 1) - lo
        total += (A[i, lo:hi].sum() / divisor) / (A[i, :n].sum() / n)
    return total / n


def block_score(A: np.ndarray, n: int, first_sep: int) -> float:
    """``block_score.ipynb`` of one head: the first [SEP] queries segment B; each ratio times the row's entropy."""
    total = 0.0
    for i in range(n):
        own = list(range(1, first_sep)) if i < first_sep else list(range(first_sep + 1, n - 1))
        ratio = (A[i, own].sum() / len(own)) / (A[i, :n].sum() / n)
        entropy = -sum(p * math.log(p) for p in A[i, :n] if p > 0)
        total += ratio * entropy
    return total / n


def delimiter_score(A: np.ndarray, n: int, first_sep: int, pair: bool) -> float:
    """``delimiter_score.ipynb`` of one head: [CLS], the first [SEP] and (pairs) the last [SEP]."""
    total = 0.0
    for token in range(n):
        uniform = np.sum(A[token, :n]) / n
        if pair:
            token_score = (A[token, 0] + A[token, first_sep] + A[token, n - 1]) / 3
        else:
            token_score = (A[token, 0] + A[token, first_sep]) / 2
        total += token_score / uniform
    return total / n
