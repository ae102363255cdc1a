"""The report's parts about the roles of Pande et al., placed in the builder's named slots (the spec's ``section`` is
``{slot: function}``, :data:`headstats.analyses.ReportSlots`): each part is ``part(report, root, tables, context)``
with the run's tables and :class:`headstats.report.builder.SlotContext` (protocol, manifest, claims, figures, log,
whether the protocol's own analyses lead the report).

- ``summary`` (:func:`summary`): the roles held per data set, the role grids (:mod:`.summary`);
- ``results`` (:func:`results`): the roles across attention measures (:mod:`.measures`), then the mean-score maps,
  heads per layer and co-location per model and data set (:mod:`.roles`);
- ``closing`` (:func:`closing`): the strongest heads (:mod:`.strongest`)."""

from __future__ import annotations

from pathlib import Path

from headstats.analyses.pande_roles.section.measures import measures_section
from headstats.analyses.pande_roles.section.roles import role_sections
from headstats.analyses.pande_roles.section.strongest import strongest_section
from headstats.analyses.pande_roles.section.summary import summary_section
from headstats.report.blocks import Report
from headstats.report.sections import by_model_and_dataset
from headstats.tables import RunTables
from headstats.tables.study_tables import Analysis


def summary(report: Report, root: Path, tables: RunTables, context) -> None:
    """The summary of the roles per data set (headed as the roles' when the protocol's own analyses lead)."""
    analysis = Analysis.of_run(tables).on_measure()
    context.log(f"report: summary and role grids of {len(by_model_and_dataset(analysis.roles, context.protocol))} "
                "(model, data set)")
    summary_section(report, root, analysis, context.protocol, context.manifest, formats=context.formats,
                    figures=context.figures,
                    heading="Roles of Pande et al. (2021): summary" if context.lead else "Summary")


def results(report: Report, root: Path, tables: RunTables, context) -> None:
    """The roles across attention measures, then the role figures and tables of each model and data set."""
    every_measure = Analysis.of_run(tables)
    analysis = every_measure.on_measure()
    measures_section(report, every_measure, context.claims)
    n_sets = len(by_model_and_dataset(analysis.roles, context.protocol))
    context.log(f"report: mean-score maps, heads per layer and co-location ({3 * n_sets} figures)")
    role_sections(report, root, analysis, context.protocol, formats=context.formats, figures=context.figures)


def closing(report: Report, root: Path, tables: RunTables, context) -> None:
    """The strongest heads of each role."""
    strongest_section(report, Analysis.of_run(tables).on_measure(), context.protocol)
