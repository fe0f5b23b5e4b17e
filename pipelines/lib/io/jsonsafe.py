"""JSON parsing with a nesting-depth cap, so a hostile document is a ValueError, not a RecursionError; and JSON
writing that is strict, so what users get parses everywhere.

`loads_bounded` accepts exactly what `json.loads` accepts (orjson first, for speed), except
documents nested deeper than `MLPERF_MAX_JSON_DEPTH` (default 256; real MLPerf and price
documents stay under 10). `dumps_strict` writes NaN and ±Infinity as null.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal

import orjson

from pipelines.lib.io.limits import limit

# Strings are found after their escapes are dropped (`\\` pairs, then `\"`): a string is then `"[^"]*"`, which a
# regular expression scans in linear time (the pattern with escapes inside backtracks quadratically on an
# unterminated string of escaped quotes)
_STRING = re.compile(r'"[^"]*"')
_BRACKET = re.compile(r"[\[\]{}]")


class JSONTooDeep(ValueError):
    pass


def json_depth_over(text: str | bytes, max_depth: int) -> bool:
    """True if brackets outside strings nest deeper than `max_depth`."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        text = bytes(text).decode("utf-8", "replace")
    # Cheap bound first: fewer opening brackets than the cap cannot nest deeper than it.
    if text.count("[") + text.count("{") <= max_depth:
        return False
    depth = 0
    unescaped = text.replace("\\\\", "").replace('\\"', "")
    for match in _BRACKET.finditer(_STRING.sub('""', unescaped)):
        if match.group() in "[{":
            depth += 1
            if depth > max_depth:
                return True
        else:
            depth -= 1
    return False


def check_depth(text: str | bytes, max_depth: int | None = None) -> None:
    max_depth = max_depth or limit("max_json_depth")
    if json_depth_over(text, max_depth):
        raise JSONTooDeep(f"JSON nested deeper than {max_depth} levels (MLPERF_MAX_JSON_DEPTH)")


def loads_bounded(text: str | bytes, max_depth: int | None = None):
    """`json.loads` (orjson first) with the depth cap; raises ValueError for anything unparseable."""
    check_depth(text, max_depth)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text)
    except RecursionError as exc:  # belt and braces: the depth check should have caught it
        raise JSONTooDeep("JSON nested too deeply to parse") from exc


_SPECIAL = b'"[]{}'
_NOT_SPECIAL = bytes(c for c in range(256) if c not in _SPECIAL)
_FOLD = bytes.maketrans(b"{}", b"[]")


class DepthGuard:
    """Follows the nesting depth of a JSON byte stream fed in chunks, at C speed (for streams
    parsed incrementally, e.g. the multi-GB AWS offer file, whose parser needs memory quadratic
    in the depth). Raises JSONTooDeep once brackets outside strings may nest deeper than the cap.

    Per chunk: escaped backslashes and quotes are dropped, then everything but quotes and
    brackets; text between quotes is a string; matched pairs are removed pass by pass. The bound
    used (deeper end of the chunk + passes needed) is never below the true depth."""

    def __init__(self, max_depth: int | None = None) -> None:
        self.max_depth = max_depth or limit("max_json_depth")
        self.depth = 0
        self.in_string = False
        self.carry = b""

    def feed(self, data: bytes) -> None:
        data = self.carry + bytes(data)
        body = data.rstrip(b"\\")
        run = len(data) - len(body)
        self.carry = b"\\" if run % 2 else b""  # a lone backslash escapes the next chunk's first byte
        reduced = body.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_SPECIAL)
        if self.in_string:
            reduced = b'"' + reduced
        parts = reduced.split(b'"')
        self.in_string = len(parts) % 2 == 0
        outside = b"".join(parts[0::2]).translate(_FOLD)
        passes = 0
        while b"[]" in outside:
            passes += 1
            if passes > self.max_depth:
                break
            outside = outside.replace(b"[]", b"")
        closers = len(outside) - len(outside.lstrip(b"]"))
        end = max(0, self.depth - closers + outside.count(b"["))
        if max(self.depth, end) + passes > self.max_depth:
            raise JSONTooDeep(f"JSON nested deeper than {self.max_depth} levels (MLPERF_MAX_JSON_DEPTH)")
        self.depth = end


def finite(value):
    """`value` with every NaN and ±Infinity (float or Decimal, at any depth of lists, tuples and dicts) as None:
    what strict JSON can hold (`json.dumps` would write `NaN`, which JSON parsers other than Python's refuse)."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind in (str, int, bool) or value is None:
        return value
    if isinstance(value, dict):
        return {key: finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(item) for item in value]
    if isinstance(value, Decimal):
        return value if value.is_finite() else None
    if isinstance(value, float):  # a subclass of float
        return value if math.isfinite(value) else None
    return value


def dumps_strict(value, **kwargs) -> str:
    """JSON every parser reads: non-finite numbers as null (`finite`), `allow_nan=False` as the proof; other
    values JSON has no type for (dates, Decimals, UUIDs) as their text unless `default` says otherwise."""
    kwargs.setdefault("default", str)
    return json.dumps(finite(value), allow_nan=False, **kwargs)
