"""An offline refresh fails fast, one short line per source, with the fix named once and no tracebacks."""

import os
import subprocess
import time

import pytest

from pipelines.lib.io.http import fetch_to_file
from pipelines.lib.io.retry import FetchError, RetryPolicy
from pipelines.lib.mlperf.suites import HPC, TRAINING
from support.cli import CLI
from support.http_server import free_port

pytestmark = [pytest.mark.slow, pytest.mark.subprocess]

ROUNDS = list(TRAINING.default_rounds)
HPC_ROUNDS = list(HPC.default_rounds)
PRICE_URLS = ("MLPERF_AZURE_PRICES_URL", "MLPERF_AWS_PRICING_URL", "MLPERF_GCP_BILLING_URL", "MLPERF_OCI_PRICES_URL",
              "MLPERF_PRICE_CATALOG_URL")


def _unreachable_templates():
    return {
        "refused": f"http://127.0.0.1:{free_port()}/training_results_{{version}}.tar.gz",
        "no-such-host": "https://mlperf-mirror.invalid/training_results_{version}.tar.gz",
    }


def _rules_beside(template: str) -> str:
    """The rules archives' template on the same unreachable host (the default would reach for GitHub)."""
    return template.replace("training_results_{version}", "logging-{ref}")


@pytest.mark.parametrize("case", ["refused", "no-such-host"])
def test_an_offline_refresh_of_every_round_fails_fast_with_one_line_per_source_and_the_fix(case, tmp_path):
    template = _unreachable_templates()[case]
    env = {k: v for k, v in os.environ.items() if k not in ("MLPERF_ROUNDS", "MLPERF_DEBUG", "MLPERF_GCP_API_KEY")}
    env |= {"MLPERF_WAREHOUSE_DIR": str(tmp_path / "warehouse"), "DAGSTER_HOME": str(tmp_path / "dagster"),
            "MLPERF_RESULTS_URL_TEMPLATE": template, "MLPERF_RULES_URL_TEMPLATE": _rules_beside(template),
            "MLPERF_HPC_RESULTS_URL_TEMPLATE": template.replace("training_results", "hpc_results"),
            # GitHub's API (new rounds, the rules of v6.0) on the same unreachable host
            "MLPERF_GITHUB_API_URL": template.split("/training_results")[0]}
    env |= {name: f"https://prices-{i}.invalid" for i, name in enumerate(PRICE_URLS)}  # the price APIs, offline
    (tmp_path / "dagster").mkdir()

    started = time.perf_counter()
    proc = subprocess.run(CLI + ["refresh"], env=env, capture_output=True, text=True, timeout=120)
    seconds = time.perf_counter() - started

    out, err = proc.stdout.splitlines(), proc.stderr.splitlines()
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # Every source fails at once, without a retry, so 15 s is ample for the start-up. On a machine shared
    # by many busy processes the allowance grows with the load; retrying (backoff 0.5+1+2+4 s per source) would
    # still cost over 100 s.
    allowance = 15 * max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    assert seconds < allowance, f"an offline refresh took {seconds:.1f}s (allowed {allowance:.0f}s)"
    failed = [line for line in out if " FAILED " in line]
    # every Training and HPC round (the default suites), and azure, aws, oci, catalog (gcp: no key)
    assert len(failed) == len(ROUNDS) + len(HPC_ROUNDS) + 4, proc.stdout
    why = "connection refused" if case == "refused" else "host not found"
    assert all(why in line for line in failed if line.startswith("results")), proc.stdout
    # a fresh warehouse has no earlier price snapshot to fall back on, and the line says so
    assert all("host not found" in line and line.endswith("no earlier snapshot")
               for line in failed if line.startswith("prices")), proc.stdout
    # header, one line per step (13 Training and 4 HPC rounds, 6 price lists), the verdict and the file, the
    # fixes (each wrapped to 100 columns), the time
    rounds = len(ROUNDS) + len(HPC_ROUNDS)
    fixes = out[1 + rounds + 6 + 2:-1]
    assert len(out) == 1 + rounds + 6 + 2 + len(fixes) + 1, proc.stdout
    # one progress line per step, and one saying GitHub could not be read for rounds beyond the defaults
    assert len(err) <= rounds + 6 + 2, proc.stderr
    assert any(line.startswith("rounds: the default rounds only (GitHub could not be read") for line in err), proc.stderr
    assert max(len(line) for line in out + err) < 160, proc.stdout
    # one fix per kind of source, each naming its own setting: Training's, HPC's, the price lists'
    heads = [line for line in fixes if line.startswith("fix: ")]
    assert len(heads) == 3 and "mirror" in heads[0] and "mirror" in heads[1] and "--no-prices" in heads[2], proc.stdout
    both = proc.stdout + proc.stderr
    for flag, variable in (("--results-url-template", "MLPERF_RESULTS_URL_TEMPLATE"),
                           ("--hpc-results-url-template", "MLPERF_HPC_RESULTS_URL_TEMPLATE")):
        assert f" {flag} " in " ".join(fixes) and both.count(variable) == 1, proc.stdout
    assert "warehouse: NOT published; no warehouse published yet" in out
    for noise in ("Traceback", "Stack Trace", "FetchError", "pipelines.lib", "dagster"):
        assert noise not in both, noise


