"""Resource limits for untrusted input: each one defined here, once (name, default, what it bounds).

The values in force are the process's: `configure` installs them (the settings layer, `pipelines/settings.py`,
reads them from `MLPERF_<NAME>` once and passes them here; parse workers get them from their parent), and
`limit`/`share` read them. This module reads no environment.
"""

from __future__ import annotations

from collections.abc import Mapping

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
_values: dict[str, float] = {}


def variable(name: str) -> str:
    """The environment variable of a setting, a limit or any other (for messages: the settings layer reads it)."""
    return ENV_PREFIX + name.upper()


def check(name: str, value: float) -> float:
    """`value` if it is valid for the limit `name`, else ValueError saying why."""
    if name not in LIMITS:
        raise KeyError(f"no limit named {name!r}")
    if name in SHARES and not 0 <= value <= 1:
        raise ValueError(f"{variable(name)} must be a share between 0 and 1, not {value!r}")
    if name not in SHARES and not value > 0:
        raise ValueError(f"{variable(name)} must be positive, not {value!r}")
    return value


def configure(values: Mapping[str, float]) -> None:
    """Install the limits in force in this process (unnamed ones keep their defaults)."""
    checked = {name: check(name, float(value)) for name, value in values.items()}
    _values.clear()
    _values.update(checked)


def current() -> dict[str, float]:
    """The limits set by `configure` (for a worker process to install the same)."""
    return dict(_values)


def _value(name: str) -> float:
    if name not in LIMITS:
        raise KeyError(f"no limit named {name!r}")
    return _values.get(name, LIMITS[name][0])


def limit(name: str) -> int:
    """The limit in force: the configured value, else the default."""
    if name in SHARES:
        raise KeyError(f"{name} is a share: read it with share()")
    return int(_value(name))


def share(name: str) -> float:
    """The share in force (between 0 and 1): the configured value, else the default."""
    if name not in SHARES:
        raise KeyError(f"{name} is not a share: read it with limit()")
    return _value(name)


def human(n: float) -> str:
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size and n % size == 0:
            return f"{n // size:.0f} {unit}"
    return f"{n:.0f} bytes"
