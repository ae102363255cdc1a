"""Where and in which precision a model runs: ``auto`` resolved, and devices or dtypes this machine cannot use
refused before anything is loaded."""

from __future__ import annotations

from headstats.errors import ModelError

#: Precisions a model can run in (``dtype`` in a protocol). Attention is returned to collectors as float32.
DTYPES = ("float32", "bfloat16", "float16")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` if a GPU is there, else ``mps`` (Apple), else ``cpu``; other values unchanged."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


def check_device(device: str) -> None:
    """Refuse a device that torch does not know or that this machine does not have (no model is loaded).

    Raises
    ------
    ModelError
        Naming the devices that can be used here.
    """
    if device == "cpu":
        return  # always there; no torch import needed to say so
    import torch

    device = resolve_device(device)
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError):
        raise ModelError(f"unknown device {device!r}; use 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'") from None
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": bool(getattr(torch.backends, "mps", None)) and torch.backends.mps.is_available()}
    if not available.get(dev.type, False):
        have = ", ".join(k for k, ok in available.items() if ok)
        raise ModelError(f"device {device!r} is not available on this machine; use one of: {have}")
    if dev.type == "cuda" and dev.index is not None and dev.index >= torch.cuda.device_count():
        raise ModelError(f"device {device!r} does not exist; this machine has {torch.cuda.device_count()} GPU(s)")


def check_dtype(dtype: str, device: str = "cpu") -> None:
    """Refuse a precision headstats does not run in, or float16 on a CPU (slow and unsupported by some kernels).

    Raises
    ------
    ModelError
    """
    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}; use one of: {', '.join(DTYPES)}")
    if dtype == "float16" and resolve_device(device).startswith("cpu"):
        raise ModelError("dtype 'float16' needs a GPU (device: cuda or mps); on a CPU use 'bfloat16' or 'float32'")
