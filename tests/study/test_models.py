"""A study's models: the fine-tuning progress it draws and logs (building the models: tests/model/test_finetune.py)."""

from __future__ import annotations


def test_fine_tuning_progress_draws_steps_and_logs_every_tenth():
    from contextlib import ExitStack, contextmanager

    from headstats.model.finetune import TrainingStep
    from headstats.study.models import training_progress

    events: list = []

    @contextmanager
    def factory(description, total):
        events.append(("open", description, total))

        def advance(n):
            events.append(("advance", n))

        advance.status = lambda text: events.append(("status", text))
        yield advance
        events.append(("close",))

    lines: list[str] = []
    with ExitStack() as stack:
        report = training_progress("sst2-ft", lines.append, factory, stack)
        for step in range(1, 21):
            report(TrainingStep(step, 20, loss=0.5, elapsed_s=float(step)))
        assert ("close",) not in events
    assert events[0] == ("open", "fine-tuning sst2-ft (steps)", 20) and events[-1] == ("close",)
    assert events.count(("advance", 1)) == 20 and ("status", "loss 0.500") in events
