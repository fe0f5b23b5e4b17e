"""The settings of a refresh a test runs in its own process (`pipelines.runner.jobs.refresh(settings, ...)`)."""

from __future__ import annotations


def refresh_settings(**given):
    """The environment's settings (read now) with `given` (setting name → value) over them, loading exactly the
    suites whose rounds are given (`rounds=`, `hpc_rounds=`, ...): none when no rounds are, a refresh of the
    price lists alone."""
    from pipelines.lib.mlperf.suites import SUITES
    from pipelines.settings import load_settings

    return load_settings(suites=[s.name for s in SUITES.values() if s.rounds_setting in given], **given)
