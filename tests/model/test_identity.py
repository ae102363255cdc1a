"""A model's identity: the provenance load_model records (sizes, path, the weight file's sha256 by hand)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def test_provenance_of_tiny_bert(tiny_model, tiny_model_dir):
    prov = tiny_model.provenance
    assert (tiny_model.n_layers, tiny_model.n_heads) == (2, 2)
    assert prov["n_layers"] == 2 and prov["n_heads"] == 2
    assert prov["model_type"] == "bert"
    assert prov["architecture"] == "BertModel"
    assert prov["path"] == str(tiny_model_dir) and prov["hub_id"] is None
    expected = hashlib.sha256((Path(tiny_model_dir) / "model.safetensors").read_bytes()).hexdigest()
    assert prov["weights_sha256"] == {"model.safetensors": expected}
    assert tiny_model.model.config._attn_implementation == "eager"
    assert not tiny_model.model.training
