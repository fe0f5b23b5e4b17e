"""Property-based tests (Hypothesis): whatever the input, the log, systems and price parsers
either parse it or turn it into quarantine rows (or, for a whole price page that is not one, a
ValueError that fails only that provider with one line). Never another exception."""

from __future__ import annotations

import io
import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipelines.lib.mlperf.mllog import MLL, MLLOG, MLP05, parse_log
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.scorer import EVENT_COLUMNS, score_run
from pipelines.lib.mlperf.systems import parse_system
from pipelines.lib.prices.aws import parse_aws_offer
from pipelines.lib.prices.azure import parse_azure_retail_page
from pipelines.lib.prices.gcp import parse_gcp_skus
from pipelines.lib.prices.normalize import ParsedPrices
from pipelines.lib.prices.oci import parse_oci_products
from support.logs import package_rules

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=12),
    st.sampled_from(["1 Hour", "USD", "Consumption", "Reservation", "h", "GPU", "Standard_ND96isr_H100_v5",
                     "p5.48xlarge", "Compute - GPU - H100", "GPU Per Hour", "OnDemand", "1 Year", "NaN", "1e400"]),
)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
    st.sampled_from(["value", "metadata", "units", "nanos", "retailPrice", "type", "items", "status", "epoch_num",
                     "samples_count", "epoch_count", "first_epoch_num", "currencyCode", "x"]) | st.text(max_size=6),
    inner, max_size=5), max_leaves=12)

LOG_KEYS = ["init_start", "init_stop", "run_start", "run_stop", "block_start", "block_stop", "epoch_start",
            "epoch_stop", "eval_start", "eval_stop", "eval_accuracy", "submission_benchmark", "submission_division",
            "submission_org", "submission_platform", "submission_status", "global_batch_size", "seed", "cache_clear",
            "train_samples", "eval_samples", "opt_base_learning_rate"]


@st.composite
def mllog_lines(draw):
    record = {"key": draw(st.sampled_from(LOG_KEYS) | st.text(max_size=8)),
              "value": draw(json_values),
              "time_ms": draw(st.one_of(st.integers(0, 2**45), st.floats(allow_nan=True), st.booleans(), st.text(max_size=4))),
              "metadata": draw(st.one_of(json_values, st.fixed_dictionaries({
                  "status": st.sampled_from(["success", "aborted"]) | scalars,
                  "epoch_num": scalars, "samples_count": scalars, "epoch_count": scalars,
                  "first_epoch_num": scalars})))}
    for field in draw(st.sets(st.sampled_from(["key", "value", "time_ms", "metadata"]), max_size=2)):
        del record[field]
    text = json.dumps(record, allow_nan=True)
    prefix = draw(st.sampled_from(["", "[0] ", "rank 3: ", ":::MLLOG :::MLLOG "]))
    return prefix + ":::MLLOG " + text


log_bodies = st.one_of(
    st.lists(mllog_lines() | st.text(max_size=30), max_size=25).map(lambda ls: "\n".join(ls).encode("utf-8", "surrogatepass")),
    st.binary(max_size=300),
    st.lists(st.sampled_from([":::MLL 1558 run_start: {}", ":::MLL 1e999 run_stop: {\"status\": \"success\"}",
                              ":::MLPv0.5.0 resnet 1558.5 (x.py:1) run_start", ":::MLPv0.5.0 resnet 99e999 (x:1) run_final",
                              ":::MLL 1.2.3 key: [", "\r", "\r\n", ":::MLPv0.5.0 ssd 1 (a) run_stop: {\"success\": true}"]),
             max_size=12).map(lambda ls: "\n".join(ls).encode()),
)


@SETTINGS
@given(log_bodies)
def test_any_result_log_is_parsed_or_counted_as_errors(data):
    for fmt in (MLLOG, MLL, MLP05):
        log = parse_log(data, fmt)
        assert log.total_lines >= len(log.lines) + len(log.errors)
        assert all(math.isfinite(line.time_ms) for line in log.lines)


