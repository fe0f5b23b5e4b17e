"""Resource limits for untrusted input: each one defined here, once (name, default, what it bounds).

The values in force are the active run context's (`context.py`: the settings layer, `pipelines/settings.py`, reads
them from `MLPERF_<NAME>` once and builds it; parse workers get their parent's), and `limit`/`share` read them.
This module reads no environment.
"""

from __future__ import annotations

from pipelines.lib.io import context

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
ENV_PREFIX = "MLPERF_"  # every setting's environment variable is ENV_PREFIX + its name in capitals

# name -> (default, what it bounds). The environment variable of each is MLPERF_<NAME>.
LIMITS: dict[str, tuple[float, str]] = {
    "max_archive_bytes": (1 * GiB, "bytes of one results archive download (counted on the wire and decoded)"),
    "max_aws_offer_bytes": (8 * GiB, "bytes of one AWS offer file download"),
    "max_response_bytes": (256 * MiB, "bytes of any other download or response (price pages, GitHub API)"),
    "min_rate_bytes_per_second": (10 * KiB, "slowest accepted transfer rate; slower over the window: abandoned"),
    "min_rate_seconds": (60, "window over which the transfer rate is measured"),
    "download_deadline_seconds": (1800, "wall time of one download, retries and back-off included"),
    "max_member_bytes": (512 * MiB, "decompressed bytes of one archive member (larger: quarantined unread)"),
    "max_json_member_bytes": (16 * MiB, "bytes of one JSON member (systems files, scaling.json), read whole"),
    "max_archive_total_bytes": (32 * GiB, "decompressed bytes of a whole results archive"),
    # An Inference archive holds every detail log and the submitters' code: gigabytes per round, of which only
    # the LoadGen summaries and systems files are read (the rest is streamed past).
    "max_inference_archive_bytes": (16 * GiB, "bytes of one MLPerf Inference results archive download"),
    "max_inference_archive_total_bytes": (256 * GiB, "decompressed bytes of a whole MLPerf Inference archive"),
    "max_line_bytes": (4 * MiB, "bytes of one line of a result log (longer: the log is quarantined)"),
    # Real LoadGen lines: under 200 bytes in a summary, under 3 KB in a detail log (v5.1); what is kept of them
    # waits until the round's every result is read.
    "max_loadgen_line_bytes": (64 * KiB, "bytes of one line of an Inference LoadGen summary or detail log "
                                         "(longer: that log is not read, a quarantine row says why)"),
    "max_json_depth": (256, "nesting depth of any JSON document"),
    "max_config_bytes": (1 * MiB, "bytes of a result log's configuration lines before run_start (read for its precision)"),
    "max_rule_file_bytes": (1 * MiB, "bytes of one rule file of a rules archive"),
    "max_rule_files_bytes": (32 * MiB, "bytes of all rule files of a rules archive"),
    "max_rules_download_bytes": (16 * MiB, "bytes of one rules archive download (real ones: under 200 KB)"),
    "max_rules_archive_total_bytes": (64 * MiB, "decompressed bytes of a whole rules archive, every member counted"),
    "max_parse_workers": (4, "scoring processes of a refresh, at most (never more than the machine's cores)"),
    "scoring_deadline_seconds": (1800, "wall time to parse and score one round (its worker processes are ended)"),
    "query_timeout_seconds": (60, "wall time of one `query` statement"),
    "query_memory_bytes": (2 * GiB, "memory one `query` or `shell` session may use"),
    "max_shrink": (0.25, "share of a round's counted results that may vanish against the published build"),
}
SHARES = frozenset({"max_shrink"})  # a share between 0 and 1, not a size: read with `share`

# The values each limit accepts: (lowest, highest, whole). Above the highest a limit no longer bounds anything
# (1e400 reads as infinity; `int()` of it fails far from the setting), and a count must be whole (a worker count
# of 0.5 would become 0). Chosen by the name's ending, so a new limit gets its range without an entry here.
PiB = 1 << 50
MAX_SECONDS = 10_000_000  # about 116 days: beyond any download, scoring or query anyone waits for
_RANGES: dict[str, tuple[float, float, bool]] = {
    "max_json_depth": (1, 100_000, True),
    "max_parse_workers": (1, 1024, True),
    # a query process needs some memory of its own beyond DuckDB's (query.py: the process limit)
    "query_memory_bytes": (16 * MiB, PiB, True),
}


def accepted(name: str) -> tuple[float, float, bool]:
    """(lowest, highest, whole number) of the values the limit `name` accepts."""
    if name not in LIMITS:
        raise KeyError(f"no limit named {name!r}")
    if name in _RANGES:
        return _RANGES[name]
    if name in SHARES:
        return 0, 1, False
    if name.endswith(("_bytes", "_bytes_per_second")):
        return 1, PiB, True
    if name.endswith("_seconds"):
        return 0, MAX_SECONDS, False  # above 0 (a zero window or deadline would stop everything)
    return 0, 1e15, False


def describe(name: str) -> str:
    """The accepted values of the limit `name`, for messages and the settings page."""
    low, high, whole = accepted(name)
    if name in SHARES:
        return "a share between 0 and 1"
    unit = " of bytes" if name.endswith("_bytes") else " of bytes per second" if name.endswith("_bytes_per_second") \
        else " of seconds" if name.endswith("_seconds") else ""

    def shown(n: float) -> str:
        return f"{n:,.0f}" if n < KiB or not unit.startswith(" of bytes") else f"{human(n)} ({n:,.0f})"
    lowest = "above 0 and at most" if low == 0 else f"from {shown(low)} to"
    return f"{'a whole number' if whole else 'a number'}{unit} {lowest} {shown(high)}"


def check(name: str, value: float, given: object = None) -> float:
    """`value` if it is valid for the limit `name`, else ValueError naming its variable and what it accepts
    (and `given`, the text `value` was read from, where there was one)."""
    low, high, whole = accepted(name)
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    shown = repr(value if given is None else given)
    if name in SHARES:
        if number is None or not low <= number <= high:  # NaN fails every comparison
            raise ValueError(f"{variable(name)} must be a share between 0 and 1, not {shown}")
        return value
    if number is None or not number > 0:  # NaN too
        raise ValueError(f"{variable(name)} must be positive: {describe(name)}, not {shown}")
    if not low <= number <= high or (whole and number != int(number)):
        raise ValueError(f"{variable(name)} must be {describe(name)}, not {shown}")
    return value


def variable(name: str) -> str:
    """The environment variable of a setting, a limit or any other (for messages: the settings layer reads it)."""
    return ENV_PREFIX + name.upper()


def _value(name: str) -> float:
    if name not in LIMITS:
        raise KeyError(f"no limit named {name!r}")
    return context.current().limits.get(name, LIMITS[name][0])


def limit(name: str) -> int | float:
    """The limit in force: the configured value, else the default (a whole number where the limit counts,
    seconds as given: a deadline of 0.5 s stays 0.5 s)."""
    if name in SHARES:
        raise KeyError(f"{name} is a share: read it with share()")
    value = _value(name)
    return int(value) if accepted(name)[2] else value


def share(name: str) -> float:
    """The share in force (between 0 and 1): the configured value, else the default."""
    if name not in SHARES:
        raise KeyError(f"{name} is not a share: read it with limit()")
    return _value(name)


def human(n: float) -> str:
    for unit, size in (("PiB", PiB), ("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size:.0f} {unit}"
    return f"{n:.0f} bytes"
