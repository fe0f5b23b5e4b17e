"""What a refresh did, as a table a person reads: one line per step, what happened to the warehouse,
and the fix once at the end. Plain data and text: the Dagster runner fills it in."""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass, field

from pipelines.lib.io.paths import published_db
from pipelines.lib.mlperf.suites import SUITES, TRAINING, Suite
from pipelines.lib.warehouse.coverage import render_coverage

WARNING_PREFIX = "warning: "
TABLE_WIDTH = 100
FAILURE_LINE = 159


@dataclass
class StepOutcome:
    name: str
    ok: bool
    seconds: float
    detail: str
    warning: bool = False  # passed, with something a person should look at (a WARN-severity check)
    unreachable: bool = False  # failed because the source could not be reached at all
    suite: str | None = None  # the MLPerf suite of a results step


@dataclass
class RefreshSummary:
    steps: list[StepOutcome] = field(default_factory=list)
    published: bool = False
    coverage: list[dict] = field(default_factory=list)  # per round, from the published warehouse

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.steps)

    def render(self) -> str:
        """The summary table: one line per step (a failure on one line under 160 characters, other
        details wrapped to 100 columns), what happened to the warehouse, and the fix once at the end."""
        width = max((len(s.name) for s in self.steps), default=10)
        lines = [f"{'step':<{width}}  {'result':<6}  {'secs':>5}  detail"]
        for s in self.steps:
            result = "FAILED" if not s.ok else "warn" if s.warning else "ok"
            head = f"{s.name:<{width}}  {result:<6}  {s.seconds:>5.1f}  "
            detail = " ".join(s.detail.split())
            if not s.ok:
                lines.append(clip(head + detail, FAILURE_LINE))
            else:
                lines += wrap(head, detail, TABLE_WIDTH)
        if self.coverage:
            lines.append("coverage per round:")
            lines += [wrapped for line in render_coverage(self.coverage) for wrapped in wrap("  ", line, TABLE_WIDTH)]
        lines.append(f"warehouse: {self._verdict()}")
        lines += [wrapped for hint in self._hints() for wrapped in wrap("fix: ", hint, TABLE_WIDTH)]
        return "\n".join(lines)

    def _verdict(self) -> str:
        target = published_db()
        failed = [s.name for s in self.steps if not s.ok]
        warned = [s.name.removeprefix("check ") for s in self.steps if s.ok and s.warning]
        if self.published:
            verdict = "published"
            if failed:
                verdict += f"; previous data kept for: {', '.join(failed)}"
            if warned:
                verdict += f"; warnings: {', '.join(warned)}"
        elif any(s.name == "warehouse" and s.ok for s in self.steps):
            verdict = "unchanged (no input changed)"
        elif target.exists():
            verdict = "NOT published; the previous build stays published"
        else:
            verdict = "NOT published; no warehouse published yet"
        return f"{verdict}\n  {target}"

    def _hints(self) -> list[str]:
        """The fix for sources that could not be reached, named once per kind of source (each line is
        rendered after "fix: ")."""
        unreachable = [s for s in self.steps if not s.ok and s.unreachable]
        hints = [results_hint(SUITES[name]) for name in SUITES if any(s.suite == name for s in unreachable)]
        if any(s.name.startswith("prices") for s in unreachable):
            hints.append("--no-prices skips the cloud price lists (MLPERF_AZURE_PRICES_URL and the like name mirrors)")
        return hints


def results_hint(suite: Suite) -> str:
    """The fix for a suite whose results archives could not be reached: its own setting, flag and file name."""
    example = f"file:///data/{suite.repository}_{{version}}.tar.gz"
    hint = f"offline or behind a mirror? set {suite.results_flag} or {suite.results_variable}, e.g. {example}"
    return hint if suite is TRAINING else f"{hint} (or leave {suite.label} out of --suites)"


# Error classes and message parts that mean the source could not be reached at all (a mirror or
# --no-prices is the fix, not a retry).
UNREACHABLE_CLASSES = frozenset({"ConnectionError", "ConnectTimeout", "ReadTimeout", "Timeout", "ConnectionRefusedError",
                                 "gaierror", "NameResolutionError"})
UNREACHABLE_CAUSES = ("host not found", "connection refused", "timed out", "ConnectionError", "Timeout")


def is_unreachable(class_names: list[str], messages: list[str]) -> bool:
    """Whether an error chain (its class names and raw messages, outermost first) says the source
    could not be reached."""
    return bool(UNREACHABLE_CLASSES.intersection(class_names)) or any(
        cause in message for message in messages for cause in UNREACHABLE_CAUSES)


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def wrap(head: str, detail: str, width: int) -> list[str]:
    """`head` + `detail`, continued on indented lines so that no line passes `width` columns. Lines break
    between words, not at hyphens: a flag, system or file name stays whole unless it alone is too long."""
    room = max(width - len(head), 30)
    parts = textwrap.wrap(detail, room, break_long_words=True, break_on_hyphens=False) or [""]
    return [head + parts[0]] + [" " * len(head) + part for part in parts[1:]]


_URL = re.compile(r"(?:https?|file)://[^\s'\"()]+")


def _short_url(match: re.Match) -> str:
    """A URL without its query string (it may hold a key) and, when long, without its middle."""
    whole = match.group(0)
    url = whole.rstrip(":,;.")
    trail = whole[len(url):]
    url = url.split("?", 1)[0]
    if len(url) > 72:
        scheme, _, rest = url.partition("://")
        host, _, path = rest.partition("/")
        url = f"{scheme}://{host}/…/{([part for part in path.split('/') if part] or [''])[-1]}"
    return url + trail


def readable_error(message: str, cls_name: str | None = None) -> str:
    """One line a person can act on: no module path or class name in front, URLs shortened."""
    text = " ".join((message or "").split())
    if cls_name:
        text = re.sub(rf"^(?:[A-Za-z_]\w*\.)*{re.escape(cls_name)}: ", "", text)
    text = _URL.sub(_short_url, text)
    return clip(text, 150) or cls_name or "failed"


def check_detail(blocking: bool, metadata: dict) -> str:
    """A failed asset check's line: its own `summary` when it has one, else its non-empty metadata."""
    summary = metadata.get("summary")  # a check's own line for a person, when it has one
    shown = [str(summary)] if summary is not None else [
        _shown(k, v) for k, v in metadata.items() if v not in (0, "", None, {}, [])]
    return clip(f"{'failed: ' if blocking else WARNING_PREFIX}{'; '.join(shown)}", 500)


def _shown(key: str, value) -> str:
    if isinstance(value, dict):
        return f"{key}: " + ", ".join(f"{k} ({v})" for k, v in value.items())
    return f"{key} {value:.3g}" if isinstance(value, float) else f"{key} {value}"
