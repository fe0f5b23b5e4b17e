"""The static results site: pages and links, escaping of untrusted names, and a real browser
(Playwright for Python driving the system's Chromium) on a small synthetic warehouse and on the
shared v4.1 round served over HTTP on 127.0.0.1.

Screenshots go to $MLPERF_SCREENSHOT_DIR when set (else a temporary folder; the path is printed).
"""

from __future__ import annotations

import os
import re
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest
from markupsafe import escape

from pipelines.lib.report.site import build_site, github_links, slug
from support.marts import fixture_database
from support.paths import SHARED_MLPERF, needs_shared_mlperf

pytestmark = [pytest.mark.slow, pytest.mark.shared_build]  # three tests read the shared build

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
EVIL_NAME = '<script>window.pwned = 1; alert("x")</script> & \'Co\''
EVIL_FOLDER = "evil'\"<sys>/../x"
PROVISIONAL_WHY = "judged by training_4.1.0 of <b>abc</b> (default_branch), not v4.0's own rules: none ships them"


def screenshot_dir(tmp_path_factory) -> Path:
    path = Path(os.environ.get("MLPERF_SCREENSHOT_DIR") or tmp_path_factory.mktemp("screenshots"))
    path.mkdir(parents=True, exist_ok=True)
    print(f"screenshots in {path}")
    return path


# --- a small synthetic warehouse: always runs --------------------------------------------------

