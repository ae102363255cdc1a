r"""Numeric kernels the Clark et al. analyses share: row entropies in float64 over the real rows, and a thread map.

Logarithms are the costly part of the entropies and of the JS divergence (:mod:`headstats.analyses.clustering.collect`):
numpy's vectorised ``log`` is several times faster than torch's on CPU, in float32 and in float64, and a fused
``einsum`` of ``p`` and ``log p`` per row reads each block once. The work is cut into blocks of rows that stay
in cache and shared among ``torch.get_num_threads()`` threads (numpy releases the GIL), and the blocks' results
are put together in block order, so that they do not depend on the number of threads.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, Sequence, TypeVar

import numpy as np
from headstats.lazy import torch

T = TypeVar("T")
R = TypeVar("R")

#: Float64 values of one block of :func:`row_entropies` (2 MiB).
ENTROPY_BLOCK = 1 << 18


def thread_map(function: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """``[function(x) for x in items]``, over ``torch.get_num_threads()`` threads, results in the order of ``items``."""
    items = list(items)
    workers = min(len(items), max(1, torch.get_num_threads()))
    if workers <= 1:
        return [function(x) for x in items]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(function, items))


@contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Run the block with torch's intra-op thread count set to ``threads`` (at most the current count), and put
    the count back after it.

    For many small operations in a row, such as a probe's training steps on a few sentences: each one is too
    small to share among threads, and the threads that wait between them spin on their CPUs. Training the
    probes in one thread took a tenth of the CPU time of two threads on 2 cores (about 1 s against 9 s on 99
    EWT sentences at load 8; ``benchmarks/bench_clark_run.py``), with the same predictions.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(max(1, min(int(threads), before)))
    try:
        yield
    finally:
        torch.set_num_threads(before)


def row_entropies(attention: torch.Tensor, lengths: Sequence[int], smoothing: float) -> np.ndarray:
    r"""Entropy in nats of every real row of every input, rows smoothed over the input's n real keys:

        p_i(j) = s A[i, j] + (1 - s) / n,        H_i = - sum_{j < n} p_i(j) ln p_i(j),

    in float64 (``s`` = ``smoothing``; Clark et al. 2019, METHODS 2.1).

    Parameters
    ----------
    attention : Tensor (B, L, H, T, T)
        Padded attention; only the first n rows and keys of an input of n real positions are read.
    lengths : sequence of int
        n of every input.
    smoothing : float

    Returns
    -------
    ndarray (B, L, H, T) float64
        ``H_i`` for real rows, 0 for padded ones.
    """
    B, L, H, T, _ = attention.shape
    out = np.zeros((B, L, H, T))
    maps = attention.detach().cpu()
    jobs = []
    for b, n in enumerate(int(x) for x in lengths):
        if n == 0:
            continue
        per_block = max(1, ENTROPY_BLOCK // (n * n))  # heads of one input per block
        flat = range(L * H)
        jobs += [(b, n, flat[k:k + per_block]) for k in range(0, L * H, per_block)]

    def block(job) -> np.ndarray:
        b, n, heads = job
        rows = maps[b].reshape(L * H, T, T)[heads.start:heads.stop, :n, :n].numpy().astype(np.float64)
        rows *= smoothing
        rows += (1.0 - smoothing) / n
        return -np.einsum("kij,kij->ki", rows, np.log(rows))

    for (b, n, heads), values in zip(jobs, thread_map(block, jobs)):
        out[b].reshape(L * H, T)[heads.start:heads.stop, :n] = values
    return out
