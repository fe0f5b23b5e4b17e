"""dim_accelerator seed and aliases: every MLPerf accelerator name of the shared rounds maps."""

from __future__ import annotations

import json
import re
import tarfile
from functools import lru_cache
from pathlib import Path

import polars as pl
import pytest

from pipelines.lib.reference.accelerators import (
    ACCELERATORS_CSV,
    ALIASES_CSV,
    AcceleratorMatcher,
    ParsedName,
    default_matcher,
    match_cloud_sku,
    match_mlperf_accelerator,
    parse_accelerator_name,
    read_aliases,
    read_catalog,
)
from schemas.prices import AcceleratorAliasRow, AcceleratorRow
from support.paths import SHARED_MLPERF

SHARED_MLPERF = SHARED_MLPERF
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
                # v0.6: <submitter>/results/<system>/entry.json; v0.5 one or two folders deeper
                is_entry = parts[-1] == "entry.json" and parts[-3] == "results"
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


@pytest.mark.slow  # reads every shared Training archive whole
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


# Real spellings of every round (v0.5-v5.0 shared, and names held-out rounds bring), and hostile ones.
@pytest.mark.parametrize(("name", "system", "key"), [
    # NVIDIA, as published
    ("NVIDIA H100-SXM5-80GB", None, "nvidia-h100-sxm-80gb"),
    ("NVIDIA H100-SXM-80GB", None, "nvidia-h100-sxm-80gb"),
    ("NVIDIA H100 80GB HBM3", None, "nvidia-h100-sxm-80gb"),
    ("NVIDIA H100-PCIe-80GB", None, "nvidia-h100-pcie-80gb"),
    ("H100 NVL Tensor Core GPU (PCIe)", None, "nvidia-h100-nvl-94gb"),
    ("NVIDIA H200-SXM5-141GB", None, "nvidia-h200-141gb"),
    ("NVIDIA H200-NVL-141GB", None, "nvidia-h200-nvl-141gb"),
    ("NVIDIA Blackwell GPU (B200-SXM-180GB)", None, "nvidia-b200"),
    ("NVIDIA Blackwell GPU (GB200)", None, "nvidia-gb200"),
    ("NVIDIA A100-SXM4-40GB (400W)", None, "nvidia-a100-sxm-40gb"),
    ("A100-SXM4-40GB", None, "nvidia-a100-sxm-40gb"),
    ("NVIDIA A100-SXM-80GB CTS", None, "nvidia-a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-80GB(400W)", None, "nvidia-a100-sxm-80gb"),
    ("NVIDIA A100 - PCIe - 80 GB", None, "nvidia-a100-pcie-80gb"),
    ("NVIDIA A100-PCIe-40GB(250W)", None, "nvidia-a100-pcie-40gb"),
    ("NVIDIA A100-PCIE-40GB", None, "nvidia-a100-pcie-40gb"),
    ("NVIDIA A30", None, "nvidia-a30"),
    ("NVIDIA A40", None, "nvidia-a40"),
    ("NVIDIA L40S", None, "nvidia-l40s"),
    ("NVIDIA RTX A5000", None, "nvidia-rtx-a5000"),
    ("NVIDIA GeForce RTX 4090", None, "nvidia-geforce-rtx-4090"),
    ("Tesla V100-SXM3-32GB-H", None, "nvidia-v100-sxm3-32gb"),
    ("Tesla V100-SXM3-H-32GB", None, "nvidia-v100-sxm3-32gb"),
    ("Tesla V100-SXM2-16GB", None, "nvidia-v100-sxm2-16gb"),
    ("Tesla V100-PCIe-32GB", None, "nvidia-v100-pcie-32gb"),
    # NVIDIA names the alias list never had (held-out rounds, cloud catalogs)
    ("NVIDIA RTX Pro 6000 SE PCIe 96GB", None, "nvidia-rtx-pro-6000"),
    ("NVIDIA L4", None, "nvidia-l4"),
    ("NVIDIA L40", None, "nvidia-l40"),
    ("NVIDIA A10G", None, "nvidia-a10g"),
    ("NVIDIA V100", None, "nvidia-v100-sxm2-16gb"),
    ("Nvidia Tesla V100", None, "nvidia-v100-sxm2-16gb"),
    ("NVIDIA Tesla V100-SXM2-32GB", None, "nvidia-v100-sxm2-32gb"),
    ("V100-32GB", None, "nvidia-v100-sxm2-32gb"),
    ("Tesla T4", None, "nvidia-t4"),
    ("NVIDIA GH200 96GB", None, "nvidia-gh200"),
    ("NVIDIA GB300", None, "nvidia-gb300"),
    ("NVIDIA Blackwell Ultra GPU (GB300)", None, "nvidia-gb300"),
    ("NVIDIA B300 SXM 288GB", None, "nvidia-b300"),
    ("NVIDIA GB200 NVL72", None, "nvidia-gb200"),
    ("NVIDIA H100 NVL", None, "nvidia-h100-nvl-94gb"),
    ("nvidia_h100_80gb_hbm3", None, "nvidia-h100-sxm-80gb"),
    ("A100 80GB PCIe", None, "nvidia-a100-pcie-80gb"),
    ("A100-80GB", None, "nvidia-a100-sxm-80gb"),
    ("H100-MEGA", None, "nvidia-h100-sxm-80gb"),
    ("NVIDIA L40S PCIe 48GB", None, "nvidia-l40s"),
    ("NVIDIA H100 SXM5 80 GB (700 W)", None, "nvidia-h100-sxm-80gb"),
    ("nvidia h100 nvl 96gb", None, "nvidia-h100-nvl-94gb"),  # memory misremembered: still the NVL
    # an unseen model of a known family gets a key derived by the rule
    ("NVIDIA RTX 6000 Ada Generation", None, "nvidia-rtx-6000-ada"),
    ("NVIDIA H20", None, "nvidia-h20"),
    ("NVIDIA A100X", None, "nvidia-a100x"),
    ("NVIDIA H100 OAM", None, "nvidia-h100-oam"),  # a form factor we hold no row for
    ("NVIDIA Grace Hopper Superchip", None, "nvidia-gh200"),
    ("Intel(R) Arc(TM) Pro B60 Graphics", None, "intel-arc-pro-b60"),
    ("Intel Data Center GPU Max 1550", None, "intel-gpu-max-1550"),
    # AMD
    ("AMD Instinct MI300X 192GB HBM3", None, "amd-mi300x"),
    ("AMD Instinct MI325X 256GB HBM3E DLC", None, "amd-mi325x"),
    ("AMD Instinct MI325X 256GB HBM3e", None, "amd-mi325x"),
    ("AMD Instinct MI350X", None, "amd-mi350x"),
    ("AMD Instinct MI355X 288GB HBM3E", None, "amd-mi355x"),
    ("MI250X", None, "amd-mi250x"),
    ("AMD Instinct MI210", None, "amd-mi210"),
    ("AMD MI300X OAM", None, "amd-mi300x"),
    ("AMD Radeon RX 7900 XTX", None, "amd-radeon-rx-7900-xtx"),
    ("AMD Instinct MI450X", None, "amd-mi450x"),
    # Intel / Habana
    ("Habana Gaudi", None, "intel-gaudi"),
    ("Habana Gaudi2", None, "intel-gaudi2"),
    ("Intel(R) Gaudi(R) 2 AI Accelerator", None, "intel-gaudi2"),
    ("Intel(R) Gaudi(R) 3 AI Accelerator", None, "intel-gaudi3"),
    ("Intel® Gaudi® 3", None, "intel-gaudi3"),
    ("HL-225H", None, "intel-gaudi2"),
    # Google TPU
    ("tpu-v3", None, "google-tpu-v3"),
    ("tpuv2-512", None, "google-tpu-v2"),
    ("tpuv3-32", None, "google-tpu-v3"),
    ("TPU-v5p", None, "google-tpu-v5p"),
    ("TPU v6e", None, "google-tpu-v6e"),
    ("TPU-trillium", None, "google-tpu-v6e"),
    ("Trillium", None, "google-tpu-v6e"),
    ("Google Cloud TPU v5 lite", None, "google-tpu-v5e"),
    ("TPU v5e", None, "google-tpu-v5e"),
    ("TPU7x", None, "google-tpu-v7"),
    ("TPU", "tpu-v4-1024", "google-tpu-v4"),
    ("TPU", "tpu-v5p-8960", "google-tpu-v5p"),
    ("TPU", None, None),
    # Graphcore, Huawei, AWS
    ("Graphcore IPU GC200", None, "graphcore-ipu-gc200"),
    ("IPU-M2000", None, "graphcore-ipu-gc200"),
    ("Graphcore Bow IPU", None, "graphcore-bow-ipu"),
    ("Ascend 910 Premium A", None, "huawei-ascend-910"),
    ("Ascend 910 Pro A", None, "huawei-ascend-910"),
    ("Huawei Ascend 910B", None, "huawei-ascend-910b"),
    ("AWS Trainium2", None, "aws-trainium2"),
    ("Trainium", None, "aws-trainium"),
    # CPU-only and nonsense
    ("N/A", None, None),
    ("NA", None, None),
    ("", None, None),
    ("Intel Xeon Platinum 8380", None, None),
    ("NVIDIA", None, None),
    ("GPU", None, None),
    ("Quantum Widget 9000", None, None),
    ("NVIDIA H100 SXM5 80GB with Intel Xeon 8480C hosts", None, "nvidia-h100-sxm-80gb"),
    ("2x Intel Xeon + 8x NVIDIA A100 80GB", None, "nvidia-a100-sxm-80gb"),
])
def test_mlperf_names(name, system, key):
    assert match_mlperf_accelerator(name, system) == key


