"""The one exception type that the CLI turns into a one-line error message.

Input problems are raised as :class:`HeadstatsError` (a ``ValueError``), whose message names the problem
and the fix. The CLI prints ``error: <message>`` and exits with status 2, without a traceback.
"""


class HeadstatsError(ValueError):
    """A user-facing problem with input, data, model or protocol; the message says what to do."""
