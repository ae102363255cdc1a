"""Pydantic field types shared by every schema of headstats: strict whole numbers, finite numbers, seeds.

YAML reads ``true`` as a boolean and pydantic would take it for 1; these types refuse it, and refuse NaN and
inf, so that a protocol says exactly what it means.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict

def not_bool(value: object) -> object:
    """Refuse YAML ``true``/``false`` where a number is meant (pydantic would read them as 1 and 0)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a number, not {str(value).lower()}")
    return value


def non_empty_list(what: str, *, has_default: bool = True):
    """Refuse ``[]`` with a message that names the fix (a study of no roles, models or data means nothing)."""
    fix = " or leave the key out for the default" if has_default else ""

    def check(value: object) -> object:
        if isinstance(value, list) and not value:
            raise ValueError(f"the list is empty; give at least one {what}{fix}")
        return value
    return BeforeValidator(check)


#: A whole number: ``true``, ``1.5`` and ``"3"`` are refused.
Int = Annotated[int, BeforeValidator(not_bool), Strict()]
#: A finite number (NaN and inf are refused by the models' ``allow_inf_nan=False``); ``true`` is refused.
Float = Annotated[float, BeforeValidator(not_bool)]
#: A seed: a whole number that numpy and torch both take.
Seed = Annotated[Int, Field(ge=0, lt=2**63)]


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=False, allow_inf_nan=False)


def per_role(spec: object, role: str, default: object) -> object:
    """The value of ``role`` in a per-role spec (``tau``, ``scale``): the spec itself when it is not a mapping,
    else its entry for ``role``, else its ``default``, else ``default``."""
    if isinstance(spec, dict):
        return spec.get(role, spec.get("default", default))
    return spec