def test_the_rule_reads_vendor_model_form_and_memory():
    assert parse_accelerator_name("NVIDIA A100-PCIe-80GB (300W)") == ParsedName("nvidia", "a100", "pcie", 80)
    assert parse_accelerator_name("NVIDIA H100-SXM5-80GB") == ParsedName("nvidia", "h100", "sxm5", 80)
    # the 80 of "SXM-80GB" is memory, not an SXM generation; power figures are not memory
    assert parse_accelerator_name("NVIDIA A100-SXM-80GB (500W)") == ParsedName("nvidia", "a100", "sxm", 80)
    assert parse_accelerator_name("V100-32G") == ParsedName("nvidia", "v100", None, 32)
    assert parse_accelerator_name("AMD Instinct MI350X") == ParsedName("amd", "mi350x", None, None)
    assert parse_accelerator_name("H100 NVL Tensor Core GPU (PCIe)").form_factor == "nvl"  # NVL wins
    assert parse_accelerator_name("Quantum Widget 9000") is None


def test_derived_keys_are_valid_dim_accelerator_keys():
    for name in ("AMD Instinct MI350X", "NVIDIA RTX 6000 Ada Generation", "Huawei Ascend 910B", "Google TPU v5"):
        key = match_mlperf_accelerator(name)
        assert key and re.fullmatch(r"[a-z0-9][a-z0-9-]*", key), (name, key)


