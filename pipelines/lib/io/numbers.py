"""Numbers read from untrusted input (log values, CSV cells): the one reading rule."""

from __future__ import annotations

import math
from typing import Any


def number_or_none(value: Any, *, text: bool = True, finite: bool = False) -> float | None:
    """`value` as a float, or None when it is no number. A boolean is never a number (float(True) is 1.0).

    text: also read numbers written as text (`"12"`, `" 1e3 "`); else only int and float values count.
    finite: NaN and ±inf are None too (else they pass through, for the validation bounds to catch).
    """
    kind = type(value)
    if kind is int:
        try:
            number = float(value)
        except OverflowError:  # JSON integers have no size limit: one past floats is ±inf
            number = math.inf if value > 0 else -math.inf
    elif kind is float:
        number = value
    elif kind is bool or not text:
        return None
    else:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
    if finite and not math.isfinite(number):
        return None
    return number