def test_with_mlperf_debug_dagster_shows_its_tracebacks(tmp_path):
    template = _unreachable_templates()["refused"]
    env = os.environ | {"MLPERF_WAREHOUSE_DIR": str(tmp_path / "warehouse"), "MLPERF_DEBUG": "1",
                        "MLPERF_RESULTS_URL_TEMPLATE": template, "MLPERF_RULES_URL_TEMPLATE": _rules_beside(template)}
    proc = subprocess.run(CLI + ["refresh", "--rounds", "v4.1", "--no-prices"], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 1
    assert "Stack Trace" in proc.stderr and "FetchError" in proc.stderr


@pytest.mark.parametrize("case", ["refused", "no-such-host"])
def test_unreachable_hosts_are_not_retried(case, tmp_path):
    url = _unreachable_templates()[case].replace("{version}", "v4.1")
    started = time.perf_counter()
    with pytest.raises(FetchError, match="not retried") as caught:
        # five attempts with this backoff would take at least 0.5 + 1 + 2 + 4 = 7.5 s
        fetch_to_file(url, tmp_path / "a.tar.gz", policy=RetryPolicy(max_attempts=5, backoff_seconds=0.5))
    assert time.perf_counter() - started < 3
    assert ("connection refused" if case == "refused" else "host not found") in str(caught.value)
    assert not list(tmp_path.iterdir())  # nothing half-written


def test_the_summary_shows_a_warning_as_a_warning_and_says_what_happened_truthfully(warehouse):
    from pipelines.lib.warehouse.summary import RefreshSummary, StepOutcome

    long_detail = "published; " + ", ".join(f"table_{i} {i * 1000}" for i in range(30))
    steps = [StepOutcome("results v4.1", True, 2.0, "downloaded; re-parsed; runs 10, systems 2, quarantined 0"),
             StepOutcome("warehouse", True, 1.0, long_detail),
             StepOutcome("check metric_marts_sensible", True, 0.0,
                         "warning: scaling_out_of_range 2; rows: v4.1 gpt3 a, v4.1 gpt3 b", warning=True)]
    text = RefreshSummary(steps, published=True).render()
    lines = text.splitlines()
    assert "FAILED" not in text
    assert any(line.startswith("check metric_marts_sensible  warn ") for line in lines)
    assert "warehouse: published; warnings: metric_marts_sensible" in text
    assert max(len(line) for line in lines) <= 100 and "table_29 29000" in text  # wrapped, not cut

    failed = RefreshSummary([StepOutcome("results v4.1", False, 0.1, "http://x: connection refused, not retried")])
    assert "no warehouse published yet" in failed.render()
    (warehouse / "mlperf.duckdb").write_bytes(b"")  # something is published already
    assert "the previous build stays published" in failed.render()


def test_readable_error_drops_class_names_and_query_strings():
    from pipelines.lib.warehouse.summary import readable_error

    message = ("pipelines.lib.prices.fetch.PriceFetchError: gcp: https://cloudbilling.googleapis.com/v1/services/"
               "6F81-5844-456A/skus?key=SECRET&pageSize=5000: HTTP 403 Forbidden (not retried)\n")
    text = readable_error(message, "PriceFetchError")
    assert text == \
        "gcp: https://cloudbilling.googleapis.com/v1/services/6F81-5844-456A/skus: HTTP 403 Forbidden (not retried)"