def test_exact_override_beats_the_rule(tmp_path):
    aliases = tmp_path / "aliases.csv"
    aliases.write_text(ALIASES_CSV.read_text() + "nvidia-h100-pcie-80gb,mlperf_name,Mystery H100 Board,exact,,,test\n")
    matcher = AcceleratorMatcher(read_aliases(aliases), read_catalog())
    assert matcher.mlperf("Mystery H100 Board") == "nvidia-h100-pcie-80gb"
    assert matcher.mlperf("Mystery H100 Board 2") == "nvidia-h100-sxm-80gb"  # the rule


def test_cpu_only_systems_are_deliberately_unmapped():
    matcher = default_matcher()
    assert matcher.is_deliberately_unmapped("N/A")
    assert matcher.is_deliberately_unmapped("")
    assert matcher.is_deliberately_unmapped("Intel Xeon Platinum 8380")
    assert not matcher.is_deliberately_unmapped("Some Future Accelerator")
    assert not matcher.is_deliberately_unmapped("NVIDIA H100-SXM5-80GB")
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
    ("Nvidia L4 GPU running in Americas", "nvidia-l4", 1),  # by the naming rule
    ("Nvidia Tesla T4 GPU running in EMEA", "nvidia-t4", 1),
])
def test_cloud_skus(sku, key, count):
    match = match_cloud_sku(sku)
    assert (match.accelerator, match.accelerators_per_instance) == (key, count)
    assert match_cloud_sku("m5.large") is None
    assert match_cloud_sku("Nvidia RTX Virtual Workstation GPU running in Americas") is None  # a licence


