"""The role registry: built-in roles, syntactic:<rel> resolution, user roles and their checks."""

from __future__ import annotations

import numpy as np
import pytest

from headstats.errors import HeadstatsError
from headstats.inputs.records import Record
from headstats.analyses.roles import (
    BUILTIN_ROLES,
    applicable_roles,
    check_role,
    get_role,
    list_roles,
    register_role,
    role_relation,
    unregister_role,
)

BUILTIN = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic"]


def previous(layout, options):
    return np.eye(layout.length, k=-1, dtype=bool)


@pytest.fixture
def user_role():
    register_role("previous_roles_test", previous, description="the previous piece")
    yield "previous_roles_test"
    unregister_role("previous_roles_test")


def test_builtin_roles_listed():
    assert list_roles()[: len(BUILTIN)] == BUILTIN
    assert [r.name for r in BUILTIN_ROLES] == BUILTIN
    kinds = {name: get_role(name).kind for name in BUILTIN}
    assert kinds == {"local": "sieve", "delimiter": "sieve", "delimiter_cls": "sieve", "delimiter_sep": "sieve",
                     "block": "sieve", "syntactic": "arc"}
    assert [name for name in BUILTIN if get_role(name).pairs_only] == ["block"]
    assert all(get_role(name).sieve is None for name in BUILTIN)


def test_syntactic_relation_roles():
    spec = get_role("syntactic:obj")
    assert (spec.name, spec.kind, spec.pairs_only) == ("syntactic:obj", "arc", False)
    assert role_relation("syntactic:obj") == "dobj"  # UD name -> canonical (spaCy) label
    assert role_relation("syntactic:dobj") == "dobj"
    assert role_relation("syntactic:nsubj") == "nsubj"
    assert role_relation("local") is None
    assert role_relation("syntactic") is None
    assert check_role("syntactic:amod") == "syntactic:amod"
    with pytest.raises(HeadstatsError, match="needs a relation"):
        get_role("syntactic:")


def test_unknown_role_lists_the_valid_ones():
    with pytest.raises(HeadstatsError) as info:
        get_role("lokal")
    message = str(info.value)
    assert "'lokal'" in message
    for name in BUILTIN:
        assert name in message
    assert "syntactic:<relation>" in message
    with pytest.raises(HeadstatsError, match="unknown role"):
        check_role("delimiters")


def test_register_and_unregister(user_role):
    assert user_role in list_roles()
    spec = get_role(user_role)
    assert (spec.kind, spec.sieve, spec.pairs_only, spec.description) == ("sieve", previous, False, "the previous piece")
    with pytest.raises(ValueError, match="already registered"):
        register_role(user_role, previous)
    replaced = register_role(user_role, previous, pairs_only=True, overwrite=True)
    assert get_role(user_role) is replaced and replaced.pairs_only
    unregister_role(user_role)
    assert user_role not in list_roles()
    with pytest.raises(HeadstatsError, match="unknown role"):
        get_role(user_role)
    unregister_role(user_role)  # removing an absent user role is a no-op
    register_role(user_role, previous)  # for the fixture's teardown


@pytest.mark.parametrize("name", ["", "has space", "with-dash", "a:b", "syntactic_x", "syntacticfoo"])
def test_bad_role_names(name):
    with pytest.raises(ValueError, match="letters, digits"):
        register_role(name, previous)
    assert name not in list_roles()


def test_sieve_must_be_callable():
    with pytest.raises(TypeError, match="callable"):
        register_role("not_callable_roles_test", "np.eye")
    assert "not_callable_roles_test" not in list_roles()


@pytest.mark.parametrize("name", ["local", "delimiter", "block", "delimiter_cls"])
def test_builtin_roles_protected(name):
    builtin = get_role(name)
    with pytest.raises(ValueError, match="built-in"):
        unregister_role(name)
    for overwrite in (False, True):
        with pytest.raises(ValueError, match="built-in"):
            register_role(name, previous, overwrite=overwrite)
    assert get_role(name) is builtin and builtin.sieve is None


def test_an_unknown_role_suggests_the_nearest_and_lists_the_valid_ones():
    from headstats.errors import UnknownNameError

    with pytest.raises(UnknownNameError, match="did you mean 'local'.*choose one of local, delimiter"):
        get_role("locl")


ROLES = ["local", "delimiter", "delimiter_cls", "delimiter_sep", "block", "syntactic", "syntactic:nsubj",
         "syntactic:dobj"]


def test_applicable_roles():
    """Pair-only roles leave a data set without pairs, arc roles one without parses, each with the reason."""
    from conftest import space_words as words

    singles = [Record("0", "the cat"), Record("1", "a dog")]
    kept, dropped = applicable_roles(ROLES, singles)
    assert kept == ["local", "delimiter", "delimiter_cls", "delimiter_sep"]
    assert dropped == {
        "block": "the data set has no sentence pairs",
        "syntactic": "the data set has no dependency parses",
        "syntactic:nsubj": "the data set has no dependency parses",
        "syntactic:dobj": "the data set has no dependency parses",
    }
    parse = ([1, 2, -1], ["det", "nsubj", "ROOT"])
    parsed_pairs = [Record("p0", "the cat sat", "a dog ran", words_a=words("the cat sat", *parse),
                           words_b=words("a dog ran", *parse))]
    assert applicable_roles(ROLES, parsed_pairs) == (ROLES, {})
    assert applicable_roles(ROLES, has_pairs=True, has_parses=True) == (ROLES, {})
    unparsed_pairs = [Record("p", "the cat", "a dog")]
    assert applicable_roles(["block", "syntactic"], unparsed_pairs) == (
        ["block"], {"syntactic": "the data set has no dependency parses"})
