"""Benchmark: hostile inputs under the default limits (README, "Limits and safety").

    python benchmarks/hostile_inputs.py            # about two minutes

1. A gzip bomb: a results archive of a few MB whose `result_9.txt` is 1 GiB of zeros, parsed by
   a separate process (peak RSS measured there), three ways: as is (over the 512 MiB member limit:
   refused from its header), with no newline and the member limit raised to 2 GiB (refused at the
   4 MiB line limit), and with a newline every 4 KiB and the member limit raised (read to the end,
   line by line). Target: peak RSS under 1.5 GB.
2. A server that sends one byte per second: how long until the download is abandoned
   (default: slower than 10 KiB/s over 60 s). Target: about a minute, no retry.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from test_limits_archive import bomb_archive  # noqa: E402

from pipelines.lib.io.http import fetch_to_file  # noqa: E402
from pipelines.lib.io.retry import FetchError, RetryPolicy  # noqa: E402
from support.hostile_server import HostileServer, drip  # noqa: E402

PARSE = """
import sys, time
from pathlib import Path
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.rules import package_ruleset
from pipelines.lib.mlperf.tables import round_frames
started = time.perf_counter()
frames = round_frames(Path(sys.argv[1]), "v4.1", RoundRules(package_ruleset("v4.1"), package_ruleset("v4.1")))
reasons = frames["quarantine"].filter(frames["quarantine"]["file"].str.ends_with("result_9.txt"))["reason"].to_list()
peak = int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024  # this process only
print(f"{time.perf_counter() - started:.1f} s, peak RSS {peak} MB, "
      f"runs {frames['training_runs'].height}; result_9.txt: {reasons[0] if reasons else 'not quarantined'}")
"""


def bomb(directory: Path) -> None:
    GiB = 1 << 30
    cases = [("1 GiB of zeros, default limits", None, {}),
             ("1 GiB of zeros, no newline, MLPERF_MAX_MEMBER_BYTES=2 GiB", None, {"MLPERF_MAX_MEMBER_BYTES": str(2 * GiB)}),
             ("1 GiB of zeros, a newline every 4 KiB, MLPERF_MAX_MEMBER_BYTES=2 GiB", 4096,
              {"MLPERF_MAX_MEMBER_BYTES": str(2 * GiB)})]
    for title, line, env in cases:
        archive = bomb_archive(directory / "bomb.tar.gz", GiB, line=line)
        print(f"{title} (archive {archive.stat().st_size / 1e6:.1f} MB):")
        proc = subprocess.run([sys.executable, "-c", PARSE, str(archive)], capture_output=True, text=True,
                              env=os.environ | {"PYTHONPATH": str(ROOT)} | env)
        print("  " + (proc.stdout.strip() or proc.stderr.strip().splitlines()[-1]))


def dripping_server(directory: Path) -> None:
    with HostileServer() as server:
        server.route("/slow.tar.gz", drip(total=1 << 20, interval=1.0))
        started = time.monotonic()
        try:
            fetch_to_file(server.url + "/slow.tar.gz", directory / "slow.tar.gz", policy=RetryPolicy())
            outcome = "downloaded?!"
        except FetchError as error:
            outcome = str(error)
        print(f"1 byte/s server: abandoned after {time.monotonic() - started:.1f} s, "
              f"{len(server.requests)} request(s): {outcome}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        bomb(Path(tmp))
        dripping_server(Path(tmp))