def test_seed_files_are_consistent():
    accelerators = pl.read_csv(ACCELERATORS_CSV, infer_schema_length=0)
    peaks = ["peak_dense_bf16_flops", "peak_dense_fp8_flops", "peak_dense_fp4_flops"]
    AcceleratorRow.validate(accelerators.with_columns(pl.col("memory_gb", *peaks).cast(pl.Float64)))
    AcceleratorAliasRow.validate(pl.read_csv(ALIASES_CSV, infer_schema_length=0))
    keys = set(accelerators["accelerator"])
    aliases = read_aliases()
    assert {a.accelerator for a in aliases if a.accelerator} <= keys
    assert all(a.accelerators_per_instance or a.slice_units_per_accelerator
               for a in aliases if a.alias_kind == "cloud_sku")
    typed = accelerators.with_columns(pl.col(*peaks).cast(pl.Float64))
    for peak, source in (("peak_dense_bf16_flops", "flops_source"), ("peak_dense_fp8_flops", "fp8_flops_source")):
        given = typed.filter(pl.col(peak).is_not_null())
        assert given[peak].min() > 1e12 and given[peak].max() < 1e17
        assert given[source].str.len_chars().min() > 5, f"every {peak} names its source"
    # FP8 is never slower than BF16 on the same chip; every NULL says why in the note
    both = typed.filter(pl.col("peak_dense_fp8_flops").is_not_null() & pl.col("peak_dense_bf16_flops").is_not_null())
    assert (both["peak_dense_fp8_flops"] >= both["peak_dense_bf16_flops"]).all()
    assert typed.filter(pl.col("peak_dense_fp8_flops").is_null())["note"].str.len_chars().min() > 10
    # every row is reachable by the naming rule from its own model name
    matcher = default_matcher()
    for row in accelerators.iter_rows(named=True):
        assert row["model_number"], row["accelerator"]
        assert matcher.key_for(ParsedName(row["accelerator"].split("-")[0], row["model_number"],
                                          row["form_factor"] or None, None)) is not None
    by_key = {r["accelerator"]: r for r in typed.iter_rows(named=True)}
    assert by_key["nvidia-h100-sxm-80gb"]["peak_dense_bf16_flops"] == pytest.approx(989e12)
    assert by_key["nvidia-h100-sxm-80gb"]["peak_dense_fp8_flops"] == pytest.approx(1979e12)
    assert by_key["nvidia-a100-sxm-80gb"]["peak_dense_fp8_flops"] is None  # Ampere has no FP8


# The list: every accelerator of MLPerf Training v0.5-v5.1 has a reference row.
@pytest.mark.parametrize("key", [
    "nvidia-v100-sxm2-16gb", "nvidia-v100-sxm3-32gb", "nvidia-t4", "nvidia-a100-pcie-40gb", "nvidia-a100-sxm-80gb",
    "nvidia-a30", "nvidia-a10g", "nvidia-l4", "nvidia-l40", "nvidia-l40s", "nvidia-h100-pcie-80gb",
    "nvidia-h100-sxm-80gb", "nvidia-h100-nvl-94gb", "nvidia-h200-141gb", "nvidia-gh200", "nvidia-b200", "nvidia-gb200",
    "nvidia-b300", "nvidia-gb300", "nvidia-rtx-pro-6000", "amd-mi210", "amd-mi250", "amd-mi300x", "amd-mi325x",
    "amd-mi350x", "amd-mi355x", "intel-gaudi", "intel-gaudi2", "intel-gaudi3", "google-tpu-v3", "google-tpu-v4",
    "google-tpu-v5e", "google-tpu-v5p", "google-tpu-v6e", "graphcore-ipu-gc200", "huawei-ascend-910",
])
def test_reference_rows_cover_every_round(key):
    assert key in set(pl.read_csv(ACCELERATORS_CSV, infer_schema_length=0)["accelerator"])