@pytest.mark.slow
@SETTINGS
@given(log_bodies, st.sampled_from(["v4.1", "v0.6", "v0.5"]))
def test_any_result_log_is_scored_or_dropped_with_a_reason_never_an_exception(data, round_version):
    events = {c: [] for c in EVENT_COLUMNS}
    rules = RoundRules(None, None) if round_version == "v0.5" else package_rules(round_version)
    row = score_run(data, round_version, rules, events, "Acme/results/box/ssd/result_0.txt")
    assert row["passed_compliance"] or row["drop_reason"]
    minutes = row["time_to_train_minutes"]
    assert minutes is None or math.isfinite(minutes)


system_docs = st.one_of(
    json_values.map(lambda v: json.dumps(v, allow_nan=True).encode()),
    st.dictionaries(st.sampled_from(["accelerators_per_node", "number_of_nodes", "nodes", "division", "status",
                                     "system_name", "accelerator_model_name", "framework", "num_nodes"]),
                    json_values, max_size=6).map(lambda d: json.dumps(d, allow_nan=True).encode()),
    st.binary(max_size=200),
    st.integers(1, 5000).map(lambda n: b"[" * n + b"]" * n),
)


@SETTINGS
@given(system_docs)
def test_any_systems_file_is_a_row_or_a_value_error(data):
    try:
        row = parse_system(data, "Acme", "box")
    except ValueError:
        return  # the round parser turns it into a quarantine row with this reason
    for column in ("accelerators_per_node", "number_of_nodes", "accelerator_count"):
        assert row[column] is None or (isinstance(row[column], int) and row[column] >= 0)


def _page(items_key: str):
    return st.one_of(
        st.lists(json_values | st.dictionaries(st.sampled_from(
            ["armSkuName", "retailPrice", "unitOfMeasure", "type", "currencyCode", "productName", "meterName",
             "savingsPlan", "reservationTerm", "category", "pricingInfo", "description", "serviceRegions",
             "displayName", "metricName", "serviceCategory", "currencyCodeLocalizations", "partNumber"]),
            json_values, max_size=8), max_size=6).map(lambda items: json.dumps({items_key: items}, allow_nan=True).encode()),
        json_values.map(lambda v: json.dumps(v, allow_nan=True).encode()),
        st.binary(max_size=100),
    )


def _prices_or_value_error(parse, body):
    try:
        parsed = parse(body)
    except ValueError:
        return None  # a page that is not one: that provider fails with one line, the others publish
    assert isinstance(parsed, ParsedPrices)
    prices = parsed.prices
    assert prices.filter(~prices["price_per_accelerator_hour_usd"].is_finite()).is_empty()
    assert (prices["price_per_hour_usd"] > 0).all()
    return parsed


@pytest.mark.slow
@SETTINGS
@given(_page("Items"))
def test_any_azure_page_gives_prices_quarantine_or_a_value_error(body):
    _prices_or_value_error(parse_azure_retail_page, body)


@pytest.mark.slow
@SETTINGS
@given(_page("skus"))
def test_any_gcp_page_gives_prices_quarantine_or_a_value_error(body):
    _prices_or_value_error(parse_gcp_skus, body)


@pytest.mark.slow
@SETTINGS
@given(_page("items"))
def test_any_oci_page_gives_prices_quarantine_or_a_value_error(body):
    _prices_or_value_error(parse_oci_products, body)


@pytest.mark.slow
@SETTINGS
@given(st.dictionaries(st.text(min_size=1, max_size=10), json_values, max_size=4),
       st.dictionaries(st.text(min_size=8, max_size=12, alphabet="ABCDEFGH0123"), json_values, max_size=3))
def test_any_aws_offer_gives_prices_quarantine_or_a_value_error(products, terms):
    body = json.dumps({"products": products, "terms": {"OnDemand": terms}}, allow_nan=True).encode()
    _prices_or_value_error(lambda b: parse_aws_offer(io.BytesIO(b), chunk_size=64), body)


def test_booleans_are_not_prices():
    item = {"armSkuName": "Standard_ND96isr_H100_v5", "retailPrice": True, "unitOfMeasure": "1 Hour",
            "type": "Consumption", "currencyCode": "USD", "productName": "ND H100 v5", "meterName": "ND96isr H100 v5",
            "armRegionName": "eastus"}
    parsed = parse_azure_retail_page(json.dumps({"Items": [item]}))
    assert parsed.prices.is_empty() and "boolean" in parsed.quarantine["reason"][0]
