"""Tests of headstats.provenance: one typed record that the manifest, MeasureArray and the API's tables share."""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

import headstats as hs
from conftest import planted_arrays
from headstats.measures import MeasureArray
from headstats.provenance import ATTRS_KEY, Provenance, attach, of_frame, versioned

MODEL = {"model": "tiny", "path": "/models/tiny", "revision": None, "weights_sha256": {"model.safetensors": "ab"},
         "tokenizer_class": "BertTokenizerFast", "vocab_sha256": "cd", "n_layers": 2}


def _array(model: dict, name: str = "tiny") -> MeasureArray:
    values = np.ones((3, 1, 2, 1), np.float32)
    return MeasureArray(name, "d", ["a", "b", "c"], ("local",), values, provenance={"model": model})


def test_a_models_provenance_becomes_the_typed_record_and_back():
    record = Provenance.of_model(MODEL, data={"d": "ef"}, versions={"torch": "2"})
    assert (record.model, record.source, record.weights_sha256, record.tokenizer_fingerprint) == (
        "tiny", "/models/tiny", {"model.safetensors": "ab"}, "cd")
    assert Provenance.from_dict({**record.as_dict(), "unknown": 1}) == record
    assert record.same_model(Provenance.of_model({**MODEL, "path": "/elsewhere"}))
    assert not record.same_model(Provenance.of_model({**MODEL, "vocab_sha256": "other"}))
    assert versioned([record], {"torch": "9"}) == [record]  # versions kept where given
    assert versioned([Provenance("m")], {"torch": "9"})[0].versions == {"torch": "9"}


def test_an_array_names_its_inputs_by_the_sha256_of_their_ids():
    array = _array(MODEL)
    assert array.origin.data_sha256 == {"d": hashlib.sha256(b"a\nb\nc").hexdigest()}
    assert array.origin.weights_sha256 == MODEL["weights_sha256"]
    assert _array({}, "bare").origin.model == "bare"  # an array built by hand: its name


def test_the_api_tables_carry_the_provenance_of_their_scores():
    arrays = [_array(MODEL), _array({**MODEL, "model": "ft", "weights_sha256": {"model.safetensors": "99"}}, "ft")]
    tests = hs.test_roles(arrays, tau=0.5)
    records = of_frame(tests)
    assert [r.model for r in records] == ["tiny", "ft"] and records[1].weights_sha256 == {"model.safetensors": "99"}
    assert records[0].versions["numpy"] == np.__version__
    assert of_frame(hs.role_table(tests)) == records
    changes = hs.compare(arrays[0], arrays[1])
    assert [r.model for r in of_frame(changes)] == ["tiny", "ft"]
    assert of_frame(hs.test_roles(planted_arrays(1)))[0].model == "m"


def test_attach_keeps_each_record_once_in_order():
    frame = attach(pd.DataFrame({"x": [1]}), [Provenance("a"), Provenance("b"), Provenance("a")])
    assert [d["model"] for d in frame.attrs[ATTRS_KEY]] == ["a", "b"]
    assert of_frame(pd.DataFrame()) == []


def test_package_versions_are_the_installed_metadata_and_headstats_version_reads_them():
    import platform
    from importlib import metadata

    import headstats
    from headstats.provenance import VERSIONED_PACKAGES, headstats_version, package_versions

    versions = package_versions()
    assert versions["python"] == platform.python_version()
    assert versions["numpy"] == metadata.version("numpy") and versions["torch"] == metadata.version("torch")
    assert set(versions) == {"python", *VERSIONED_PACKAGES}
    assert headstats.__version__ == headstats_version() == metadata.version("headstats")
