"""Fine-tuning (being split into data, train, cache and progress)."""

from headstats.model.finetune.train import *  # noqa: F401,F403
