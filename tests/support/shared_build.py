"""Every shared round (Training, HPC and Inference), with the shared price lists, refreshed ONCE per pytest run
over loopback HTTP (as a user's first refresh does) and read by every test that needs it, whichever pytest-
xdist worker runs it: the first worker to ask builds it under a file lock in the run's common temp folder, the
others wait and reuse it. Tests only read the result; one that needs to refresh again works on a copy
(`copy_of`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.mlperf.suites import HPC, INFERENCE, SUITES, TRAINING, Suite
from support.github import serve_logging_repository
from support.http_server import LoopbackServer
from support.paths import SHARED_MLPERF, copy_warehouse
from support.price_site import refresh_environment
from support.refresh import refresh_settings


def _shared_folder(suite: Suite) -> str:
    """Where ../shared keeps a suite's archives, below its MLPerf folder: Training's at the top, each other
    suite's in a folder named after it."""
    return "" if suite is TRAINING else f"{suite.name}/"


def shared_rounds_of(suite: Suite) -> list[str]:
    """The rounds of `suite` whose archive ../shared holds, oldest first."""
    prefix = f"{suite.repository}_"
    return sorted((p.name.removeprefix(prefix).split("-")[0]
                   for p in (SHARED_MLPERF / _shared_folder(suite)).glob(f"{prefix}v*.tar.gz")), key=round_sort_key)


def served_template(suite: Suite) -> str:
    """Where a round's archive of `suite` is below the shared MLPerf folder, as served: its URL template after
    the server's URL."""
    return f"/{_shared_folder(suite)}{suite.repository}_{{version}}-main.tar.gz"


def shared_rounds() -> list[str]:
    return shared_rounds_of(TRAINING)


def shared_hpc_rounds() -> list[str]:
    return shared_rounds_of(HPC)


def shared_inference_rounds() -> list[str]:
    return shared_rounds_of(INFERENCE)


TRAINING_TEMPLATE, HPC_TEMPLATE, INFERENCE_TEMPLATE = (served_template(s) for s in (TRAINING, HPC, INFERENCE))
RULES_TEMPLATE = "/logging/logging-{ref}.tar.gz"


def shared_sources(server_url: str) -> dict[str, object]:
    """Every shared round of every suite and where it is served at `server_url`, by setting name (each suite's
    `rounds_setting` and `results_setting`, and `rules_url_template`): `refresh_settings(**shared_sources(url))`
    in this process, `setting_variables(shared_sources(url))` for a `mlperf-warehouse` process."""
    values: dict[str, object] = {"rules_url_template": server_url + RULES_TEMPLATE}
    for suite in SUITES.values():
        values[suite.rounds_setting] = shared_rounds_of(suite)
        values[suite.results_setting] = server_url + served_template(suite)
    return values


def setting_variables(values: dict[str, object]) -> dict[str, str]:
    """Settings as the environment of a process gives them: `MLPERF_<NAME>`, a list comma-separated."""
    from pipelines.lib.io.limits import variable

    return {variable(name): ",".join(value) if isinstance(value, list) else str(value)
            for name, value in values.items()}


@dataclass(frozen=True)
class SharedBuild:
    base: Path  # the warehouse directory (its published mlperf.duckdb)
    ok: bool
    published: bool
    with_prices: bool
    summary: str  # the refresh's rendered summary
    requests: int  # requests the results server answered during the refresh
    port: int  # the port the results were served on (their URLs are recorded with the downloads)

    @property
    def db(self) -> Path:
        return self.base / "mlperf.duckdb"


def shared_build(tmp_path_factory) -> SharedBuild:
    from pipelines.runner.jobs import refresh

    # the folder every xdist worker of this run shares (each worker's own basetemp is one level down)
    root = tmp_path_factory.getbasetemp()
    common = root.parent if root.name.startswith("popen-gw") else root
    folder = common / "shared-rounds"
    record = folder / "build.json"
    with FileLock(str(common / "shared-rounds.lock")):
        if not record.exists():
            base = folder / "warehouse"
            with LoopbackServer(SHARED_MLPERF) as server, LoopbackServer() as prices:
                serve_logging_repository(server)  # rules releases of rounds rules_refs.csv does not list
                with refresh_environment(base, prices, github_api_url=server.url) as with_prices:
                    summary = refresh(refresh_settings(**shared_sources(server.url)), prices=with_prices,
                                      backoff_seconds=0.01)
                requests, port = len(server.requests), server.port
            record.write_text(json.dumps({"ok": summary.ok, "published": summary.published, "with_prices": with_prices,
                                          "summary": summary.render(), "requests": requests, "port": port}))
    info = json.loads(record.read_text())
    return SharedBuild(folder / "warehouse", info["ok"], info["published"], info["with_prices"], info["summary"],
                       info["requests"], info["port"])


def copy_of(build: SharedBuild, target: Path) -> Path:
    """A private copy of the shared warehouse directory, for a test that refreshes it again."""
    return copy_warehouse(build.base, target)
