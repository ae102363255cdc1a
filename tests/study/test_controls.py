"""Random-init control models (METHODS 6.3): ``controls: {random_init: {seeds: [...]}}`` adds, for every model
not fine-tuned in the protocol, a model of its configuration and tokenizer with weights drawn under each seed,
scored in the same plan and cache as the model it controls."""

from __future__ import annotations

import pandas as pd
import torch
import yaml
from tiny_study import tiny_protocol

from headstats.config.protocol import Protocol, load_protocol
from headstats.model.loading import load_model
from headstats.study.run import run_study


def test_controls_expand_to_one_model_per_seed_and_validate_to_themselves(tmp_path, tiny_model_dir):
    path = tiny_protocol(tmp_path, tiny_model_dir, ["local"])
    raw = yaml.safe_load(path.read_text())
    raw["controls"] = {"random_init": {"seeds": [0, 3]}}
    protocol = Protocol.model_validate(raw)
    assert [m.name for m in protocol.models] == ["tiny", "tiny@random0", "tiny@random3"]
    control = protocol.models[2]
    assert (control.path, control.random_init, control.control_of) == (str(tiny_model_dir), 3, "tiny")
    assert protocol.controls_of() == {"tiny": ["tiny@random0", "tiny@random3"]}
    again = Protocol.model_validate(protocol.model_dump(mode="json"))
    assert [m.name for m in again.models] == [m.name for m in protocol.models]


def test_a_random_init_model_has_the_config_and_tokenizer_and_seeded_new_weights(tiny_model_dir):
    trained = load_model(str(tiny_model_dir))
    first = load_model(str(tiny_model_dir), random_init=5)
    again = load_model(str(tiny_model_dir), random_init=5)
    other = load_model(str(tiny_model_dir), random_init=6)
    weight = lambda m: m.model.encoder.layer[0].attention.self.query.weight  # noqa: E731
    assert torch.equal(weight(first), weight(again))
    assert not torch.equal(weight(first), weight(trained)) and not torch.equal(weight(first), weight(other))
    assert first.model.config.to_dict() == trained.model.config.to_dict()
    assert first.provenance["random_init_seed"] == 5 and "random_init_seed" not in trained.provenance
    assert first.provenance["weights_sha256"] == trained.provenance["weights_sha256"]  # the files it was drawn beside
    with torch.inference_mode():
        ids = torch.tensor([[2, 10, 11, 3]])
        assert first.model(input_ids=ids, output_attentions=True).attentions[0] is not None  # eager, as loaded


def test_a_run_with_controls_scores_each_control_as_its_own_model(tmp_path, tiny_model_dir):
    path = tiny_protocol(tmp_path, tiny_model_dir, ["local", "delimiter"])
    raw = yaml.safe_load(path.read_text())
    raw["controls"] = {"random_init": {"seeds": [7]}}  # not 0: the tiny model is itself seed 0
    path.write_text(yaml.safe_dump(raw))
    from headstats.report.builder import build_report

    study = run_study(load_protocol(path), tmp_path / "run", report=build_report)
    scores = study.scores_frame()
    assert set(scores["model"]) == {"tiny", "tiny@random7"}
    # the report puts the control's count beside each role count of the model it controls
    roles = pd.read_csv(study.out / "roles.csv")
    control = roles[roles["model"] == "tiny@random7"]
    md = (study.out / "report.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| role | heads |"))
    at = [c.strip() for c in header.split("|")].index("heads in tiny@random7")
    row = next(line for line in md.splitlines() if line.startswith("| delimiter | ") and line.count("|") == header.count("|"))
    assert int(row.split("|")[at]) == int((control["delimiter"].astype(str) == "True").sum())
    by_model = {m: part.sort_values(["sentence_id", "layer", "head", "role"])["score"].to_numpy()
                for m, part in scores.groupby("model")}
    assert len(by_model["tiny"]) == len(by_model["tiny@random7"]) == 12 * 2 * 2 * 2
    assert not (pd.Series(by_model["tiny"]) == pd.Series(by_model["tiny@random7"])).all()
    # the control's scores are those of the model load_model(random_init=7) gives, scored alone
    import headstats as hs
    from headstats.inputs.readers import read_records

    records = read_records(tiny_study_demo(), limit=12)
    alone = hs.score(load_model(str(tiny_model_dir), random_init=7), records, dataset="single",
                     roles=["local", "delimiter"])
    keys = ["sentence_id", "layer", "head", "role"]
    expected = alone.to_frame()[keys + ["score"]].astype({"role": str, "sentence_id": str})
    got = scores[scores["model"] == "tiny@random7"][keys + ["score"]].astype({"role": str, "sentence_id": str})
    both = expected.merge(got, on=keys, suffixes=("_alone", "_run"))
    assert len(both) == 12 * 2 * 2 * 2
    assert (both["score_alone"] - both["score_run"]).abs().max() < 1e-6
    claims = pd.read_csv(study.out / "claims.csv")
    learned = claims[claims["claim"].str.startswith("learned:")]
    assert sorted(learned["claim"]) == ["learned:delimiter", "learned:local"]
    assert set(learned["model"]) == {"tiny"} and learned["verdict"].notna().all()
    identities = {m: study.manifest["models"][m].get("random_init_seed") for m in ("tiny", "tiny@random7")}
    assert identities == {"tiny": None, "tiny@random7": 7}


def tiny_study_demo():
    from tiny_study import DEMO

    return DEMO / "sentences.txt"
