"""The subcommands of `mlperf-warehouse`, one module each, and what they share: the options every
command takes, and checking a value typed on the command line against the values the warehouse
actually holds."""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Sequence
from pathlib import Path


def add_warehouse_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--warehouse-dir", metavar="DIR",
                        help="where the warehouse lives (default: MLPERF_WAREHOUSE_DIR or ./warehouse)")


def warehouse_base(args: argparse.Namespace) -> Path | None:
    """`--warehouse-dir`, resolved; None means MLPERF_WAREHOUSE_DIR or ./warehouse."""
    return Path(args.warehouse_dir).resolve() if args.warehouse_dir else None


def add_allow_external_access(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-external-access", action="store_true",
                        help="let the SQL read and write files, INSTALL/LOAD extensions and use the network")


def limit_flag(name: str):
    """An argparse `type` for a flag that sets the limit `name` for one command (`query --timeout`): the limit's
    range (`lib.io.limits.accepted`), finite, whole where it counts. A bad value is argparse's usage error, which
    names the flag: `argument --timeout: must be a number of seconds above 0 and at most 10,000,000, not 'nan'`."""
    from pipelines.lib.io import limits

    def parse(text: str) -> float:
        try:
            number = float(text)
            if not math.isfinite(number):
                raise ValueError(text)
            return limits.check(name, number)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"must be {limits.describe(name)}, not {text!r}") from None
    return parse


def whole_flag(low: int, high: int):
    """An argparse `type` for a whole number from `low` to `high` (a row count, a port)."""
    def parse(text: str) -> int:
        try:
            number = int(text.strip().replace("_", ""))
        except ValueError:
            number = None
        if number is None or not low <= number <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low:,} to {high:,}, not {text!r}")
        return number
    return parse


class UsageError(Exception):
    """A value given on the command line that does not exist (exit 2, the valid values named)."""


def unknown(kind: str, value: str, valid: Sequence[str], hint: str = "", shown: int = 40) -> UsageError:
    """`unknown benchmark 'gpt-3'; did you mean 'gpt3'? valid: bert, dlrm, gpt3, ...`"""
    valid = list(dict.fromkeys(v for v in valid if v is not None))
    close = difflib.get_close_matches(value.lower(), [v.lower() for v in valid], n=3, cutoff=0.5)
    close = [next(v for v in valid if v.lower() == c) for c in close]
    listed = ", ".join(valid[:shown]) + (f" and {len(valid) - shown} more" if len(valid) > shown else "")
    message = f"unknown {kind} {value!r}"
    if close:
        message += f"; did you mean {' or '.join(repr(c) for c in close)}?"
    message += f"\nvalid {kind}s: {listed or '(none in this warehouse)'}"
    return UsageError(message + (f"\n{hint}" if hint else ""))


def parse_round(text: str) -> str:
    """`4.1` → 'v4.1'; a value that is no round is a usage error (exit 2)."""
    from pipelines.lib.mlperf.rounds import normalize_round

    try:
        return normalize_round(text)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def parse_rounds(text: str) -> list[str]:
    """`v4.1,5.0` → ['v4.1', 'v5.0']."""
    return [parse_round(r) for r in text.split(",") if r.strip()]


def loaded_rounds(con) -> list[str]:
    from pipelines.lib.mlperf.rounds import round_sort_key

    rounds = [r for (r,) in con.execute("select distinct round from fct_training_result").fetchall()]
    return sorted(rounds, key=round_sort_key)


def check_round(con, round_version: str) -> str:
    """The round, if the warehouse holds it; else a UsageError naming the loaded rounds."""
    rounds = loaded_rounds(con)
    if round_version not in rounds:
        raise UsageError(f"round {round_version} is not loaded in this warehouse\n"
                         f"loaded rounds: {', '.join(rounds) or '(none)'}\n"
                         f"`mlperf-warehouse refresh --rounds {round_version}` loads it")
    return round_version


def check_benchmark(con, round_version: str, benchmark: str) -> str:
    """The benchmark (matched case-insensitively), if the round has results for it."""
    benchmarks = [b for (b,) in con.execute(
        "select distinct benchmark from fct_training_result where round = ? order by 1", [round_version]).fetchall()]
    match = next((b for b in benchmarks if b.lower() == benchmark.strip().lower()), None)
    if match is None:
        raise unknown("benchmark", benchmark, benchmarks, f"(the benchmarks of {round_version})")
    return match
