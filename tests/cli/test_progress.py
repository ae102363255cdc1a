"""What a command shows while it works: bars with the time left, and a log line every 10 %."""

from __future__ import annotations


def test_finetune_progress_in_the_terminal_shows_steps_loss_time_left_and_tenths():
    import io

    from rich.console import Console

    from headstats.cli.main import _training_progress
    from headstats.model.finetune import TrainingStep

    buffer = io.StringIO()
    console = Console(file=buffer, width=200, force_terminal=False)
    stack, report = _training_progress(console, False, "fine-tuning sst2")
    with stack:
        for step in range(1, 21):
            report(TrainingStep(step, 20, loss=0.25, elapsed_s=float(step)))
    text = buffer.getvalue()
    assert "fine-tuning sst2: step 2/20 (10%), loss 0.250, 0:02 elapsed, about 0:18 left" in text
    assert "step 20/20 (100%)" in text and "20/20" in text and "loss 0.250" in text
    quiet_stack, quiet = _training_progress(console, True, "fine-tuning sst2")
    before = buffer.getvalue()
    with quiet_stack:
        quiet(TrainingStep(1, 1, loss=0.1, elapsed_s=1.0))
    assert buffer.getvalue() == before
