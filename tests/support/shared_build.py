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

from support.github import serve_logging_repository
from support.http_server import LoopbackServer
from support.paths import SHARED_MLPERF, copy_warehouse
from support.price_site import refresh_environment
from support.refresh import refresh_settings


def shared_rounds() -> list[str]:
    return sorted(p.name.split("_")[2].split("-")[0] for p in SHARED_MLPERF.glob("training_results_v*.tar.gz"))


def shared_hpc_rounds() -> list[str]:
    return sorted(p.name.split("_")[2].split("-")[0] for p in (SHARED_MLPERF / "hpc").glob("hpc_results_v*.tar.gz"))


# Where each archive is below the shared MLPerf folder, as served: URL templates after the server's URL.
TRAINING_TEMPLATE = "/training_results_{version}-main.tar.gz"
RULES_TEMPLATE = "/logging/logging-{ref}.tar.gz"
HPC_TEMPLATE = "/hpc/hpc_results_{version}-main.tar.gz"
INFERENCE_TEMPLATE = "/inference/inference_results_{version}-main.tar.gz"


def shared_inference_rounds() -> list[str]:
    return sorted(p.name.split("_")[2].split("-")[0]
                  for p in (SHARED_MLPERF / "inference").glob("inference_results_v*.tar.gz"))


def shared_sources(server_url: str) -> dict[str, object]:
    """Every shared round of every suite and where it is served at `server_url`, by setting name (`rounds`,
    `hpc_results_url_template`, ..., `rules_url_template`): `refresh_settings(**shared_sources(url))` in this
    process, `setting_variables(shared_sources(url))` for a `mlperf-warehouse` process."""
    return {"rounds": shared_rounds(), "results_url_template": server_url + TRAINING_TEMPLATE,
            "hpc_rounds": shared_hpc_rounds(), "hpc_results_url_template": server_url + HPC_TEMPLATE,
            "inference_rounds": shared_inference_rounds(),
            "inference_results_url_template": server_url + INFERENCE_TEMPLATE,
            "rules_url_template": server_url + RULES_TEMPLATE}


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
