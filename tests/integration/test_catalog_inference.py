"""The SkyPilot catalog's v8 offers reach the Inference costs: the shared Inference round refreshed in this process with
every shared price list (../shared/prices, served on 127.0.0.1), then each result on an accelerator the catalog prices
(RTX PRO 6000: only the v8 catalog lists it) has its USD per million tokens at the cheapest bookable offer."""

from __future__ import annotations

import duckdb
import pytest

from pipelines.lib.prices.catalog import provider_kinds
from support.http_server import LoopbackServer
from support.paths import SHARED_MLPERF, SHARED_PRICES, needs_shared_mlperf
from support.price_site import CATALOG_ROOT, refresh_environment
from support.refresh import refresh_settings
from support.shared_build import INFERENCE_TEMPLATE, shared_inference_rounds

pytestmark = [needs_shared_mlperf(), pytest.mark.slow, pytest.mark.shared,
              pytest.mark.skipif(not CATALOG_ROOT.is_dir(), reason=f"SkyPilot catalog fixtures not found at {CATALOG_ROOT}")]
NEW = ("nvidia-rtx-pro-6000", "nvidia-b300", "amd-mi355x")


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    from pipelines.runner.jobs import refresh

    rounds = shared_inference_rounds()
    if not rounds:
        pytest.skip("no MLPerf Inference archive in ../shared/mlperf/inference")
    base = tmp_path_factory.mktemp("warehouse")
    with LoopbackServer(SHARED_MLPERF) as server, LoopbackServer() as prices:
        with refresh_environment(base, prices) as with_prices:
            assert with_prices, SHARED_PRICES
            summary = refresh(refresh_settings(hpc_rounds=[], inference_rounds=rounds,
                                               inference_results_url_template=server.url + INFERENCE_TEMPLATE),
                              prices=True, backoff_seconds=0.01)
    assert summary.published, summary.render()
    with duckdb.connect(str(base / "mlperf.duckdb"), read_only=True) as connection:
        yield connection


def test_the_new_accelerators_have_bookable_catalog_offers(con):
    offers = con.execute("""select accelerator, provider, price_source, provider_kind, price_per_accelerator_hour_usd
        from int_accelerator_offer where is_bookable and accelerator in ? order by 1""", [list(NEW)]).fetchall()
    by = {a: (p, src, kind, price) for a, p, src, kind, price in offers}
    assert set(by) == set(NEW)
    for accelerator, (provider, _source, kind, price) in by.items():
        assert kind == provider_kinds()[provider] and kind in ("hyperscaler", "neocloud") and price > 0, accelerator
    # the cheapest bookable RTX PRO 6000 hour is a catalog offer (no API or list price exists for it)
    assert by["nvidia-rtx-pro-6000"][1] == "catalog"
    rows = con.execute("""select catalog_version, count(*) from fct_cloud_price_current
        where accelerator in ? and price_source = 'catalog' group by 1""", [list(NEW)]).fetchall()
    assert dict(rows).keys() == {"v8"}  # every such offer comes from the newest catalog version


def test_inference_results_on_a_catalog_priced_accelerator_get_a_price_per_million(con):
    rows = con.execute("""select c.usd_per_million, c.provider, c.price_source, c.source_url, c.no_cost_reason,
            c.price_per_accelerator_hour_usd, o.price_per_accelerator_hour_usd
        from mart_inference_cost as c
        join int_accelerator_offer as o on o.accelerator = c.accelerator and o.is_bookable
        where c.accelerator = 'nvidia-rtx-pro-6000' and c.unit = 'tokens'""").fetchall()
    assert rows, "the shared Inference round has RTX PRO 6000 token results"
    for per_million, provider, source, url, reason, price, cheapest in rows:
        assert per_million > 0 and reason is None and source == "catalog" and price == pytest.approx(cheapest)
        assert f"/catalogs/v8/{provider}/vms.csv" in url
    latency = con.execute("""select count(*) from mart_inference_cost where accelerator = 'nvidia-rtx-pro-6000'
        and usd_per_million is null and no_cost_reason not like '%latency%'""").fetchone()[0]
    assert latency == 0  # every RTX PRO 6000 result without a price is a latency result, nothing else
