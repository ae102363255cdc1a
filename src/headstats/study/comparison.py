"""Before a study scores anything: refuse to compare (the protocol's ``compare:`` entries) models whose tokenizers
differ, before any model is loaded (a comparison pairs the models' scores and maps input by input)."""

from __future__ import annotations

from headstats.model.tokenizers import check_same_tokenizer


def check_comparable(protocol, sources: dict[str, str], *, cache=None) -> None:
    """Refuse, before any scoring, to compare models whose tokenizers split text differently.

    The tokenizers' fingerprints are those of the models' descriptions
    (:func:`headstats.study.memo.memoised_description`), taken from the state cache ``cache`` (a folder, or
    None) when an earlier run described the same model folders.
    """
    if not protocol.compare:
        return
    from headstats.engine.cache import StateCache
    from headstats.study.memo import memoised_description

    store = StateCache(cache) if cache is not None else None
    specs = {m.name: m for m in protocol.models}
    fingerprints: dict[str, str] = {}

    def fingerprint(name: str) -> str:
        if name not in fingerprints:
            described, _ = memoised_description(sources[name], revision=specs[name].revision, device=protocol.device,
                                                dtype=protocol.dtype, cache=store)
            fingerprints[name] = described["vocab_sha256"]
        return fingerprints[name]

    for spec in protocol.compare:
        for name in spec.finetuned:
            check_same_tokenizer(fingerprint(spec.base), fingerprint(name), names=[spec.base, name])
