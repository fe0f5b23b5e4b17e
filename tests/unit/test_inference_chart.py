"""The Inference price chart names every accelerator in full (names run to 75 characters upstream)."""

import json

from pipelines.lib.report.charts import render_svg
from pipelines.lib.report.inference import price_chart

# the longest accelerator name of MLPerf Inference v5.1's closed division (a mixed system)
LONG = "AMD Instinct MI300X 192GB HBM3 (x32), AMD Instinct MI325X 256GB HBM3e (x16)"


def _row(accelerator: str, usd: float, per_accelerator: float) -> dict:
    return {"submitter": "acme", "system_name": f"box {accelerator[:5]}", "accelerator": accelerator,
            "usd_per_million": usd, "performance_per_accelerator": per_accelerator}


def test_the_legend_shows_the_longest_accelerator_name_whole():
    group = {"rows": [_row(LONG, 0.8, 3000.0), _row("B200 SXM 180GB", 0.4, 4000.0),
                      _row("unpriced", None, 5000.0)], "unit": "tokens", "units": "Tokens/s"}
    spec = price_chart(group)
    assert [v["accelerator"] for v in spec["data"]["values"]] == [LONG, "B200 SXM 180GB"]  # unpriced: no point
    svg = render_svg(json.dumps(spec))
    assert LONG.replace("&", "&amp;") in svg and "…" not in svg


def test_fewer_than_two_priced_results_draw_no_chart():
    assert price_chart({"rows": [_row(LONG, 0.8, 3000.0), _row("x", None, 1.0)], "unit": "t", "units": "T"}) is None