@pytest.fixture(scope="module")
def synthetic_site(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("wh") / "mlperf.duckdb"
    con = duckdb.connect(str(fixture_database(db)))
    # an untrusted submission: markup and quotes in its name, a path in its folder name
    con.execute("insert into dim_system (round, submitter, system, system_name, division, accelerator_model_name, "
                "accelerator_count, accelerator) values ('v4.1', 'Evil & Co', ?, ?, 'open', 'X<1>', 8, null)",
                [EVIL_FOLDER, EVIL_NAME])
    con.execute("insert into fct_training_result (round, submitter, system, benchmark, division, availability, "
                "accelerator_model_name, accelerator_count, score_minutes) values "
                "('v4.1', 'Evil & Co', ?, 'bert', 'open', 'preview', 'X<1>', 8, 12.5)", [EVIL_FOLDER])
    # an older round with one result, to order the index
    con.execute("insert into fct_training_result (round, submitter, system, benchmark, division, availability, "
                "accelerator_model_name, accelerator_count, score_minutes) values "
                "('v4.0', 'Google', 'tpu-v5p-512', 'gpt3', 'closed', 'available', 'GOOGLE-TPU-V5P', 512, 130.0)")
    # an MLPerf HPC round: one strong and one weak result of the same untrusted submission
    con.execute("create table fct_hpc_result as select * from (values "
                "('v3.0', 'Evil & Co', ?, ?, 'strong', 'deepcam', 'closed', 'X<1>', null, 8, 'ref<1>', 12.5, null, "
                "null::bigint, null::double, null::double, null::double, null), "
                "('v3.0', 'Evil & Co', ?, ?, 'weak', 'oc20', 'closed', 'X<1>', null, 8, 'ref<1>', null, null, "
                "10, 4.0, 20.0, 0.5, null)) as t(round, submitter, system, system_name, scale, benchmark, division, "
                "accelerator_model_name, accelerator, accelerator_count, ruleset_ref, score_minutes, no_score_reason, "
                "number_of_models, instance_scale, time_to_train_all_minutes, models_per_minute, throughput_null_reason)",
                [EVIL_FOLDER, EVIL_NAME, EVIL_FOLDER, EVIL_NAME])
    con.execute("create table mart_hpc_strong_scaling as select round, submitter, system, benchmark, true as is_base, "
                "1.0 as convergence_scaling_efficiency, 1 as family_size from fct_hpc_result where scale = 'strong'")
    con.execute("create table mart_hpc_cost as select round, submitter, system, benchmark, 99.0 as cost_to_train_usd, "
                "null as no_cost_reason "
                "from fct_hpc_result where scale = 'strong'")
    # v4.0 judged by rules not its own (the reason, as untrusted text, holds markup); v4.1 by its own
    con.execute("create table dim_rules_release as select * from (values ('training', 'v4.0', true, ?), "
                "('training', 'v4.1', false, 'its own release'), ('hpc', 'v3.0', false, 'its own release')) "
                "as t(suite, round, provisional, why)", [PROVISIONAL_WHY])
    con.close()
    out = tmp_path_factory.mktemp("site")
    with duckdb.connect(str(db), read_only=True) as ro:
        site = build_site(ro, out)
    assert site.rounds == ["v4.1", "v4.0"] and site.hpc_rounds == ["v3.0"]
    return out


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.links: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("href", "src") and value is not None:
                self.links.append((tag, key, value))
            if key == "id":
                self.ids.add(value)


def test_every_link_resolves_and_nothing_is_fetched(synthetic_site):
    pages = sorted(synthetic_site.rglob("*.html"))
    assert len(pages) >= 1 + 2 + 2 + 11  # index, 2 round tables, reports, a page per system
    external = set()
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        for tag, _attr, value in parser.links:
            if value.startswith(("data:", "#")):
                continue
            if value.startswith(("http://", "https://", "//")):
                # only plain links out, to the MLCommons repositories; scripts and styles are local
                assert tag == "a" and value.startswith("https://github.com/mlcommons/training_results_v"), (page, value)
                external.add(value)
                continue
            target = (page.parent / value.split("#")[0]).resolve()
            assert target.is_file(), f"{page.relative_to(synthetic_site)}: broken link {value}"
            assert target.is_relative_to(synthetic_site.resolve())
    assert external
    # the script and the stylesheet are the vendored package files
    assert (synthetic_site / "assets" / "site.js").stat().st_size > 1000
    assert "cdn" not in (synthetic_site / "assets" / "site.js").read_text().lower()


def test_untrusted_names_are_escaped_and_files_are_slugs(synthetic_site):
    for page in synthetic_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "<script>window.pwned" not in text, page
    for table in (synthetic_site / "rounds" / "v4.1" / "index.html", synthetic_site / "hpc" / "v3.0" / "index.html"):
        text = table.read_text(encoding="utf-8")
        assert "&lt;script&gt;window.pwned = 1; alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;Co&#39;" in text, table
    for path in synthetic_site.rglob("*"):
        assert re.fullmatch(r"[A-Za-z0-9._-]+", path.name), path
    assert slug("a/../b") != slug("a_.._b") and "/" not in slug("a/../b")


def test_a_round_judged_by_rules_not_its_own_says_so_on_every_page_of_its_scores(synthetic_site):
    """dim_rules_release's provisional rounds: a notice with the reason on the round's table and each system page,
    a mark on its index card; a round judged by its own rules has neither."""
    notice = '<p class="provisional" id="provisional"><strong>Provisional:</strong> ' + str(escape(PROVISIONAL_WHY))
    provisional_pages = [synthetic_site / "rounds" / "v4.0" / "index.html",
                         *(synthetic_site / "rounds" / "v4.0" / "systems").glob("*.html")]
    assert len(provisional_pages) == 2
    for page in provisional_pages:
        text = page.read_text(encoding="utf-8")
        assert notice in text and "scored as MLCommons published them" not in text, page
    own = [synthetic_site / "rounds" / "v4.1" / "index.html", *(synthetic_site / "rounds" / "v4.1" / "systems").glob("*.html"),
           synthetic_site / "hpc" / "v3.0" / "index.html"]
    for page in own:
        text = page.read_text(encoding="utf-8")
        assert 'id="provisional"' not in text and "scored as MLCommons published them" in text, page
    # each benchmark report of the round: the notice, and a glossary that does not call its scores official
    provisional_reports = sorted((synthetic_site / "rounds" / "v4.0").glob("*/report.html"))
    own_reports = sorted((synthetic_site / "rounds" / "v4.1").glob("*/report.html"))
    assert provisional_reports and own_reports
    for page in provisional_reports:
        text = page.read_text(encoding="utf-8")
        assert notice in text and "from the official scores" not in text, page
        assert "from the scores under the rules named at the top (provisional)" in text, page
    for page in own_reports:
        text = page.read_text(encoding="utf-8")
        assert 'id="provisional"' not in text and "from the official scores" in text, page
    cards = (synthetic_site / "index.html").read_text(encoding="utf-8").split('<div class="card">')
    marked = [c for c in cards if 'class="provisional-mark"' in c]
    assert len(marked) == 1 and "MLPerf Training v4.0" in marked[0] and str(escape(PROVISIONAL_WHY)) in marked[0]


def test_github_links():
    assert github_links("v4.1", "NVIDIA", "eos_n32_ngc24.09_nemo") == {
        "results": "https://github.com/mlcommons/training_results_v4.1/tree/main/NVIDIA/results/eos_n32_ngc24.09_nemo",
        "systems": "https://github.com/mlcommons/training_results_v4.1/blob/main/NVIDIA/systems/eos_n32_ngc24.09_nemo.json",
    }
    evil = github_links("v4.1", "Evil & Co", EVIL_FOLDER)
    assert evil["results"].endswith("/Evil%20%26%20Co/results/evil%27%22%3Csys%3E%2F..%2Fx")
    assert github_links("v4.1/../../x", "a", "b") == {}


def test_site_command(synthetic_site, tmp_path):
    """`mlperf-warehouse site` over a published warehouse file, one round, no reports."""
    from pipelines.cli import main

    base = tmp_path / "warehouse"
    base.mkdir()
    fixture_database(base / "mlperf.duckdb")
    assert main(["site", "--out", str(tmp_path / "site"), "--rounds", "v4.1", "--no-reports",
                 "--warehouse-dir", str(base)]) == 0
    assert (tmp_path / "site" / "rounds" / "v4.1" / "index.html").is_file()
    assert not (tmp_path / "site" / "rounds" / "v4.1" / "gpt3").exists()
    assert main(["site", "--out", str(tmp_path / "none"), "--rounds", "v0.1", "--warehouse-dir", str(base)]) == 2


# --- a real browser ----------------------------------------------------------------------------

@pytest.fixture
def browser():
    # per test, and so started after the module's warehouses are built: Playwright's sync API runs an
    # event loop in this thread, which Dagster's in-process refresh must not find running
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed: pip install -e '.[test]'")
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium; .ci/run does)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


