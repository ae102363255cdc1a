"""The options of ``peak``: the threshold that calls a head peaked (read after the pass)."""

from pydantic import Field

from headstats.engine.cache import AFTER_PASS
from headstats.fields import StrictModel


class PeakOptions(StrictModel):
    #: A head is peaked when its mean row maximum exceeds this.
    threshold: float = Field(0.5, gt=0, lt=1, json_schema_extra=AFTER_PASS)
