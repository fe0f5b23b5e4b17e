"""dim_accelerator seed and aliases: every MLPerf accelerator name of the shared rounds maps."""

from __future__ import annotations

import json
import re
import tarfile
from functools import lru_cache
from pathlib import Path

import polars as pl
import pytest

from pipelines.lib.accelerators import (
    ACCELERATORS_CSV, ALIASES_CSV, default_matcher, match_cloud_sku, match_mlperf_accelerator, read_aliases,
)
from schemas.prices import AcceleratorAliasRow, AcceleratorRow

SHARED_MLPERF = Path(__file__).resolve().parents[2] / "shared" / "mlperf"
ARCHIVES = sorted(SHARED_MLPERF.glob("training_results_v*.tar.gz"))
# v0.6 systems files predate accelerator_model_name: their nodes[].accelerator carries it
# (NVIDIA's are MLLOG lines with a Python-dict string inside, hence a regex, not json)
V06_NODE_ACCELERATOR = re.compile(r"""['"]accelerator['"]\s*:\s*['"]([^'"]+)['"]""")


@lru_cache(maxsize=1)
def mlperf_accelerator_names() -> dict[tuple[str, str], set[str]]:
    """{(accelerator name, system name): {member paths}} from systems/*.json (and v0.6 entry.json)."""
    found: dict[tuple[str, str], set[str]] = {}
    for archive in ARCHIVES:
        with tarfile.open(archive, "r|gz") as tar:  # streamed: nothing is extracted
            for member in tar:
                parts = member.name.split("/")
                is_system = len(parts) == 4 and parts[2] == "systems"
                is_entry = len(parts) == 5 and parts[2] == "results" and parts[4] == "entry.json"
                if not member.isfile() or not member.name.endswith(".json") or not (is_system or is_entry):
                    continue
                text = tar.extractfile(member).read().decode("utf-8", "replace")
                try:
                    system = json.loads(text)
                except ValueError:
                    system = {}
                names = []
                if isinstance(system, dict) and "accelerator_model_name" in system:
                    names.append(str(system["accelerator_model_name"]))
                else:
                    names.extend(V06_NODE_ACCELERATOR.findall(text))
                system_name = str(system.get("system_name", "")) if isinstance(system, dict) else ""
                for name in names or [""]:
                    found.setdefault((name, system_name or Path(member.name).stem), set()).add(member.name)
    return found


@pytest.mark.skipif(not ARCHIVES, reason=f"shared MLPerf archives not found under {SHARED_MLPERF}")
def test_every_mlperf_accelerator_name_maps_or_is_deliberately_unmapped():
    matcher = default_matcher()
    names = mlperf_accelerator_names()
    assert len(names) > 40
    unexplained = sorted(
        f"{name!r} (system {system!r}, e.g. {sorted(paths)[0]})"
        for (name, system), paths in names.items()
        if matcher.mlperf(name, system) is None and not matcher.is_deliberately_unmapped(name, system)
    )
    assert not unexplained, "MLPerf accelerator names that map to nothing:\n" + "\n".join(unexplained)
    keys = {matcher.mlperf(name, system) for name, system in names}
    assert {"nvidia-h100-sxm-80gb", "nvidia-a100-sxm-80gb", "google-tpu-v4", "google-tpu-v6e",
            "intel-gaudi2", "amd-mi300x", "nvidia-gb200", "nvidia-v100-sxm3-32gb"} <= keys


