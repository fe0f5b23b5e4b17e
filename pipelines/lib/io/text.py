"""Upstream text is text: no terminal or spreadsheet gets to interpret it.

- `clean`: C0 and C1 control characters (ESC, BEL, NUL, the OSC introducer U+009D, ...) are removed from
  every text value the warehouse stages; the raw bytes stay only in the downloaded source file.
- `visible`: what a terminal shows of a text that still holds one (e.g. built in SQL): escaped, `\\x1b`.
- `neutralised`: a CSV cell that a spreadsheet would read as a formula (starting with `=`, `+`, `-`, `@`,
  tab or carriage return) gets a leading apostrophe, which spreadsheets show as text.
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
CONTROL_PATTERN = r"[\x00-\x1f\x7f-\x9f]"  # the same, for Polars and DuckDB regular expressions
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def clean(text: str) -> str:
    return CONTROL.sub("", text)


def visible(text: str) -> str:
    """Control characters as escapes (`\\x1b`); newlines and tabs as spaces."""
    return CONTROL.sub(lambda m: " " if m.group() in "\n\t\r" else f"\\x{ord(m.group()):02x}", text)


def neutralised(value):
    """A CSV cell a spreadsheet takes as text (strings starting like a formula get a leading `'`)."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA_START) else value
