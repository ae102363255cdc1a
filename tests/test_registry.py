import pytest

from headstats.errors import HeadstatsError, UnknownNameError
from headstats.registry import Registry


def make():
    reg: Registry[int] = Registry("test", hint="add one with register_test")
    reg.register("t", 1)
    reg.register("wilcoxon", 2)
    reg.register("sign", 3)
    return reg


def test_get_and_order():
    reg = make()
    assert reg.get("wilcoxon") == 2
    assert reg.names() == ["t", "wilcoxon", "sign"]
    assert "sign" in reg and "x" not in reg and len(reg) == 3


def test_unknown_name_suggests_nearest_and_lists_all():
    reg = make()
    with pytest.raises(UnknownNameError) as info:
        reg.get("wilcox")
    message = str(info.value)
    assert message == ("unknown test 'wilcox'; did you mean 'wilcoxon'?; choose one of t, wilcoxon, sign "
                       "(add one with register_test)")
    assert isinstance(info.value, HeadstatsError) and isinstance(info.value, KeyError)


def test_unknown_name_without_a_close_match_has_no_guess():
    assert "did you mean" not in make().unknown_message("zzzzzz")


def test_register_refuses_duplicates_unless_overwrite():
    reg = make()
    with pytest.raises(ValueError, match="already registered"):
        reg.register("t", 9)
    reg.register("t", 9, overwrite=True)
    assert reg.get("t") == 9
    reg.unregister("t")
    assert "t" not in reg
    with pytest.raises(UnknownNameError):
        reg.unregister("t")


def test_decorator_registers():
    reg: Registry = Registry("role")

    @reg.decorator("previous")
    def previous():
        return "p"

    assert reg.get("previous")() == "p"


def test_describe_reads_the_entrys_words_else_the_name():
    from types import SimpleNamespace

    reg: Registry = Registry("test")
    reg.register("t", SimpleNamespace(description="one-sample t-test", short="t"))
    reg.register("bare", SimpleNamespace(description=""))
    assert reg.describe("t") == "one-sample t-test" and reg.describe("t", "short") == "t"
    assert reg.describe("bare") == "bare" and reg.describe("unknown") == "unknown"


def test_lazy_entries_are_imported_at_first_use_and_cached():
    # lm-evaluation-harness' lazy placeholders: "package.module:attribute", imported by the registry itself
    import sys

    reg: Registry = Registry("thing")
    reg.register("plain", 1)
    reg.register_lazy("dedent", "textwrap:dedent")
    reg.register_lazy("missing", "headstats.no_such_module:f")
    assert reg.names() == ["plain", "dedent", "missing"] and "dedent" in reg
    assert reg.references() == {"dedent": "textwrap:dedent", "missing": "headstats.no_such_module:f"}
    import textwrap

    assert reg.get("dedent") is textwrap.dedent and "dedent" not in reg.references()
    with pytest.raises(ImportError, match="thing 'missing' names 'headstats.no_such_module:f'"):
        reg.get("missing")
    assert "headstats.no_such_module" not in sys.modules
    with pytest.raises(ValueError, match="package.module:attribute"):
        reg.register_lazy("bad", "textwrap.dedent")
    with pytest.raises(ValueError, match="already registered"):
        reg.register_lazy("plain", "textwrap:indent")
    reg.register("missing", 3, overwrite=True)  # a real entry replaces the placeholder
    assert reg.get("missing") == 3 and reg.references() == {}
    reg.unregister("dedent")
    assert reg.names() == ["plain", "missing"]