@pytest.mark.parametrize(("name", "system", "key"), [
    ("NVIDIA H100-SXM5-80GB", None, "nvidia-h100-sxm-80gb"),
    ("NVIDIA H100 80GB HBM3", None, "nvidia-h100-sxm-80gb"),
    ("NVIDIA H100-PCIe-80GB", None, "nvidia-h100-pcie-80gb"),
    ("H100 NVL Tensor Core GPU (PCIe)", None, "nvidia-h100-nvl-94gb"),
    ("NVIDIA H200-SXM5-141GB", None, "nvidia-h200-141gb"),
    ("NVIDIA H200-NVL-141GB", None, "nvidia-h200-nvl-141gb"),
    ("NVIDIA Blackwell GPU (B200-SXM-180GB)", None, "nvidia-b200"),
    ("NVIDIA Blackwell GPU (GB200)", None, "nvidia-gb200"),
    ("NVIDIA A100-SXM4-40GB (400W)", None, "nvidia-a100-sxm-40gb"),
    ("NVIDIA A100-SXM-80GB CTS", None, "nvidia-a100-sxm-80gb"),
    ("NVIDIA A100 - PCIe - 80 GB", None, "nvidia-a100-pcie-80gb"),
    ("NVIDIA A100-PCIe-40GB(250W)", None, "nvidia-a100-pcie-40gb"),
    ("Tesla V100-SXM3-32GB-H", None, "nvidia-v100-sxm3-32gb"),
    ("Tesla V100-SXM2-16GB", None, "nvidia-v100-sxm2-16gb"),
    ("Habana Gaudi", None, "intel-gaudi"),
    ("Habana Gaudi2", None, "intel-gaudi2"),
    ("Intel(R) Gaudi(R) 2 AI Accelerator", None, "intel-gaudi2"),
    ("Intel(R) Gaudi(R) 3 AI Accelerator", None, "intel-gaudi3"),
    ("tpu-v3", None, "google-tpu-v3"),
    ("TPU-v5p", None, "google-tpu-v5p"),
    ("TPU-trillium", None, "google-tpu-v6e"),
    ("TPU", "tpu-v4-1024", "google-tpu-v4"),
    ("AMD Instinct MI325X 256GB HBM3E DLC", None, "amd-mi325x"),
    ("N/A", None, None),
    ("TPU", None, None),
])
def test_mlperf_names(name, system, key):
    assert match_mlperf_accelerator(name, system) == key


def test_cpu_only_systems_are_deliberately_unmapped():
    matcher = default_matcher()
    assert matcher.is_deliberately_unmapped("N/A")
    assert matcher.is_deliberately_unmapped("")
    assert not matcher.is_deliberately_unmapped("Some Future Accelerator")
    assert matcher.mlperf("Some Future Accelerator") is None


@pytest.mark.parametrize(("sku", "key", "count"), [
    ("Standard_ND96isr_H100_v5", "nvidia-h100-sxm-80gb", 8),
    ("p5.48xlarge", "nvidia-h100-sxm-80gb", 8),
    ("p4de.24xlarge", "nvidia-a100-sxm-80gb", 8),
    ("trn1.32xlarge", "aws-trainium", 16),
    ("a3-highgpu-8g", "nvidia-h100-sxm-80gb", 8),
    ("BM.GPU.MI300X.8", "amd-mi300x", 8),
    ("tpu-v5p-8", "google-tpu-v5p", 4),         # v5p slices count TensorCores
    ("tpu-v5litepod-256", "google-tpu-v5e", 256),  # v5e slices count chips
    ("v6e-8", "google-tpu-v6e", 8),
    ("Nvidia H100 80GB GPU running in Americas", "nvidia-h100-sxm-80gb", 1),
    ("TpuV6e chip-hour in us-east5", "google-tpu-v6e", 1),
])
def test_cloud_skus(sku, key, count):
    match = match_cloud_sku(sku)
    assert (match.accelerator, match.accelerators_per_instance) == (key, count)
    assert match_cloud_sku("m5.large") is None


def test_seed_files_are_consistent():
    accelerators = pl.read_csv(ACCELERATORS_CSV, infer_schema_length=0)
    AcceleratorRow.validate(accelerators.with_columns(pl.col("memory_gb", "peak_dense_bf16_flops").cast(pl.Float64)))
    AcceleratorAliasRow.validate(pl.read_csv(ALIASES_CSV, infer_schema_length=0))
    keys = set(accelerators["accelerator"])
    aliases = read_aliases()
    assert {a.accelerator for a in aliases if a.accelerator} <= keys
    assert all(a.accelerators_per_instance or a.slice_units_per_accelerator
               for a in aliases if a.alias_kind == "cloud_sku")
    # every dense BF16 figure names where it comes from
    assert accelerators.filter(pl.col("peak_dense_bf16_flops").is_not_null())["flops_source"].str.len_chars().min() > 5
    assert float(accelerators.filter(pl.col("accelerator") == "nvidia-h100-sxm-80gb")["peak_dense_bf16_flops"][0]) \
        == pytest.approx(989e12)
