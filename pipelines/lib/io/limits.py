"""Resource limits for untrusted input, each configurable by an environment variable.

One place for every cap, so the README's "Limits and safety" table and the code agree. Values are
read when asked for (not at import), so tests and operators can change them per process.
"""

from __future__ import annotations

import os

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

# name -> (environment variable, default, what it bounds)
SETTINGS: dict[str, tuple[str, float, str]] = {
    "max_archive_bytes": ("MLPERF_MAX_ARCHIVE_BYTES", 1 * GiB, "bytes of one results or rules archive download"),
    "max_offer_bytes": ("MLPERF_MAX_AWS_OFFER_BYTES", 8 * GiB, "bytes of one AWS offer file download"),
    "max_response_bytes": ("MLPERF_MAX_RESPONSE_BYTES", 256 * MiB, "bytes of any other download or response"),
    "min_rate_bytes": ("MLPERF_MIN_RATE_BYTES_PER_SECOND", 10 * KiB, "slowest accepted transfer rate"),
    "min_rate_seconds": ("MLPERF_MIN_RATE_SECONDS", 60, "window over which the rate is measured"),
    "deadline_seconds": ("MLPERF_DOWNLOAD_DEADLINE_SECONDS", 1800, "wall time of one download, retries included"),
    "max_member_bytes": ("MLPERF_MAX_MEMBER_BYTES", 512 * MiB, "decompressed bytes of one archive member"),
    "max_json_member_bytes": ("MLPERF_MAX_JSON_MEMBER_BYTES", 16 * MiB, "bytes of one JSON member (read whole)"),
    "max_archive_total_bytes": ("MLPERF_MAX_ARCHIVE_TOTAL_BYTES", 32 * GiB, "decompressed bytes of a whole archive"),
    "max_line_bytes": ("MLPERF_MAX_LINE_BYTES", 4 * MiB, "bytes of one line of a result log"),
    "max_json_depth": ("MLPERF_MAX_JSON_DEPTH", 256, "nesting depth of any JSON document"),
    "max_config_bytes": ("MLPERF_MAX_CONFIG_BYTES", 1 * MiB,
                         "bytes of a result log's configuration lines before run_start (read for its precision)"),
    "max_rule_file_bytes": ("MLPERF_MAX_RULE_FILE_BYTES", 1 * MiB, "bytes of one rule file of a rules archive"),
    "max_rule_files_bytes": ("MLPERF_MAX_RULE_FILES_BYTES", 32 * MiB, "bytes of all rule files of a rules archive"),
    "max_rules_download_bytes": ("MLPERF_MAX_RULES_DOWNLOAD_BYTES", 16 * MiB,
                                 "bytes of one rules archive download (real ones: under 200 KB)"),
    "max_rules_archive_total_bytes": ("MLPERF_MAX_RULES_ARCHIVE_TOTAL_BYTES", 64 * MiB,
                                      "decompressed bytes of a whole rules archive, every member counted"),
    "scoring_deadline_seconds": ("MLPERF_SCORING_DEADLINE_SECONDS", 1800,
                                 "wall time to parse and score one round (its worker processes are ended)"),
    "query_timeout_seconds": ("MLPERF_QUERY_TIMEOUT_SECONDS", 60, "wall time of one `query` statement"),
    "query_memory_bytes": ("MLPERF_QUERY_MEMORY_BYTES", 2 * GiB, "memory one `query` or `shell` session may use"),
    # A share, not a size: read with `share`.
    "max_shrink": ("MLPERF_MAX_SHRINK", 0.25,
                   "share of a round's counted results that may vanish against the published build"),
}
SHARES = frozenset({"max_shrink"})


def _setting(name: str) -> tuple[str, float, str]:
    """(environment variable, value, its text) of a setting: the variable if set, else the default."""
    variable, default, _ = SETTINGS[name]
    text = os.environ.get(variable, "").strip().replace("_", "")
    if not text:
        return variable, default, text
    try:
        return variable, float(text), text
    except ValueError as exc:
        raise ValueError(f"{variable}={text!r} is not a number") from exc


def limit(name: str) -> int:
    """The current value of a limit: its environment variable (a number; `1e9` allowed), else the default."""
    if name in SHARES:
        raise KeyError(f"{name} is a share: read it with share()")
    variable, value, text = _setting(name)
    if not value > 0:
        raise ValueError(f"{variable} must be positive, got {text!r}")
    return int(value)


def share(name: str) -> float:
    """The current value of a share setting (between 0 and 1): its environment variable, else the default."""
    if name not in SHARES:
        raise KeyError(f"{name} is not a share: read it with limit()")
    variable, value, text = _setting(name)
    if not 0 <= value <= 1:
        raise ValueError(f"{variable} must be a share between 0 and 1, not {text!r}")
    return value


def human(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size:.0f} {unit}"
    return f"{n:.0f} bytes"