# Accelerators of the shared rounds whose hardware has the format, yet no vendor figure exists.
NO_PUBLISHED_BF16_PEAK = {"intel-gaudi": "Habana published no TFLOPS for the first Gaudi"}
NO_BF16 = {"nvidia-v100-sxm2-16gb", "nvidia-v100-sxm2-32gb", "nvidia-v100-sxm3-32gb", "nvidia-v100-pcie-16gb",
           "nvidia-v100-pcie-32gb", "graphcore-ipu-gc200", "huawei-ascend-910"}  # FP16-only hardware
HAS_FP8 = ("nvidia-h", "nvidia-gh", "nvidia-b", "nvidia-gb", "nvidia-l4", "nvidia-geforce-rtx-4090",
           "amd-mi3", "intel-gaudi2", "intel-gaudi3")


@pytest.mark.slow  # reads every shared Training archive whole
@pytest.mark.skipif(not ARCHIVES, reason=f"shared MLPerf archives not found under {SHARED_MLPERF}")
def test_every_accelerator_of_the_shared_rounds_has_the_peaks_its_hardware_supports():
    matcher = default_matcher()
    used = {matcher.mlperf(name, system) for name, system in mlperf_accelerator_names()} - {None}
    typed = pl.read_csv(ACCELERATORS_CSV, infer_schema_length=0).with_columns(
        pl.col("peak_dense_bf16_flops", "peak_dense_fp8_flops").cast(pl.Float64))
    rows = {r["accelerator"]: r for r in typed.iter_rows(named=True)}
    assert used <= set(rows), used - set(rows)
    missing = []
    for key in sorted(used):
        if rows[key]["peak_dense_bf16_flops"] is None and key not in NO_BF16 | set(NO_PUBLISHED_BF16_PEAK):
            missing.append(f"{key}: BF16")
        if key.startswith(HAS_FP8) and rows[key]["peak_dense_fp8_flops"] is None:
            missing.append(f"{key}: FP8")
    assert not missing
    assert len(used) >= 25


@pytest.mark.parametrize(("name", "key"), [
    ("A100", "nvidia-a100-sxm-40gb"), ("A100-80GB", "nvidia-a100-sxm-80gb"), ("A100-80G", "nvidia-a100-sxm-80gb"),
    ("A100-80GB-SXM", "nvidia-a100-sxm-80gb"), ("A30", "nvidia-a30"), ("A10G", "nvidia-a10g"),
    ("B200", "nvidia-b200"), ("H100", "nvidia-h100-sxm-80gb"), ("H100-MEGA", "nvidia-h100-sxm-80gb"),
    ("H100-NVL", "nvidia-h100-nvl-94gb"), ("H100-SXM", "nvidia-h100-sxm-80gb"), ("H200", "nvidia-h200-141gb"),
    ("H200-SXM", "nvidia-h200-141gb"), ("L4", "nvidia-l4"), ("L40", "nvidia-l40"), ("L40S", "nvidia-l40s"),
    ("MI300X", "amd-mi300x"), ("T4", "nvidia-t4"), ("V100", "nvidia-v100-sxm2-16gb"),
    ("V100-32G", "nvidia-v100-sxm2-32gb"), ("V100-32GB", "nvidia-v100-sxm2-32gb"), ("Trainium", "aws-trainium"),
])
def test_skypilot_accelerator_names(name, key):
    """Every AcceleratorName of the SkyPilot catalog fixtures maps by the same naming rule."""
    assert default_matcher().rule(name) == key