def offline_page(browser, width=1280, height=900):
    """A page that may load file:// URLs only; anything else is refused and recorded."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.fetched_elsewhere, page.dialogs, page.errors = [], [], []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            page.fetched_elsewhere.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    return page


def visible_rows(page) -> list[dict]:
    return page.evaluate("""() => {
        const heads = Array.from(document.querySelectorAll('#results thead th')).map(
            th => th.getAttribute('data-benchmark') || th.textContent.replace(/[↕▲▼]/g, '').trim());
        return Array.from(document.querySelectorAll('#results tbody tr')).filter(tr => !tr.hidden).map(
            tr => Object.fromEntries(Array.from(tr.cells).map((td, i) => [heads[i], td.textContent.trim()])));
    }""")


def minutes(text: str) -> float | None:
    return float(text.replace(",", "")) if re.fullmatch(r"[\d,]+\.\d+", text or "") else None


def test_browser_filters_sorts_and_follows_links(browser, synthetic_site):
    page = offline_page(browser)
    page.goto((synthetic_site / "index.html").as_uri())
    assert page.locator("#rounds .card").count() == 2
    page.click("text=MLPerf Training v4.1")
    assert page.url.endswith("/rounds/v4.1/index.html")
    page.wait_for_function("document.getElementById('shown-count').textContent !== ''")  # site.js has run
    assert len(visible_rows(page)) == 11
    assert page.text_content("#shown-count") == "11 of 11 systems shown"

    page.select_option("#filter-accelerator", "google-tpu-trillium")
    rows = visible_rows(page)
    assert sorted(r["system"] for r in rows) == ["TPU TRILLIUM 1024", "TPU TRILLIUM 2048", "TPU TRILLIUM 3072",
                                                 "TPU TRILLIUM 512"]
    assert page.text_content("#shown-count") == "4 of 11 systems shown"
    assert "accelerator=google-tpu-trillium" in page.url  # the filtered view can be shared
    page.select_option("#filter-division", "open")
    assert visible_rows(page) == []
    page.click("#reset-filters")
    assert len(visible_rows(page)) == 11

    page.click("th[data-benchmark='gpt3'] button.sort")
    scores = [minutes(r["gpt3"]) for r in visible_rows(page)]
    scored = [s for s in scores if s is not None]
    assert scored == sorted(scored) and len(scored) == 9 and scores[:9] == scored  # empty cells last
    page.click("th[data-benchmark='gpt3'] button.sort")
    scored_desc = [s for s in (minutes(r["gpt3"]) for r in visible_rows(page)) if s is not None]
    assert scored_desc == sorted(scored, reverse=True)

    # the untrusted name shows as text and runs nothing
    assert page.locator("#results tbody td a", has_text="window.pwned").count() == 1
    page.click("th[data-benchmark='gpt3'] a.bench")
    assert page.url.endswith("/rounds/v4.1/gpt3/report.html")
    assert "GPT-3" in page.text_content("h1") and page.locator("#findings li").count() >= 3
    page.go_back()
    page.locator("#results tbody td a", has_text="window.pwned").click()
    assert page.text_content("h1") == EVIL_NAME
    assert page.get_attribute("#link-systems", "href").startswith(
        "https://github.com/mlcommons/training_results_v4.1/blob/main/Evil%20%26%20Co/systems/")
    assert page.evaluate("window.pwned") is None and page.dialogs == []
    assert page.fetched_elsewhere == [] and page.errors == []
    page.close()


# --- the shared v4.1 round, built over loopback HTTP with the shared price lists ---------------

@pytest.fixture(scope="module")
def real_site(tmp_path_factory):
    if not any(SHARED_MLPERF.glob("training_results_v4.1-*.tar.gz")):
        pytest.skip(f"shared v4.1 archive not found at {SHARED_MLPERF} (../shared beside the checkout)")
    from support.shared_build import shared_build

    build = shared_build(tmp_path_factory)  # every shared round and the price lists, built once per run
    assert build.published, build.summary
    db = build.db
    out = tmp_path_factory.mktemp("real_site")
    with duckdb.connect(str(db), read_only=True) as con:
        site = build_site(con, out, ["v4.1"])
    assert site.rounds == ["v4.1"] and ("v4.1", "gpt3") in site.reports
    return out, db


@needs_shared_mlperf()
def test_browser_on_the_shared_v41_round(browser, real_site, tmp_path_factory):
    out, db = real_site
    shots = screenshot_dir(tmp_path_factory)
    with duckdb.connect(str(db), read_only=True) as con:
        trillium = sorted(n for (n,) in con.execute("""
            select distinct coalesce(s.system_name, r.system) from fct_training_result r
            join dim_system s using (round, submitter, system)
            where r.round = 'v4.1' and s.accelerator = 'google-tpu-v6e'""").fetchall())
        trillium_model = con.execute(
            "select replace(model, ' (per chip)', '') from dim_accelerator where accelerator = 'google-tpu-v6e'"
        ).fetchone()[0]
        fastest_gpt3 = con.execute("""
            select coalesce(s.system_name, r.system), r.score_minutes from fct_training_result r
            join dim_system s using (round, submitter, system)
            where r.round = 'v4.1' and r.benchmark = 'gpt3' and r.score_minutes is not null
            order by r.score_minutes limit 1""").fetchone()
        systems = con.execute(
            "select count(distinct (submitter, system)) from fct_training_result where round = 'v4.1'").fetchone()[0]

    page = offline_page(browser)
    page.goto((out / "index.html").as_uri())
    page.screenshot(path=str(shots / "site_index.png"))
    page.click("text=MLPerf Training v4.1")
    assert len(visible_rows(page)) == systems
    page.screenshot(path=str(shots / "site_round_v4.1.png"))

    page.select_option("#filter-accelerator", trillium_model)
    rows = visible_rows(page)
    assert trillium and sorted(r["system"] for r in rows) == trillium
    assert {r["accelerator"] for r in rows} == {trillium_model}
    page.screenshot(path=str(shots / "site_round_v4.1_trillium.png"))
    page.click("#reset-filters")

    page.click("th[data-benchmark='gpt3'] button.sort")
    rows = visible_rows(page)
    gpt3 = [minutes(r["gpt3"]) for r in rows if minutes(r["gpt3"]) is not None]
    assert gpt3 == sorted(gpt3) and rows[0]["system"] == fastest_gpt3[0]
    assert abs(gpt3[0] - fastest_gpt3[1]) < 0.005

    page.click("th[data-benchmark='gpt3'] a.bench")
    assert page.url.endswith("/rounds/v4.1/gpt3/report.html")
    # the charts are drawn in the browser from their specs, with the site's own Vega bundle (offline)
    page.wait_for_function("document.querySelectorAll('figure .chart svg').length === 3", timeout=30_000)
    assert page.locator("#findings li").count() >= 4
    widths = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], "the report is wider than the page"
    page.screenshot(path=str(shots / "report_v4.1_gpt3.png"), full_page=True)

    page.go_back()
    first = page.locator("#results tbody tr:not([hidden]) td a").first
    name = first.text_content()
    first.click()
    assert page.text_content("h1") == name
    assert page.get_attribute("#link-results", "href").startswith(
        "https://github.com/mlcommons/training_results_v4.1/tree/main/")
    assert page.get_attribute("#link-systems", "href").endswith(".json")
    assert page.fetched_elsewhere == [] and page.errors == []
    page.close()
    for name in ("site_index.png", "site_round_v4.1.png", "report_v4.1_gpt3.png"):
        assert (shots / name).stat().st_size > 10_000


@needs_shared_mlperf()
def test_browser_on_the_shared_hpc_rounds(browser, tmp_path_factory):
    from support.shared_build import shared_build, shared_hpc_rounds

    build = shared_build(tmp_path_factory)
    assert build.published, build.summary
    out = tmp_path_factory.mktemp("hpc_site")
    with duckdb.connect(str(build.db), read_only=True) as con:
        site = build_site(con, out, ["v3.0"], reports=False)  # Training v3.0 is not in ../shared: HPC only
        expected = dict(con.execute("select scale, count(*) from fct_hpc_result where round = 'v3.0' "
                                    "group by 1").fetchall())
        fastest = con.execute("select min(score_minutes) from fct_hpc_result where round = 'v3.0' "
                              "and benchmark = 'deepcam'").fetchone()[0]
        alone, bases, compared = con.execute(
            "select count(*) filter (is_base and family_size = 1), count(*) filter (is_base and family_size > 1), "
            "count(*) filter (not is_base) from mart_hpc_strong_scaling where round = 'v3.0'").fetchone()
        scored = con.execute("select count(*) from fct_hpc_result where round = 'v3.0' and scale = 'strong' "
                             "and score_minutes is not null").fetchone()[0]
        no_cost = con.execute("select no_cost_reason, count(*) from mart_hpc_cost where round = 'v3.0' "
                              "and cost_to_train_usd is null group by 1").fetchall()
    assert site.hpc_rounds == ["v3.0"] and "v3.0" in shared_hpc_rounds()
    page = offline_page(browser)
    page.goto((out / "index.html").as_uri())
    page.click("text=MLPerf HPC v3.0")
    assert page.text_content("h1") == "MLPerf HPC v3.0: results"
    assert page.locator("#strong-results tbody tr").count() == expected["strong"]
    assert page.locator("#weak-results tbody tr").count() == expected["weak"]
    assert f"{fastest:,.2f}" in page.text_content("#strong-results")
    # a scored system without a scaling efficiency says why: the only one of its family, or the family's base
    strong_rows = page.locator("#strong-results tbody tr")
    assert strong_rows.filter(has_text="alone in its family: nothing to compare").count() == alone > 0
    assert strong_rows.filter(has_text="the family's smallest: the base").count() == bases
    assert alone + bases + compared == scored  # every scored strong result is in a family
    assert no_cost and all(strong_rows.filter(has_text=reason).count() == n for reason, n in no_cost)  # a cost's absence too
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "site_hpc_v3.0.png"), full_page=True)
    assert page.fetched_elsewhere == [] and page.errors == []
    page.close()


@needs_shared_mlperf()
def test_browser_on_a_shared_hpc_round_judged_by_rules_not_its_own(browser, tmp_path_factory):
    """HPC v0.7, older than every HPC rules folder: its page and card say which rules judged it and that they are
    not its own, never that it was scored by its own; a round with its own rules (v1.0) says that."""
    from support.shared_build import shared_build

    build = shared_build(tmp_path_factory)
    out = tmp_path_factory.mktemp("hpc_provisional_site")
    with duckdb.connect(str(build.db), read_only=True) as con:
        build_site(con, out, ["v0.7", "v1.0"], reports=False)
        rules = dict(con.execute("select round, case when provisional then why end from dim_rules_release "
                                 "where suite = 'hpc' and round in ('v0.7', 'v1.0')").fetchall())
    assert rules["v0.7"] and rules["v1.0"] is None, rules
    page = offline_page(browser)
    page.goto((out / "index.html").as_uri())
    card = page.locator("#hpc-rounds .card", has_text="MLPerf HPC v0.7")
    assert card.locator(".provisional-mark").count() == 1
    assert page.locator("#hpc-rounds .card", has_text="MLPerf HPC v1.0").locator(".provisional-mark").count() == 0
    card.locator("a").click()
    assert page.text_content("h1") == "MLPerf HPC v0.7: results"
    assert page.text_content("#provisional") == f"Provisional: {rules['v0.7']}"
    assert "round's own HPC rules" not in page.text_content(".lead")
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "site_hpc_v0.7.png"), full_page=True)
    page.goto((out / "hpc" / "v1.0" / "index.html").as_uri())
    assert page.locator("#provisional").count() == 0 and "scored by the round's own HPC rules" in page.text_content(".lead")
    assert page.fetched_elsewhere == [] and page.errors == []
    page.close()


@needs_shared_mlperf()
def test_browser_on_the_shared_inference_round(browser, tmp_path_factory):
    from support.shared_build import shared_build, shared_inference_rounds

    if "v5.1" not in shared_inference_rounds():
        pytest.skip("the shared Inference v5.1 archive is not in ../shared")
    build = shared_build(tmp_path_factory)
    out = tmp_path_factory.mktemp("inference_site")
    with duckdb.connect(str(build.db), read_only=True) as con:
        site = build_site(con, out, ["v5.1"], reports=False)
        rows, cheapest = con.execute("""select count(*), min(c.usd_per_million) from fct_inference_result as r
            left join mart_inference_cost as c using (round, location)
            where r.round = 'v5.1' and r.valid and r.division = 'closed' and r.model = 'llama2-70b-99'
              and r.scenario = 'Server'""").fetchone()
        charts = con.execute("""select count(*) from (select division, model, scenario from mart_inference_cost
            where round = 'v5.1' and usd_per_million is not null group by all having count(*) >= 2)""").fetchone()[0]
    assert site.inference_rounds == ["v5.1"] and rows > 0 and cheapest is not None
    page = offline_page(browser)
    page.goto((out / "index.html").as_uri())
    page.click("text=MLPerf Inference v5.1")
    section = page.locator("[id='closed-llama2-70b-99-Server']")
    assert section.locator("tbody tr").count() == rows
    first = section.locator("tbody tr").first.locator("td").nth(6).text_content()
    assert first == f"${cheapest:.3f}"  # cheapest first
    assert "time to first token ≤ 2,000 ms" in section.text_content()
    page.wait_for_function(f"document.querySelectorAll('figure .chart svg').length === {charts}", timeout=60_000)
    page.screenshot(path=str(screenshot_dir(tmp_path_factory) / "site_inference_v5.1.png"))
    assert page.fetched_elsewhere == [] and page.errors == []
    page.close()


def test_mlperf_site_asset_materializes(tmp_path):
    """The Dagster asset, run by Dagster's own `materialize` on a real (mini) published warehouse."""
    import dagster as dg

    from pipelines.defs.resources import WarehouseLocation
    from pipelines.defs.site.assets import mlperf_site
    from support.mini_warehouse import build_warehouse

    base = tmp_path / "warehouse"
    assert build_warehouse(base).published
    result = dg.materialize([mlperf_site], resources={"warehouse_location": WarehouseLocation(directory=str(base))},
                            selection=[mlperf_site])
    assert result.success
    metadata = result.asset_materializations_for_node("mlperf_site")[0].metadata
    assert metadata["rounds"].value == "v5.0, v4.1" and metadata["system_pages"].value == 4
    assert (base / "site" / "index.html").is_file()
    assert (base / "site" / "rounds" / "v4.1" / "bert" / "report.html").is_file()
