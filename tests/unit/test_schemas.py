"""Each staged column is written down once, in a Pandera model; the Polars schemas are derived from it."""

import polars as pl
import pytest

from pipelines.lib.mlperf.scorer import EVENT_COLUMNS
from pipelines.lib.mlperf.tables import TABLES
from pipelines.lib.prices.normalize import PARSED_QUARANTINE_SCHEMA, PRICE_SCHEMA, PriceCollector
from pipelines.lib.reference.events import EVENT_KEYS
from pipelines.lib.staging.validation import QUARANTINE_SCHEMA, quarantine_frame
from pipelines.lib.warehouse.raw_tables import RAW_TABLES
from schemas import polars_schema
from schemas.mlperf import TrainingEvent
from schemas.prices import PRICING_MODELS, CloudPriceRow
from schemas.quarantine import QuarantineRow


def test_every_raw_table_takes_its_columns_from_a_model():
    for name, (types, model, _file_column) in TABLES.items():
        assert types == polars_schema(model) and RAW_TABLES[name] is types, name
    assert RAW_TABLES["quarantine"] == QUARANTINE_SCHEMA == polars_schema(QuarantineRow)
    assert RAW_TABLES["cloud_prices"] == polars_schema(CloudPriceRow)
    assert list(RAW_TABLES["cloud_prices"])[-2:] == ["fetched_at", "snapshot"]
    assert list(PRICE_SCHEMA) == list(RAW_TABLES["cloud_prices"])[:-2]
    assert list(PARSED_QUARANTINE_SCHEMA) == ["source", "file", "record", "reason", "payload"]
    assert polars_schema(TrainingEvent)["time_ms"] == pl.Float64 and polars_schema(TrainingEvent)["lineno"] == pl.Int64


def test_the_parsers_event_columns_are_the_models():
    keyed = ("round", "submitter", "system", "benchmark")  # added from the run, not by the parser
    assert list(EVENT_COLUMNS) == [c for c in polars_schema(TrainingEvent) if c not in keyed]


def test_event_keys_and_pricing_models_are_what_validation_accepts():
    events = pl.DataFrame({"round": ["v4.1"] * 2, "run_file": ["a", "b"], "lineno": [1, 2], "time_ms": [1.0, 2.0],
                           "key": [sorted(EVENT_KEYS)[0], "not_an_event"]},
                          schema_overrides={"lineno": pl.Int64})
    events = events.with_columns(*(pl.lit(None, t).alias(c) for c, t in polars_schema(TrainingEvent).items()
                                   if c not in events.columns)).select(list(polars_schema(TrainingEvent)))
    with pytest.raises(Exception, match="not_an_event"):
        TrainingEvent.validate(events, lazy=True)
    collector = PriceCollector("test")
    for model in (*PRICING_MODELS, "weekly"):
        collector.add_price(provider="p", sku=model, region="r", pricing_model=model, accelerator="a",
                            accelerators_per_instance=1, price_per_hour=1.0, currency="USD", unit="hour",
                            effective_date=None, raw_ref=model, payload={})
    result = collector.result()
    assert sorted(result.prices["pricing_model"]) == sorted(PRICING_MODELS)
    assert result.quarantine["reason"].to_list() == ["unknown pricing model 'weekly'"]
    CloudPriceRow.validate(result.prices)


def test_a_quarantine_row_needs_a_reason():
    QuarantineRow.validate(quarantine_frame([{"source": "s", "partition": "p", "reason": "why"}]))
    with pytest.raises(Exception, match="str_length"):
        QuarantineRow.validate(quarantine_frame([{"source": "s", "reason": ""}]), lazy=True)


def test_quarantine_reasons_keep_the_model_names_users_saw():
    """fct_quarantine.reason and values_nulled name the model as before the classes were named by what they hold."""
    from pipelines.lib.mlperf.tables import TABLES, _validated

    row = {"round": "v4.1", "submitter": "acme", "system": "box", "system_name": "Box", "division": "weird"}
    frames = _validated({"training_systems": [row]}, {"training_systems": TABLES["training_systems"]}, [], "v4.1",
                        "mlperf")
    reason = "MlperfSystem.division failed isin(['closed', 'open']) (value 'weird')"
    assert frames["training_systems"]["values_nulled"].to_list() == [f"{reason} (value nulled, row kept)"]
    assert frames["quarantine"]["reason"].to_list() == [f"{reason}: value nulled, row kept"]
