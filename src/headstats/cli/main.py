"""The ``headstats`` command line: a thin layer over :mod:`headstats.study`.

One module per part: :mod:`~headstats.cli.app` (the app, global options, shared help), :mod:`~headstats.cli.errors`
(one-line errors and exit statuses), :mod:`~headstats.cli.progress` (bars and logs), and a module per command
group: :mod:`~headstats.cli.study_commands` (run, score, validate, report), :mod:`~headstats.cli.finetune_command`,
:mod:`~headstats.cli.init_command`, :mod:`~headstats.cli.lists` and :mod:`~headstats.cli.large_runs` (cache,
merge). Importing this module registers every command, in the order ``headstats --help`` lists them.
"""

from __future__ import annotations

import sys

from headstats.cli.app import app
from headstats.cli.errors import _errors  # noqa: F401 - part of this module's interface
from headstats.cli.progress import _training_progress  # noqa: F401
from headstats.cli.study_commands import SCORE_PROTOCOL_OPTIONS, schema_field  # noqa: F401
from headstats.cli import finetune_command, init_command, lists, large_runs, view_command  # noqa: F401,E402 - registers them
from headstats.cli.init_command import render_init_protocol  # noqa: F401


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
