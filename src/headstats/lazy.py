"""Modules imported at their first use, so that work which never touches them never pays for importing them.

``import torch`` takes 2 to 3 s. The engine and every collector need it to run a forward pass, but a re-run
whose chunk states all come from the cache (:mod:`headstats.engine.cache`) runs none: it only builds the
collectors from their cached states and makes tables. Modules of those layers write::

    from headstats.lazy import torch

and use ``torch.something`` as usual; torch is imported at the first attribute looked up. The stand-in is
never put in ``sys.modules``, so other libraries (which test ``"torch" in sys.modules`` to decide whether to
handle tensors) see torch only once it is really imported.

Annotations such as ``x: torch.Tensor`` cost nothing under ``from __future__ import annotations``; a class
that subclasses a torch class must be defined where it is used (e.g. inside a function), since its base is
looked up when the class statement runs.
"""

from __future__ import annotations

import importlib
import sys
import types

__all__ = ["LazyModule", "is_imported", "torch"]


class LazyModule(types.ModuleType):
    """A stand-in for module ``name`` that imports it at the first attribute looked up.

    After the import the real module's attributes are copied onto the stand-in, so later look-ups are plain
    attribute reads (no ``__getattr__`` call).
    """

    def __getattr__(self, attribute: str):
        if attribute.startswith("__") and attribute.endswith("__") and attribute != "__version__":
            raise AttributeError(attribute)  # introspection (copy, pickle, doctest) must not import the module
        real = importlib.import_module(self.__name__)
        self.__dict__.update({k: v for k, v in vars(real).items() if k != "__name__"})
        return getattr(real, attribute)


def is_imported(name: str) -> bool:
    """Whether module ``name`` has really been imported in this process (not merely stood in for)."""
    return name in sys.modules


#: PyTorch, imported at its first use.
torch = LazyModule("torch")
