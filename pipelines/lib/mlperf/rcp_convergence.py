"""What MLCommons' RCP checker reads from one result log: its batch size, benchmark and convergence point.

The checker reads raw log text: a line is read only when it holds one of `TRIGGERS`, and parsed with
`json.loads` only then. `run_convergence` takes those lines as text (`rcp_lines`), which is exact, or the
project's parsed `LogLine`s, which agree wherever the project's parser keeps every line the checker reads
(a line it refuses, e.g. without `time_ms`, is missing there; on every shared round both agree).
The verdict on a result folder's logs: `rcp.py`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.rcp_semantics import RcpSemantics

TOKEN = ":::MLLOG "
NOT_CONVERGED = 1e9  # the checker's stand-in for the epochs of a run that did not converge
# Every substring on which the checker reads a log line: a line holding none of them is never read.
TRIGGERS = ("global_batch_size", "submission_benchmark", "eval_error", "eval_accuracy", "train_samples", "run_stop")
_TRIGGERS_BYTES = tuple(t.encode() for t in TRIGGERS)


@dataclass(frozen=True)
class RunConvergence:
    """What the checker reads from one result log.

    3.0+ (`per_file_reader`): `gbs` (the last global_batch_size, -1 when none), `benchmark` (the last
    submission_benchmark), `converged` and `value` (the epochs, samples or eval step to converge, rounded
    as the checker rounds them; 1e9 when not converged). Older releases read all logs of a folder in one
    pass: every line mentioning run_stop counts as a run (`stops`), and a run's value may be the previous
    log's (`stops` values of None; `last_value` carries into the next log). `error`: what the checker
    would raise reading this log."""

    gbs: Any
    benchmark: str | None
    converged: bool
    value: float
    stops: tuple[tuple[bool, Any], ...] = ()
    last_value: Any = None
    error: str | None = None


class _Unset:
    """conv_epoch before any eval line: reading it is the checker's UnboundLocalError."""


_UNSET = _Unset()


def rcp_lines(data: bytes) -> list[str]:
    """The token lines of a log the checker may read, cut as it cuts them (from the last `:::MLLOG `,
    stripped; Latin-1, universal newlines): those holding one of `TRIGGERS`, in the log's order. Found
    by searching each trigger, not by walking every line: a log has up to millions of lines and a few
    hundred of these."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    spans = set()
    for trigger in _TRIGGERS_BYTES:
        found = data.find(trigger)
        while found >= 0:
            end = data.find(b"\n", found)
            end = len(data) if end < 0 else end
            spans.add((data.rfind(b"\n", 0, found) + 1, end))
            found = data.find(trigger, end)
    token = TOKEN.encode()
    out = []
    for start, end in sorted(spans):
        cut = data.rfind(token, start, end)
        if cut >= 0:
            line = data[cut:end].decode("latin-1").strip()
            if any(t in line for t in TRIGGERS):
                out.append(line)
    return out


def _line_pairs(lines: Iterable[LogLine | str]) -> Iterable[tuple[str, Callable[[], Any]]]:
    """(text after the token, the parsed JSON object) per line; parsing is lazy: the checker parses a line
    only when it reads it, so an unparsable line matters only there."""
    for line in lines:
        if isinstance(line, str):
            text = line[len(TOKEN):] if line.startswith(TOKEN) else line
            yield text, (lambda text=text: json.loads(text))
        else:
            yield line.full_string[len(TOKEN):], (lambda value=line.value: value)


def run_convergence(lines: Iterable[LogLine | str], semantics: RcpSemantics, ruleset: str,
                    benchmark_hint: str | None = None, bert_train_samples: bool = False) -> RunConvergence:
    """What the checker of `semantics` reads from one log checked against `ruleset`. `lines`: the
    project's parsed MLLOG lines (`parse_log(...).lines`), or the token lines as text (`rcp_lines`),
    which the checker reads even where the project's parser refuses a line. `benchmark_hint`: the result
    folder's name, which releases before 3.0 take as the benchmark."""
    pairs = list(_line_pairs(lines))
    try:
        if semantics.per_file_reader:
            return _read_per_file(pairs, semantics, ruleset, bert_train_samples)
        return _read_pass(pairs, semantics, benchmark_hint, bert_train_samples)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        return RunConvergence(-1, None, False, NOT_CONVERGED, error=f"{type(exc).__name__}: {exc}")


