"""A declared table (:class:`TableSpec`) and the registry of every table a run may write (:data:`TABLES`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

from headstats.registry import Registry

#: The owner of the study's own tables (tests, roles, the role tables, the claims).
STUDY = "study"


@dataclass(frozen=True)
class TableSpec:
    """A table a run writes (``<name>.csv``, and ``<name>.parquet`` where :attr:`formats` says so).

    Attributes
    ----------
    description : str
        What it holds, one line: the run folder's "Files and reproduction" section lists it.
    columns : tuple of str
        Its schema: the columns it always has (it may have more, e.g. a test's columns that depend on the options);
        :meth:`RunTables.missing_columns` and :func:`headstats.testing.check_analysis` check that a written table
        has them.
    formats : tuple of str
        The files written: ``("csv",)``, ``("csv", "parquet")``, ``("parquet",)``; ``()``: a table the run
        computes for its claims but does not write.
    name : str
        The file's name without suffix (filled in when declared).
    owner : str
        ``"study"`` or the analysis that writes it (filled in when declared).
    listed : bool
        Whether the report's "Files and reproduction" section lists it among the study's tables.
    key : str
        Its name among its owner's tables where that differs from the file's (an analysis' ``paired_tests``
        written as the file ``compare_paired_tests``); default :attr:`name`.
    """

    description: str
    columns: tuple[str, ...] = ()
    formats: tuple[str, ...] = ("csv",)
    name: str = ""
    owner: str = ""
    listed: bool = True
    key: str = ""

    @property
    def files(self) -> tuple[str, ...]:
        """The files it is written to (``("tests.csv", "tests.parquet")``)."""
        return tuple(f"{self.name}.{suffix}" for suffix in self.formats)


#: Every declared table of a run, by file name (without suffix): the study's own and each registered analysis'.
TABLES: Registry[TableSpec] = Registry(
    "table", hint="declare one in an analysis' spec (register_analysis(tables=...)) or with declare_tables")


def declare_tables(owner: str, tables: Mapping[str, TableSpec | str], *,
                   overwrite: bool = False) -> dict[str, TableSpec]:
    """Declare ``owner``'s tables (name -> spec, or its description alone); returns the specs with their name and
    owner filled in. A name another owner declared is refused (two owners cannot write one file)."""
    out = {}
    for name, spec in tables.items():
        spec = spec if isinstance(spec, TableSpec) else TableSpec(str(spec))
        spec = replace(spec, name=name, owner=owner, key=spec.key or name)
        known = TABLES.get(name) if name in TABLES else None
        if known is not None and known.owner != owner and not overwrite:
            raise ValueError(f"table {name!r} is already declared by {known.owner!r}; give {owner!r}'s table "
                             "another name")
        out[name] = TABLES.register(name, spec, overwrite=True)
    return out


def table_spec(name: str, owner: str = STUDY) -> TableSpec:
    """The declared spec of table ``name``, else a generic one of ``owner``'s."""
    if name in TABLES:
        return TABLES.get(name)
    what = "a table of the study" if owner == STUDY else f"a table of {owner}"
    return TableSpec(what, name=name, owner=owner, key=name)
