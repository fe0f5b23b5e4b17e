"""Hand-written MLPerf logs and archives for tests (small, and quirky on purpose)."""

from __future__ import annotations

import io
import json
import tarfile
from dataclasses import dataclass
from pathlib import Path


def mllog(key: str, value=None, time_ms: int = 0, **metadata) -> str:
    return ":::MLLOG " + json.dumps({
        "namespace": "", "time_ms": time_ms, "event_type": "POINT_IN_TIME", "key": key,
        "value": value, "metadata": {"file": "train.py", "lineno": 1, **metadata},
    })


def open_ssd_run(start_ms: int, minutes: float, *, status: str = "success", accuracy: float = 0.5, blocks: int = 4) -> list[str]:
    """A v4.1 open-division SSD log that passes the official rules (when status is success)."""
    stop_ms = start_ms + int(minutes * 60_000)
    lines = [
        mllog("cache_clear", True, start_ms - 5000),
        mllog("init_start", None, start_ms - 4000),
        mllog("submission_org", "Acme", start_ms - 3000),
        mllog("submission_platform", "box", start_ms - 3000),
        mllog("submission_division", "open", start_ms - 3000),
        mllog("submission_status", "onprem", start_ms - 3000),
        mllog("submission_benchmark", "ssd", start_ms - 3000),
        mllog("global_batch_size", 256, start_ms - 3000),
        mllog("seed", 42, start_ms - 3000),
        mllog("train_samples", 1170301, start_ms - 3000),  # the OpenImages subset RetinaNet (ssd) trains on
        mllog("eval_samples", 100, start_ms - 3000),
        mllog("init_stop", None, start_ms - 1000),
        mllog("run_start", None, start_ms),
    ]
    step = (stop_ms - start_ms) // (blocks + 1)
    for b in range(blocks):
        t0 = start_ms + b * step
        lines += [
            mllog("block_start", None, t0, first_epoch_num=b, epoch_count=1),
            mllog("block_stop", None, t0 + step, first_epoch_num=b),
            mllog("eval_start", None, t0 + step, epoch_num=b + 1),
            mllog("eval_accuracy", accuracy, t0 + step, epoch_num=b + 1),
            mllog("eval_stop", None, t0 + step, epoch_num=b + 1),
        ]
    lines.append(mllog("run_stop", None, stop_ms, status=status))
    return lines


def system_json(**overrides) -> bytes:
    doc = {
        "submitter": "Acme", "division": "open", "status": "Available on-premise", "system_name": "Acme Box",
        "number_of_nodes": "2", "host_processors_per_node": "2", "host_processor_model_name": "CPU X",
        "host_processor_core_count": "32", "accelerators_per_node": "8", "accelerator_model_name": "NVIDIA H100-SXM5-80GB",
        "framework": "PyTorch", "hw_notes": "", "sw_notes": "",
    }
    doc.update(overrides)
    return json.dumps(doc).encode()


