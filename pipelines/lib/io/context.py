"""The run context: everything `pipelines/lib` takes from the settings rather than as arguments (the warehouse folder,
the limits in force, the hosts whose links may be followed, the secrets to redact, the team catalog and BI mirror).

It is the process's only state of this kind. The settings layer (`pipelines/settings.py:apply`) builds one and
activates it; `activate(context)` used as a context manager restores the one before on exit (a test, an in-process
command of other settings); scoring workers get their parent's when they start. The accessors that read it keep
their homes and names: `paths.warehouse_dir`, `limits.limit`/`share`, `hosts.allowed_hosts`,
`redaction.configured_secrets`/`redact`, `team.team_catalog`/`bi_mirror`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class RunContext:
    """What the plain functions of one process run with. Built checked: a limit out of its range is refused here,
    also in a worker that receives the context."""

    warehouse_dir: Path | None = None  # None: ./warehouse under the current directory (paths.DEFAULT_WAREHOUSE_DIR)
    limits: Mapping[str, float] = field(default_factory=dict)  # limits not named keep their defaults
    allowed_hosts: frozenset[str] = frozenset()
    secrets: frozenset[str] = field(default=frozenset(), repr=False)
    # lib.warehouse.team's TeamCatalog and BiMirror: io is the floor of lib's layers and imports nothing above it
    team_catalog: Any = None
    bi_mirror: Any = None

    def __post_init__(self) -> None:
        checked = _checked_limits(self.limits) if self.limits else {}
        set_field = object.__setattr__  # a frozen dataclass normalises its own fields this way
        set_field(self, "warehouse_dir", Path(self.warehouse_dir).resolve() if self.warehouse_dir else None)
        set_field(self, "limits", MappingProxyType(checked))
        set_field(self, "allowed_hosts", frozenset(h.strip().lower() for h in self.allowed_hosts if h.strip()))
        set_field(self, "secrets", frozenset(self.secrets))

    def __reduce__(self):
        # A read-only mapping does not pickle; rebuilding from the fields checks the limits again in the worker.
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return _rebuilt, (values | {"limits": dict(self.limits)},)


def _checked_limits(values: Mapping[str, float]) -> dict[str, float]:
    # limits.py reads the active context: imported when limits are given, after both modules have loaded
    from pipelines.lib.io.limits import check

    return {name: check(name, float(value)) for name, value in sorted(values.items())}


def _rebuilt(values: dict[str, Any]) -> RunContext:
    return RunContext(**values)


_active = RunContext()
_changing = threading.RLock()  # a change made by one thread never drops another's


class activate:  # noqa: N801 - used as a function: `activate(context)`, or `with activate(context):`
    """Make `context` the active one. As a context manager, the one active before comes back on exit."""

    def __init__(self, context: RunContext) -> None:
        global _active
        with _changing:
            self.previous, _active = _active, context
        self.context = context

    def __enter__(self) -> RunContext:
        return self.context

    def __exit__(self, *exc: object) -> None:
        global _active
        with _changing:
            _active = self.previous


def current() -> RunContext:
    return _active


def amend(**changes: Any) -> activate:
    """Activate the active context with these fields changed (`amend(limits={...})`); as `activate`, a context
    manager that restores the one before."""
    with _changing:
        return activate(dataclasses.replace(_active, **changes))


def add_secrets(values: Iterable[str]) -> None:
    """Add secrets met at run time (a key a resource was given) to the active context, for as long as it is active."""
    global _active
    with _changing:
        new = frozenset(values) - _active.secrets
        if new:
            _active = dataclasses.replace(_active, secrets=_active.secrets | new)
