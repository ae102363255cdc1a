"""What fine-tuning tells while it runs: a callback per step, a line every 10 %."""

from __future__ import annotations

import json

import numpy as np
import pytest

from headstats.model.finetune import (
    finetune,
)
from finetune.conftest import small_recipe as recipe


def test_progress_callback_sees_every_step_with_loss_and_time(tiny_model_dir, tiny_glue, tmp_path):
    from headstats.model.finetune import TrainingStep

    seen: list[TrainingStep] = []
    # 24 rows, batch 8, 2 epochs: 6 steps
    finetune(recipe(base=str(tiny_model_dir), epochs=2), out_dir=tmp_path / "ft", data_root=tiny_glue,
             progress=seen.append)
    assert [s.step for s in seen] == [1, 2, 3, 4, 5, 6] and {s.total for s in seen} == {6}
    assert all(np.isfinite(s.loss) and s.loss > 0 for s in seen)
    assert all(b.elapsed_s >= a.elapsed_s for a, b in zip(seen, seen[1:]))
    metrics = json.loads((tmp_path / "ft" / "metrics.json").read_text())
    assert seen[-1].loss == pytest.approx(metrics["final_loss"])  # the same smoothed loss (last 20 steps)
    assert seen[-1].remaining_s == 0


def test_ten_percent_log_writes_a_line_at_each_tenth():
    from headstats.model.finetune import TenPercentLog, TrainingStep, clock

    lines: list[str] = []
    log = TenPercentLog(lines.append, "fine-tuning sst2-ft")
    for step in range(1, 26):  # 25 steps: tenths are crossed at steps 3, 5, 8, 10, 13, 15, 18, 20, 23, 25
        log(TrainingStep(step, 25, loss=1.0 / step, elapsed_s=2.0 * step))
    assert [int(line.split("step ")[1].split("/")[0]) for line in lines] == [3, 5, 8, 10, 13, 15, 18, 20, 23, 25]
    assert lines[0] == "fine-tuning sst2-ft: step 3/25 (12%), loss 0.333, 0:06 elapsed, about 0:44 left"
    assert lines[-1].endswith("(100%), loss 0.040, 0:50 elapsed, about 0:00 left")
    few: list[str] = []
    short = TenPercentLog(few.append)
    for step in (1, 2, 3):
        short(TrainingStep(step, 3, loss=0.5, elapsed_s=1.0))
    assert len(few) == 3  # fewer than ten steps: a line each
    assert clock(3725) == "1:02:05" and clock(59.6) == "1:00"
