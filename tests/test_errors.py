import pytest

from headstats import errors


@pytest.mark.parametrize("kind", [errors.ProtocolError, errors.DataError, errors.ModelError, errors.UnknownNameError,
                                  errors.IncompatibleResultsError, errors.OutputError])
def test_every_kind_is_a_headstats_error_with_its_message(kind):
    exc = kind("something is wrong; do this")
    assert isinstance(exc, errors.HeadstatsError) and isinstance(exc, ValueError)
    assert str(exc) == "something is wrong; do this"