def _is_eval(text: str, semantics: RcpSemantics, use_eval_error: bool) -> bool:
    if semantics.eval_lines == "either":
        return "eval_error" in text or "eval_accuracy" in text
    if semantics.eval_lines == "error_if_any":
        return "eval_error" in text if use_eval_error else "eval_accuracy" in text
    return "eval_accuracy" in text


def _is_run_stop(text: str, obj: Callable[[], Any], semantics: RcpSemantics) -> bool:
    return "run_stop" in text and (not semantics.run_stop_key_checked or obj()["key"] == "run_stop")


def _read_per_file(pairs, semantics: RcpSemantics, ruleset: str, use_train_samples: bool) -> RunConvergence:
    """`read_submission_file` (3.0+)."""
    not_converged, value, bs, benchmark = True, NOT_CONVERGED, -1, None
    conv: Any = _UNSET
    sd_results: dict[Any, dict[Any, Any]] = {}
    for text, obj in pairs:
        if "global_batch_size" in text:
            bs = obj()["value"]
        if "submission_benchmark" in text:
            benchmark = obj()["value"]
            if benchmark != "bert" and use_train_samples:
                use_train_samples = False
        is_eval = _is_eval(text, semantics, False)
        if semantics.stable_diffusion is not None and benchmark == semantics.stable_diffusion and is_eval:
            meta = obj()["metadata"]
            step, metric = meta[semantics.step_unit(ruleset)], meta["metric"]
            sd_results.setdefault(step, {})[metric] = obj()["value"]
        elif benchmark in semantics.samples_count_benchmarks and is_eval:
            conv = obj()["metadata"]["samples_count"]
            obj()["value"]  # noqa: B018 - read by the checker: a line without it fails
        elif not use_train_samples and is_eval:
            conv = round(obj()["metadata"]["epoch_num"], 3)
        elif use_train_samples and "train_samples" in text:
            conv = obj()["value"]
        if _is_run_stop(text, obj, semantics):
            if obj()["metadata"]["status"] == "success":
                if semantics.stable_diffusion is not None and benchmark == semantics.stable_diffusion:
                    conv = min(step for step, result in sd_results.items() if _sd_passes(result, semantics))
                if conv is _UNSET:
                    raise ValueError("UnboundLocalError: conv_epoch read before any eval line")
                not_converged, value = False, conv
            else:
                not_converged, value = True, NOT_CONVERGED
    return RunConvergence(bs, benchmark, not not_converged, value)


def _sd_passes(result: Mapping[Any, Any], semantics: RcpSemantics) -> bool:
    """The stable-diffusion thresholds, short-circuited in order as the checker's `and` is."""
    return all(result[metric] <= threshold if op == "<=" else result[metric] >= threshold
               for metric, op, threshold in semantics.sd_criteria)


def _read_pass(pairs, semantics: RcpSemantics, benchmark: str | None, bert_train_samples: bool) -> RunConvergence:
    """One log's share of the single pass older releases make over a folder (`get_submission_epochs`)."""
    use_train_samples = benchmark == "bert" and bert_train_samples
    use_eval_error = semantics.eval_lines == "error_if_any" and any("eval_error" in text for text, _ in pairs)
    bs, conv, stops = -1, None, []
    for text, obj in pairs:
        if "global_batch_size" in text:
            bs = obj()["value"]
        if not use_train_samples and _is_eval(text, semantics, use_eval_error):
            conv = round(obj()["metadata"]["epoch_num"], 3)
        if use_train_samples and "train_samples" in text:
            conv = obj()["value"]
        if _is_run_stop(text, obj, semantics):
            success = obj()["metadata"]["status"] == "success"
            stops.append((success, conv if success else NOT_CONVERGED))
    converged = bool(stops) and all(s for s, _ in stops)
    value = stops[-1][1] if stops and stops[-1][1] is not None else NOT_CONVERGED
    return RunConvergence(bs, benchmark, converged, value, tuple(stops), conv)
