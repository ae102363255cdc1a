"""The tables of a run: each declared once (:class:`TableSpec`: its file, what it holds, its columns, its owner),
and :class:`RunTables`, the one object that holds a run's tables, writes them, reads them back from a run folder
(checked against the schemas the run recorded: :mod:`headstats.tables.schemas`) and says what each holds.

A base module: every layer may use it. The study's own tables are declared in
:mod:`headstats.tables.study_tables`, each analysis' in its spec (:func:`headstats.analyses.register_analysis`), both
through :func:`declare_tables`.
"""

from __future__ import annotations

from headstats.tables.declared import TABLES, TableSpec, declare_tables, table_spec
from headstats.tables.run_tables import RunTables
from headstats.tables import study_tables as _study  # noqa: F401 - declares the study's own tables

__all__ = ["TABLES", "TableSpec", "declare_tables", "table_spec", "RunTables"]
