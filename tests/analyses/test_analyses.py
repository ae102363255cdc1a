"""The registry of analyses: discovery of the package's modules, names, and what a protocol may name."""

from __future__ import annotations

import pytest

from headstats.analyses import ANALYSES, check_analyses, get_analysis, list_analyses, register_analysis
from headstats.engine.collector import Collector
from headstats.errors import ProtocolError, UnknownNameError


def test_builtins_are_discovered():
    assert set(list_analyses()) >= {"entropy", "surface", "clustering", "pictures", "dependency"}
    assert "pande_roles" not in list_analyses()
    assert set(list_analyses(selectable=False)) >= {"pande_roles", "finetune_comparison", "entropy"}
    spec = get_analysis("entropy")
    assert spec.section is not None and issubclass(spec.collector_class(), Collector) and "entropy" in spec.description


def test_unknown_name_suggests_the_nearest():
    with pytest.raises(UnknownNameError, match="did you mean 'entropy'"):
        get_analysis("entropie")
    with pytest.raises(UnknownNameError, match="choose one of"):
        check_analyses(["nope"])


def test_builtins_the_study_runs_cannot_be_named():
    assert check_analyses(["entropy"]) == ["entropy"]
    with pytest.raises(ProtocolError, match="run by the study itself.*entropy"):
        check_analyses(["pande_roles"])


def test_register_from_python():
    class Nothing(Collector):
        def update(self, view):
            pass

        @classmethod
        def merge(cls, states):
            return None

        def tables(self):
            return {}

    register_analysis("nothing_test", Nothing, description="does nothing")
    try:
        assert "nothing_test" in list_analyses() and get_analysis("nothing_test").collector_class() is Nothing
        with pytest.raises(ValueError, match="already registered"):
            register_analysis("nothing_test", Nothing)
        with pytest.raises(ValueError, match="letters"):
            register_analysis("no thing", Nothing)
    finally:
        ANALYSES.unregister("nothing_test")


def test_a_spec_names_its_parts_in_its_own_package_and_imports_them_at_first_use():
    """The spec is the one list: its collector, finish, claims and section are references into its own package,
    imported when the study or the report asks, and each table it writes is declared with a description."""
    from headstats.analyses import resolve
    from headstats.analyses.dependency.finish import finish_dependency
    from headstats.analyses.dependency.section import dependency_section

    spec = get_analysis("dependency")
    assert spec.finish == "headstats.analyses.dependency.finish:finish_dependency"
    assert spec.section_function() is dependency_section and resolve(spec.finish) is finish_dependency
    assert spec.claims == "headstats.analyses.dependency.claims" and spec.options.__name__ == "DependencyOptions"
    assert spec.describe("dependency_table").startswith("Table 1 of Clark et al.")
    assert spec.describe("mine") == f"a table of the dependency analysis ({spec.description})"
    with pytest.raises(ValueError, match="module:function"):
        resolve("headstats.stats.accuracy")


def test_finish_adds_and_replaces_tables():
    """The finish contract: it returns the tables to add or replace, merged into the analysis' tables."""
    import pandas as pd

    def finish(tables, statistics, options, seed):
        return {"a": tables["a"] * 10, "b_tests": pd.DataFrame({"p": [statistics], "seed": [seed]})}

    register_analysis("finish_test", Collector, finish=finish)
    try:
        a, b = pd.DataFrame({"x": [1]}), pd.DataFrame({"y": [2]})
        out = get_analysis("finish_test").finished({"a": a, "b": b}, 0.5, None, 7)
        assert list(out) == ["a", "b", "b_tests"] and out["a"]["x"].item() == 10 and out["b"] is b
        assert out["b_tests"]["p"].item() == 0.5 and out["b_tests"]["seed"].item() == 7
        assert get_analysis("entropy").finished({"a": a}, None, None, 0) == {"a": a}
    finally:
        ANALYSES.unregister("finish_test")


def test_finish_gets_what_it_declares_of_the_study_context():
    """A step gets ``jobs``, ``report``, ``warn`` (and ``log``) only when it declares a parameter of that name; a
    step of a tuple that declares none is called with the four positional arguments alone."""
    import pandas as pd

    seen = {}

    def first(tables, statistics, options, seed, *, jobs, warn):
        warn(f"{len(jobs)} jobs")
        return {"n": pd.DataFrame({"jobs": [len(jobs)]})}

    def second(tables, statistics, options, seed):
        seen["second"] = set(tables)
        return {}

    register_analysis("finish_context_test", Collector, finish=(first, second))
    try:
        warnings = []
        out = get_analysis("finish_context_test").finished({}, None, None, 0, jobs=["a", "b", "c"],
                                                           report=object(), warn=warnings.append)
        assert out["n"]["jobs"].item() == 3 and warnings == ["3 jobs"] and seen["second"] == {"n"}
    finally:
        ANALYSES.unregister("finish_context_test")


def test_a_section_of_slots_is_drawn_in_each_named_slot_of_the_report():
    """``section={slot: part}``: the builder draws each part in its slot, for the enabled analyses, in their order;
    such an analysis has no single section (:meth:`AnalysisSpec.section_function` is None)."""
    from types import SimpleNamespace

    from headstats.report.builder import SlotContext, slot_sections

    drawn = []
    register_analysis("slot_test", Collector, section={
        "summary": lambda report, root, tables, context: drawn.append(("summary", report, tables, context.lead)),
        "closing": lambda report, root, tables, context: drawn.append(("closing", report, tables, context.lead))})
    try:
        assert get_analysis("slot_test").section_function() is None
        context = SlotContext(SimpleNamespace(enabled_analyses=lambda: ["slot_test"]), {}, None, None, None, True,
                              lambda message: None)
        for slot in ("summary", "results", "closing"):
            slot_sections(slot, "report", None, "tables", context)
        assert drawn == [("summary", "report", "tables", True), ("closing", "report", "tables", True)]
        slot_sections("summary", "report", None, "tables",
                      SlotContext(SimpleNamespace(enabled_analyses=lambda: []), {}, None, None, None, False, print))
        assert len(drawn) == 2  # not enabled: not drawn
    finally:
        ANALYSES.unregister("slot_test")
