"""A module imported at its first use: nothing is imported before an attribute is looked up, and then the
stand-in behaves as the module."""

from __future__ import annotations

import subprocess
import sys

from headstats.lazy import LazyModule, is_imported


def write_module(folder, name: str) -> None:
    (folder / f"{name}.py").write_text("import sys\nsys.modules.setdefault('_lazy_probe_loads', []).append(1)\n"
                                       "VALUE = 41\ndef plus_one(x):\n    return x + 1\n")


def test_the_module_is_imported_at_the_first_attribute_and_only_once(tmp_path, monkeypatch):
    write_module(tmp_path, "lazy_probe_module")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "_lazy_probe_loads", raising=False)
    stand_in = LazyModule("lazy_probe_module")
    assert not is_imported("lazy_probe_module") and "_lazy_probe_loads" not in sys.modules
    assert stand_in.plus_one(stand_in.VALUE) == 42
    assert is_imported("lazy_probe_module") and sys.modules["_lazy_probe_loads"] == [1]
    assert stand_in.VALUE == 41 and sys.modules["_lazy_probe_loads"] == [1]  # imported once
    assert "plus_one" in vars(stand_in)  # later look-ups are plain attribute reads
    monkeypatch.delitem(sys.modules, "lazy_probe_module")


def test_introspection_does_not_import_the_module(tmp_path, monkeypatch):
    write_module(tmp_path, "lazy_probe_other")
    monkeypatch.syspath_prepend(str(tmp_path))
    stand_in = LazyModule("lazy_probe_other")
    assert not hasattr(stand_in, "__wrapped__") and not hasattr(stand_in, "__path__")
    assert "lazy_probe_other" in repr(stand_in)
    assert not is_imported("lazy_probe_other")


def test_the_engine_analyses_and_the_study_import_without_torch():
    code = ("import sys\nimport headstats.engine, headstats.engine.runner, headstats.study.run\n"
            "from headstats.analyses import list_analyses\nlist_analyses()\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stderr[-2000:]


def test_torch_works_through_the_stand_in():
    from headstats.lazy import torch

    assert torch.ones(3).sum().item() == 3.0
    assert torch.Tensor is sys.modules["torch"].Tensor
