"""The timeline events a run keeps (enough to recompute timings and throughput in SQL).

Dependency-free on purpose: the parse workers and the Pandera model `schemas.mlperf.TrainingEvent` both
read it, and the workers must not pay for importing Pandera.
"""

EVENT_KEYS = frozenset({
    "init_start", "init_stop", "run_start", "run_stop", "block_start", "block_stop",
    "epoch_start", "epoch_stop", "eval_accuracy",
})
