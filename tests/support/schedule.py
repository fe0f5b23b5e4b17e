"""The order the whole suite's modules are handed to the pytest-xdist workers (`--dist loadfile
--no-loadscope-reorder` hands whole modules out in collection order, each to the next worker with little left):
longest first, so the run ends on short modules instead of one worker finishing a long one alone, and the
modules that read the shared build only once the other workers have had work for as long as the build takes.

How long a module takes comes from `tests/module_seconds.json`, measured by
`python benchmarks/suite_cpu.py --write-module-seconds`; a module it does not list yet counts as the longest
(it runs early, where a wrong guess costs least)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

MODULE_SECONDS = Path(__file__).resolve().parents[1] / "module_seconds.json"


def measured_seconds(path: Path = MODULE_SECONDS) -> dict[str, float]:
    """Module (its node id, `tests/...py`) → its wall seconds in the last measured whole-suite run."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def module_order(tests: Mapping[str, int], readers: set[str], seconds: dict[str, float], workers: int) -> list[str]:
    """The modules of `tests` (module → its number of tests) in the order to run them: the reader of the shared
    build with the most tests first (its worker builds it: whichever reader asks first does), then the longest
    first, a reader only once the modules handed out before it add up to the build's time on each worker (the
    other workers' own, and as much again for the modules they hold queued). `seconds`: measured module times;
    one not measured counts as the longest."""
    modules = sorted(tests)
    longest = max(seconds.values(), default=1.0)
    estimate = {m: seconds.get(m, longest) for m in modules}
    pending = sorted(modules, key=lambda m: (-estimate[m], m))
    order: list[str] = []
    hold = 0.0
    if readers & set(modules):
        builder = max(readers & set(modules), key=lambda m: (tests[m], m))
        pending.remove(builder)
        order.append(builder)
        hold = estimate[builder] * workers if workers > 1 else 0.0
    handed = 0.0
    while pending:
        ready = handed >= hold
        chosen = next((m for m in pending if ready or m not in readers), pending[0])
        pending.remove(chosen)
        order.append(chosen)
        handed += estimate[chosen]
    return order