def make_archive(members: dict[str, bytes], top: str = "training_results-main", *, extra: list[tarfile.TarInfo] = ()) -> bytes:
    """A .tar.gz with `members` (paths relative to the top folder) plus raw TarInfo entries (links...)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:  # fast: tests write many
        for path, data in members.items():
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        for info in extra:
            tar.addfile(info)
    return buf.getvalue()


def make_rules_archive(files: dict[str, str], checker_source: str, top: str = "logging-test") -> bytes:
    """A `mlcommons/logging`-shaped archive: rule files (path below the compliance checker → YAML) and
    the checker code whose semantics apply."""
    checker = "mlperf_logging/compliance_checker"
    members = {f"{checker}/{name}": text.encode() for name, text in files.items()}
    members[f"{checker}/mlp_compliance.py"] = checker_source.encode()
    return make_archive(members, top=top)


def package_rules_archive(round_version: str) -> tuple[str, bytes] | None:
    """(ref, archive bytes): the installed mlperf-logging package's release (its rule, RCP and checker files)
    standing in for the round's, shaped like the `mlcommons/logging` archive a refresh fetches for it (None for
    v0.5: no rules)."""
    from pipelines.lib.mlperf.rules import CHECKER_DIR, RCP_DIR, SUMMARIZER, package_archive, ref_for_round

    ref = ref_for_round(round_version)
    if ref is None:
        return None
    release = package_archive()
    members = {f"{CHECKER_DIR}{name}": text.encode() for name, text in release.yaml_files.items()}
    members |= {f"{RCP_DIR}{name}": text.encode() for name, text in release.rcp_files.items()}
    members[f"{CHECKER_DIR}mlp_compliance.py"] = release.checker_source.encode()
    members[f"{RCP_DIR}rcp_checker.py"] = release.rcp_checker_source.encode()
    members[SUMMARIZER] = release.summarizer_source.encode()
    return ref.ref, make_archive(members, top="logging-test")


def package_rules_digest(ref: str) -> str:
    """The content digest of a `package_rules_archive` (whatever its ref: it holds the package's release), as
    `read_rules_archive` computes it."""
    from pipelines.lib.mlperf.rules import package_archive

    return package_archive().content_sha256


def package_rules(round_version: str):
    """Today's package rules on both sides: for parsing tests that are not about rule eras."""
    from pipelines.lib.mlperf.round_rules import RoundRules
    from pipelines.lib.mlperf.rules import package_ruleset

    return RoundRules(package_ruleset(round_version), package_ruleset(round_version))


def accept_package_rules(monkeypatch) -> None:
    """In this process, until `monkeypatch` undoes it, accept the package's rule files (package_rules_archive)
    beside the pinned content of each ref rules_refs.csv pins (tests/conftest.py does so for every test not
    marked pinned_rules_only; a module-scoped fixture that refreshes calls it itself)."""
    from pipelines.lib.mlperf import rules

    pinned = rules.accepted_digests
    # a ref the table pins: its content or the package's; any other ref is trusted on first use, as in production
    monkeypatch.setattr(rules, "accepted_digests",
                        lambda ref: pinned(ref) | {package_rules_digest(ref)} if pinned(ref) else pinned(ref))


def install_package_rules(base, round_version: str) -> None:
    """Put the package's rules where a refresh would have fetched the round's rules archive, so
    staging works without the network or ../shared."""
    from pipelines.lib.mlperf.stage import rules_archive_path

    made = package_rules_archive(round_version)
    if made is not None:
        path = rules_archive_path(made[0], base)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(made[1])


def serve_package_rules(site, round_version: str) -> str:
    """Write the round's rules archive into a served folder; returns the path part of the template."""
    made = package_rules_archive(round_version)
    if made is not None:
        (site / f"logging-{made[0]}.tar.gz").write_bytes(made[1])
    return "logging-{ref}.tar.gz"


def write_ssd_archive(path, systems: int, minutes=(10, 20, 30, 40, 50)) -> None:
    """A round archive of `systems` Acme systems, each with one SSD run per entry of `minutes`."""
    members = {}
    for s in range(systems):
        members[f"Acme/systems/box{s}.json"] = system_json()
        for i, m in enumerate(minutes):
            members[f"Acme/results/box{s}/ssd/result_{i}.txt"] = "\n".join(open_ssd_run(10**6 * (i + 1), m)).encode()
    path.write_bytes(make_archive(members))


SSD_ROUND = "v4.1"  # the round whose rules open_ssd_run's logs follow


@dataclass(frozen=True)
class SsdMirror:
    """A local folder standing in for the results and rules sites: a synthetic v4.1 round, and the installed
    package's rules in place of the round's release (so a refresh must trust that release's ref)."""

    results_template: str
    rules_template: str
    trusted_ref: str

    def settings(self, warehouse: Path) -> dict[str, str]:
        """The environment that points a refresh at this mirror and at `warehouse`."""
        return {"MLPERF_WAREHOUSE_DIR": str(warehouse),
                "MLPERF_RESULTS_URL_TEMPLATE": self.results_template,
                "MLPERF_RULES_URL_TEMPLATE": self.rules_template,
                "MLPERF_TRUST_RULES_REFS": self.trusted_ref}


def ssd_mirror(site: Path, systems: int) -> SsdMirror:
    """Write a `systems`-system SSD round archive (write_ssd_archive) and the package's rules into `site`."""
    from pipelines.lib.mlperf.rules import ref_for_round

    site.mkdir(parents=True, exist_ok=True)
    write_ssd_archive(site / f"training_results_{SSD_ROUND}-main.tar.gz", systems)
    return SsdMirror(results_template=str(site / "training_results_{version}-main.tar.gz"),
                     rules_template=str(site / serve_package_rules(site, SSD_ROUND)),
                     trusted_ref=ref_for_round(SSD_ROUND).ref)
