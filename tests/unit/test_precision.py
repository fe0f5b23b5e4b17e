"""The training precision a log or a systems file states, and MFU against that precision's peak."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.lib.mlperf.mllog import MLLOG, parse_log
from pipelines.lib.mlperf.precision import (
    PRECISION_SPELLINGS_CSV,
    describe_statements,
    log_precision,
    precision_of_spelling,
    stated_precisions,
    statement_precision,
    system_precision,
)
from pipelines.lib.reference.vocabulary import values
from support.marts import fixture_database

RUN_START = b':::MLLOG {"key": "run_start", "value": null, "time_ms": 1}\n'


@pytest.mark.parametrize(("log", "precision"), [
    # NeMo YAML dump with rank prefixes (NVIDIA v4.0-v5.0 LLM logs): FP8 GEMMs, BF16 elsewhere
    (b"0:   precision: bf16-mixed\n0:   fp8: true\n0:   fp8_hybrid: true\n", "fp8"),
    (b"  fp8: True\n", "fp8"),
    (b"  fp8: false\n  precision: bf16-mixed\n", "bf16"),
    (b"+ python train.py --fp8 --seed 1\n", "fp8"),
    (b"Namespace(batch_size=8, fp8=True, lr=0.1)\n", "fp8"),
    (b"config = {'fp8': True}\n", "fp8"),
    # Nebius v5.0 llama31_405b: NeMo passes the format as a string
    (b"[pretrain.py get_model_with_precision]: Passing the following values to llama config: {'fp8': 'e4m3', 'x': 1}\n",
     "fp8"),
    (b"TransformerConfig(num_layers=126, fp8='hybrid', fp8_margin=0)\n", "fp8"),
    (b"TransformerConfig(num_layers=126, fp8=None, fp8_recipe='delayed')\n", None),
    (b"  fp8: null\n  fp4: null\n  fp4_recipe: nvfp4\n", None),  # defaults printed, format off
    (b"  fp4: nvfp4\n  fp8: hybrid\n", "fp4"),
    (b"INFO:root:precision: fp16\n", "fp16"),  # v1.0
    (b"    precision: 16-mixed\n", "fp16"),
    (b"  fp4: true\n", "fp4"),
    # not statements of the training format
    (b"0: using fp8 FMHA\n", None),  # FP8 attention kernels only
    (b"+ FP8_EMBEDDING=1\n+ CMD_SUFFIX=(${CMD_SUFFIX[@]} --fp8_embedding)\n", None),  # DLRM embedding storage
    (b"      fp8_buf: 1\n  fp8_params: true\n", None),  # tuning keys without `fp8: true`
    (b"0: Using 16bit Automatic Mixed Precision (AMP)\n", None),
    (b"Transformer Engine 1.4, NeMo 24.03\n", None),
    (b"", None),
])
def test_log_precision(log, precision):
    found, evidence = log_precision(log + RUN_START)
    assert found == precision
    assert (evidence is None) == (precision is None)


def test_only_the_configuration_before_run_start_counts():
    assert log_precision(b"  precision: bf16\n" + RUN_START + b"  fp8: true\n") == ("bf16", "precision: bf16")
    # an evaluation line after the start is not configuration
    assert log_precision(RUN_START + b" Average Precision (AP) @[ IoU=0.50 ] = 0.377\n") == (None, None)
    assert log_precision(b"  fp8: true\n")[0] == "fp8"  # no run_start: the whole log is read


def _statements(*pairs):
    text = "".join(f':::MLLOG {{"time_ms": 1, "key": "{key}", "value": "{value}", "metadata": {{}}}}\n'
                   for key, value in pairs)
    return stated_precisions(parse_log(text.encode(), MLLOG).lines)


@pytest.mark.parametrize(("pairs", "precision", "unmapped"), [
    # AMD v6.0's spelling, and the 6.0 rules' own keys
    ([("lowest_numerical_precision_linear", "mxfp4")], "fp4", None),
    ([("lowest_numerical_precision_in_linear", "nvfp4"), ("lowest_numerical_precision_in_attn", "bfloat16"),
      ("lowest_numerical_precision_in_comm", "bfloat16")], "fp4", None),
    ([("lowest_numerical_precision_in_attn", "fp8"), ("lowest_numerical_precision_in_linear", "FP8")], "fp8", None),
    ([("lowest_numerical_precision_in_linear", "Graphcore FLOAT 16.16")], "fp16", None),
    ([("lowest_numerical_precision", "bf16")], "bf16", None),  # no scope: overall
    ([("lowest_numerical_precision_in_linear", "tf32")], "tf32", None),
    # a value nobody mapped is kept and flagged, never guessed
    ([("lowest_numerical_precision_in_linear", "mxfp6")], None, "lowest_numerical_precision_in_linear: mxfp6"),
    # only attention or communication stated: the linear layers' format is not known from these lines
    ([("lowest_numerical_precision_in_attn", "fp8")], None, None),
])
def test_precision_statements_of_the_6_0_rules_and_their_spellings(pairs, precision, unmapped):
    statements = _statements(*pairs)
    found, evidence, not_mapped = statement_precision(statements)
    assert (found, not_mapped) == (precision, unmapped)
    assert (evidence is None) == (precision is None)
    assert describe_statements(statements) == "; ".join(f"{k}: {v}" for k, v in pairs)


def test_every_spelling_maps_to_the_precision_vocabulary_and_every_value_the_6_0_rules_allow_is_spelled():
    import csv

    with PRECISION_SPELLINGS_CSV.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["precision"] for r in rows} <= set(values("precision"))
    assert len({r["spelling"] for r in rows}) == len(rows)
    # the allowed values of lowest_numerical_precision_in_linear in training_6.0.0/common.yaml (6.0.0-rc6)
    allowed = ["fp64", "fp32", "tf32", "fp16", "fp8", "nvfp4", "mxfp4", "bfloat16", "Graphcore FLOAT 16.16", "int8",
               "uint8", "int4", "uint4"]
    assert all(precision_of_spelling(value) is not None for value in allowed)
    assert precision_of_spelling("  MXFP4 ") == "fp4" and precision_of_spelling(4) is None


def test_system_precision():
    assert system_precision({"sw_notes": "FP8 training with Transformer Engine"})[0] == "fp8"
    assert system_precision({"framework": "NeMo 24.09, Transformer Engine"}) == (None, None)
    assert system_precision({"system_name": "Dell Precision 7920", "hw_notes": ""}) == (None, None)
    assert system_precision({"system_name": "fp8-box", "notes": "bf16 mixed precision"})[0] == "bf16"


def _mfu_rows(con):
    return {r[0]: r[1:] for r in con.execute(
        "select system, precision, precision_source, peak_flops_used, mfu, mfu_null_reason from mart_utilization"
    ).fetchall()}


def test_mfu_uses_the_peak_of_the_stated_precision(tmp_path):
    con = duckdb.connect(str(fixture_database(tmp_path / "marts.duckdb")))
    # an FP8 run stated in the log; a BF16 statement in a systems file; the rest default to BF16
    con.execute("update fct_training_run set precision_logged = 'fp8', precision_evidence = '0:   fp8: true' "
                "where system = 'dgxh100_n128'")
    con.execute("update dim_accelerator set peak_dense_fp8_flops = 1979e12 where accelerator = 'nvidia-h100-sxm-80gb'")
    con.execute("update dim_system set precision_stated = 'fp8', precision_evidence = 'sw_notes: FP8' "
                "where system = 'tpu-v5p-512'")  # TPU v5p has no FP8 peak
    from pipelines.lib.warehouse.models import load_models

    con.execute(f"create or replace table mart_utilization as {load_models()['mart_utilization'].sql}")
    rows = _mfu_rows(con)
    precision, source, peak, mfu, reason = rows["dgxh100_n128"]
    assert (precision, source, peak) == ("fp8", "log", 1979e12)
    assert mfu == pytest.approx(1.2e9 * 6 * 175e9 / (26.0 * 60 * 1024 * 1979e12))
    # the other results of the same stack (NVIDIA, gpt3, H100, pytorch) state nothing: the stack's FP8
    assert rows["dgxh100_n64"][:3] == ("fp8", "stack", 1979e12)
    assert rows["tpu-v5p-512"][1] == "system_description" and rows["tpu-v5p-512"][3] is None
    assert rows["tpu-v5p-512"][4] == "no dense FP8 peak for google-tpu-v5p in dim_accelerator"
    assert rows["tpu-v5p-2048"][:2] == ("fp8", "stack")
    # a stack where nothing states a format: BF16 assumed, and said so
    assert rows["tpu-trillium-512"][:3] == ("bf16", "assumed_bf16", 918e12)
    assert rows["acme-x"][4] == "accelerator not mapped (see the unmapped_accelerators check)"
    evidence = con.execute("select precision_evidence, mfu_basis from mart_utilization "
                           "where system = 'dgxh100_n64'").fetchone()
    assert evidence[0] == "same stack: dgxh100_n128 (log)"
    assert evidence[1] == "dense FP8 peak of nvidia-h100-sxm-80gb (1.979e+15 FLOP/s), precision from stack"


def test_an_unmapped_statement_is_flagged_and_never_guessed_and_a_stated_one_wins(tmp_path):
    con = duckdb.connect(str(fixture_database(tmp_path / "marts.duckdb")))
    con.execute("update dim_accelerator set peak_dense_fp8_flops = 1979e12 where accelerator = 'nvidia-h100-sxm-80gb'")
    con.execute("update fct_training_run set precision_statement_unmapped = 'lowest_numerical_precision_in_linear: "
                "mxfp6' where system = 'dgxh100_n128'")
    con.execute("update fct_training_run set precision_logged = 'tf32', precision_evidence = "
                "'lowest_numerical_precision_in_linear: tf32' where system = 'tpu-v5p-512'")
    from pipelines.lib.warehouse.models import load_models

    con.execute(f"create or replace table mart_utilization as {load_models()['mart_utilization'].sql}")
    rows = _mfu_rows(con)
    precision, source, peak, mfu, reason = rows["dgxh100_n128"]
    assert (precision, source, peak, mfu) == (None, "unmapped_statement", None, None)
    assert "mxfp6" in reason and reason.endswith(": not guessed")
    # its stack is not given a precision by it: the other result states nothing and stays BF16, assumed
    assert rows["dgxh100_n64"][:2] == ("bf16", "assumed_bf16")
    # a precision without a kept peak: no MFU, said so
    assert rows["tpu-v5p-512"][:4] == ("tf32", "log", None, None)
    assert rows["tpu-v5p-512"][4] == "no dense TF32 peak for google-tpu-v5p in dim_accelerator"


def test_a_result_faster_than_the_bf16_peak_keeps_its_precision_and_its_mfu_is_nulled(tmp_path):
    """No threshold decides the precision: a result stating nothing whose FLOP/s exceed the BF16 peak keeps
    BF16 (assumed) and its MFU is NULL with the reason, at every size of its stack alike."""
    con = duckdb.connect(str(fixture_database(tmp_path / "marts.duckdb")))
    con.execute("update dim_accelerator set peak_dense_fp8_flops = 1979e12 where accelerator = 'nvidia-h100-sxm-80gb'")
    # two thirds of its real time: 1.2e9 tokens × 6 × 175e9 / (26/1.5 min × 1024 GPUs) ≈ 1.18e15 FLOP/s > 989e12
    con.execute("update fct_training_run set time_to_train_minutes = time_to_train_minutes / 1.5 "
                "where system = 'dgxh100_n128'")
    from pipelines.lib.warehouse.models import load_models

    con.execute(f"create or replace table mart_utilization as {load_models()['mart_utilization'].sql}")
    rows = _mfu_rows(con)
    precision, source, peak, mfu, reason = rows["dgxh100_n128"]
    assert (precision, source, peak, mfu) == ("bf16", "assumed_bf16", 989e12, None)
    assert reason.startswith("MFU 1.19") and "above 1 against the dense BF16 peak (assumed_bf16)" in reason
    assert rows["dgxh100_n64"][:3] == ("bf16", "assumed_bf16", 989e12)  # the same stack, the same precision
    assert 0 < rows["dgxh100_n64"][3] < 1


def test_checks_name_the_rows(tmp_path):
    """unmapped_accelerators warns and names systems; an MFU above 1 is nulled and the plausibility test
    names the row."""
    import dagster as dg

    from pipelines.defs.resources import WarehouseLocation
    from pipelines.defs.warehouse.checks import accelerators_without_peak, unmapped_accelerators
    from pipelines.lib.warehouse.models import load_models
    from support.marts import sql_test_failures

    con = duckdb.connect(str(fixture_database(tmp_path / "mlperf.duckdb")))
    con.execute("alter table dim_system add column accelerator_mapping varchar")
    con.execute("update dim_system set accelerator_mapping = case when accelerator is null then 'unmapped' "
                "else 'mapped' end")
    con.execute("update fct_training_run set time_to_train_minutes = time_to_train_minutes / 3 "
                "where system = 'tpu-v5p-2048'")  # three times faster than the peak allows
    con.execute("update dim_accelerator set peak_dense_bf16_flops = null, note = 'not verified' "
                "where accelerator = 'google-tpu-trillium'")
    con.execute(f"create or replace table mart_utilization as {load_models()['mart_utilization'].sql}")
    failures = sql_test_failures(con, {"mart_utilization"})
    assert len(failures) == 1 and failures[0].startswith("mart_utilization_mfu_above_one: [('v4.1', 'Google', "
                                                         "'tpu-v5p-2048', 'gpt3', 'bf16', 'assumed_bf16', 'MFU ")
    con.close()
    location = WarehouseLocation(directory=str(tmp_path))

    unmapped = unmapped_accelerators(warehouse_location=location)
    assert not unmapped.passed and unmapped.severity == dg.AssetCheckSeverity.WARN
    assert "v4.1 Acme acme-x: 'Acme X1'" in unmapped.description
    assert unmapped.metadata["unmapped"].value == ["v4.1 Acme acme-x: 'Acme X1'"]

    no_peak = accelerators_without_peak(warehouse_location=location)
    assert not no_peak.passed and no_peak.severity == dg.AssetCheckSeverity.WARN
    assert no_peak.metadata["without_peak"].value == ["google-tpu-trillium (BF16): 4 results in v4.1; not verified"]
