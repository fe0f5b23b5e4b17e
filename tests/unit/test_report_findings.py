"""The report's findings sentences from hand-made rows (no warehouse)."""

from __future__ import annotations

import pytest

from pipelines.lib.report.figures import compute_findings


def _data(unpriced: int) -> dict:
    results = [{"submitter": "Acme", "system": f"box{i}", "accelerator": "h100", "accelerator_count": 8,
                "score_minutes": 10.0 + i} for i in range(3)]
    return {"scaling": [], "bookable": [], "results": results, "unpriced": results[:unpriced], "systems": {},
            "accelerator_names": {"h100": "H100"}, "benchmark_name": "BERT"}


@pytest.mark.parametrize(("unpriced", "sentence"), [
    (1, "1 scored system has no bookable price and is listed under “Systems without a price”."),
    (2, "2 scored systems have no bookable price and are listed under “Systems without a price”."),
])
def test_the_unpriced_systems_are_counted_in_a_sentence_that_agrees_with_the_count(unpriced, sentence):
    findings = compute_findings(_data(unpriced), "bert")
    assert findings[0].startswith("Fastest: Acme box0, 8× H100")
    assert findings[-1] == sentence


def test_no_unpriced_system_gives_no_such_sentence():
    assert not any("no bookable price" in f for f in compute_findings(_data(0), "bert"))
