"""The exception kinds that the CLI turns into a one-line error message.

Input problems are raised as :class:`HeadstatsError` (a ``ValueError``) or one of its kinds below, whose
message names the problem and the fix. The CLI prints ``error: <message>`` and exits with status 2, without
a traceback. Catch :class:`HeadstatsError` to catch them all.
"""


class HeadstatsError(ValueError):
    """A user-facing problem with input, data, model or protocol; the message says what to do."""


class ProtocolError(HeadstatsError):
    """A protocol that cannot be run: a bad key, value or combination of options."""


class DataError(HeadstatsError):
    """A data file that is missing, unreadable or malformed."""


class ModelError(HeadstatsError):
    """A model that is missing, broken, of an unsupported kind, or cannot be placed on the device."""


class UnknownNameError(HeadstatsError, KeyError):
    """A name (role, test, correction, format, analysis) that no registry holds.

    ``str()`` gives the message itself (not ``KeyError``'s quoted repr).
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class IncompatibleResultsError(HeadstatsError):
    """Results that cannot be paired or merged (different models, tokenizers or options)."""


class OutputError(HeadstatsError):
    """An output location that is unsafe, locked, not writable or full."""
