"""The fast paths of log parsing give exactly what the line-by-line parser gives: the same lines
(every field), the same parse errors, the same line count, for plain logs and for every kind of
line that sends a log back to the line-by-line path."""

from __future__ import annotations

import io
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.lib.mlperf.archive import read_log_stream
from pipelines.lib.mlperf.mllog import MLLOG, parse_log, token_lines


def _line_by_line(data: bytes):
    """parse_log as it was before the fast path: each token line through `MLLOG.parse_line`."""
    lines, total = token_lines(data, MLLOG.token)
    parsed, errors = [], []
    for lineno, line in enumerate(lines):
        try:
            parsed.append(MLLOG.parse_line(lineno, line))
        except ValueError as exc:
            errors.append((line, str(exc)))
        except (KeyError, TypeError) as exc:
            errors.append((line, f"missing field {exc}"))
    return parsed, errors, total


def _fields(lines):
    return [(line.full_string, line.timestamp, line.key, json.dumps(line.value, sort_keys=True, default=repr),
             line.lineno, line.time_ms) for line in lines]


def _assert_same(data: bytes):
    fast = parse_log(data, MLLOG)
    parsed, errors, total = _line_by_line(data)
    assert _fields(fast.lines) == _fields(parsed)
    assert fast.errors == errors
    assert fast.total_lines == total
    assert all(type(a.timestamp) is type(b.timestamp) for a, b in zip(fast.lines, parsed, strict=False))


def _mllog(key="run_start", time_ms=1_700_000_000_000, value=None, metadata=None, prefix=""):
    body = {"namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key, "value": value,
            "metadata": metadata if metadata is not None else {"file": "train.py", "lineno": 1}}
    return prefix + ":::MLLOG " + json.dumps(body)


PLAIN = [_mllog("init_start"), "not a log line", _mllog("run_start", 1_700_000_000_001),
         _mllog("eval_accuracy", 1_700_000_000_002.5, 0.7, {"epoch_num": 1}), _mllog("run_stop", 1_700_000_000_003)]

ODD_LINES = {
    "string time": _mllog(time_ms="1700000000000"),
    "boolean time": _mllog(time_ms=True),
    "null time": _mllog(time_ms=None),
    "NaN value (stdlib json only)": ':::MLLOG {"time_ms": 1, "key": "k", "value": NaN, "metadata": {}}',
    "infinite time": ':::MLLOG {"time_ms": 1e400, "key": "k", "value": 1, "metadata": {}}',
    "no metadata": ':::MLLOG {"time_ms": 1, "key": "k", "value": 1}',
    "not an object": ':::MLLOG [1, 2, 3]',
    "broken JSON": ':::MLLOG {"time_ms": 1, "key": ',
    "nothing after the token": ":::MLLOG   ",
    "deep nesting": ':::MLLOG {"time_ms": 1, "key": "k", "value": ' + "[" * 40 + "]" * 40 + ', "metadata": {}}',
    "two tokens on a line": "rank 0: :::MLLOG garbage :::MLLOG " + json.dumps(
        {"time_ms": 5, "key": "k", "value": 1, "metadata": {}}),
    "rank prefix and trailing spaces": _mllog(prefix="  3: ") + "   \t",
    "latin-1 bytes": _mllog(value="caf\u00e9"),
}


def test_plain_log_parses_as_line_by_line():
    _assert_same("\n".join(PLAIN).encode())
    _assert_same(("\r\n".join(PLAIN) + "\r\n").encode())


@pytest.mark.parametrize("odd", sorted(ODD_LINES))
def test_a_log_with_an_odd_line_parses_as_line_by_line(odd):
    lines = [*PLAIN[:2], ODD_LINES[odd], *PLAIN[2:]]
    data = "\n".join(lines).encode("latin-1")
    _assert_same(data)


def test_a_filtered_log_from_the_archive_reader_parses_as_line_by_line():
    """What the workers get: the archive reader's kept lines (and configuration lines), counted."""
    raw = "\n".join(["precision: bf16", *PLAIN, *ODD_LINES.values(), "done"]).encode("latin-1") + b"\n"
    filtered = read_log_stream(io.BytesIO(raw), "result_0.txt", 1 << 20)
    assert not isinstance(filtered, str)
    assert filtered.physical_lines == raw.count(b"\n")
    _assert_same(filtered)


line_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False),
                        st.text(max_size=5), st.lists(st.integers(), max_size=3))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.builds(_mllog, st.sampled_from(["run_start", "run_stop", "eval_accuracy", "x"]),
              st.one_of(st.integers(0, 2**53), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4),
                        st.none(), st.booleans()),
              line_values),
    st.sampled_from(sorted(ODD_LINES.values())),
    st.text(max_size=20).filter(lambda t: "\n" not in t and "\r" not in t),
), max_size=12))
def test_any_mix_of_lines_parses_as_line_by_line(lines):
    _assert_same("\n".join(lines).encode("utf-8"))


def test_the_plain_log_takes_the_fast_path_and_odd_ones_do_not():
    from pipelines.lib.mlperf.mllog import _parse_mllog_lines

    plain, _ = token_lines("\n".join(PLAIN).encode(), MLLOG.token)
    assert _parse_mllog_lines(plain) is not None
    for odd in ("string time", "boolean time", "NaN value (stdlib json only)", "no metadata", "deep nesting"):
        lines, _ = token_lines("\n".join([*PLAIN, ODD_LINES[odd]]).encode(), MLLOG.token)
        assert _parse_mllog_lines(lines) is None, odd


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([b"\r\n", b"\r", b"\n", b"a", b":: MLLOG {}", b" "]), max_size=40))
def test_line_feeds_are_universal_newlines_whichever_ending_mix(pieces):
    """Each \\r\\n and each lone \\r becomes one line feed, whether the buffer has only \\r\\n endings (the fast
    path) or also lone carriage returns."""
    import re

    from pipelines.lib.mlperf.archive import line_feeds

    buffer = b"".join(pieces)
    assert line_feeds(buffer) == re.sub(rb"\r\n?", b"\n", buffer)
