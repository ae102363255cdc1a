"""Devices and precisions: 'cpu' always, unknown or absent devices and float16 on a CPU refused in one line."""

from __future__ import annotations

import pytest

from headstats.errors import ModelError
from headstats.model.devices import check_device


# ------------------------------------------------------------------------------------------------------
# devices
# ------------------------------------------------------------------------------------------------------
def test_cpu_is_a_device():
    assert check_device("cpu") is None


@pytest.mark.parametrize("device", ["quantum", "", "cuda:x"])
def test_unknown_device(device):
    with pytest.raises(ModelError, match=r"unknown device .*; use 'cpu', 'cuda', 'cuda:N', 'mps' or 'auto'"):
        check_device(device)


def test_device_missing_on_this_machine():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    for device in ("cuda", "cuda:1"):
        with pytest.raises(ModelError, match=f"device '{device}' is not available on this machine; use one of: cpu"):
            check_device(device)


def test_dtype_and_device_are_refused_before_loading():
    import torch

    from headstats.errors import ModelError
    from headstats.model.devices import check_device, check_dtype, resolve_device

    with pytest.raises(ModelError, match="unknown dtype 'float64'"):
        check_dtype("float64")
    with pytest.raises(ModelError, match="float16' needs a GPU"):
        check_dtype("float16", "cpu")
    check_dtype("bfloat16", "cpu")
    assert resolve_device("cpu") == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ModelError, match="not available on this machine"):
            check_device("cuda")
        assert resolve_device("auto") in ("cpu", "mps")
    check_device("auto")
