"""The shared price fixtures served at the providers' real API paths, for tests on 127.0.0.1."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.http_server import LoopbackServer, Reply
from support.paths import SHARED_PRICES

PRICE_URL_VARIABLES = ("MLPERF_AZURE_PRICES_URL", "MLPERF_AWS_PRICING_URL", "MLPERF_GCP_BILLING_URL",
                       "MLPERF_OCI_PRICES_URL", "MLPERF_PRICE_CATALOG_URL", "MLPERF_PRICE_CATALOG_LISTING_URL")

# The SkyPilot catalog fixtures sit at the repository's own paths: catalogs/<v8|v7|v6>/<cloud>/vms.csv; the
# server also answers GitHub's git-trees API for them (the catalog's listing), as api.github.com would.
CATALOG_ROOT = SHARED_PRICES / "skypilot-catalog"
CATALOG_TREE = "/repos/skypilot-org/skypilot-catalog/git/trees/master"

DAY1, DAY2 = "2026-11-28", "2026-11-29"
AZURE = "/api/retail/prices"
AWS_INDEX = "/offers/v1.0/aws/AmazonEC2/current/region_index.json"
AWS_OFFER = "/offers/v1.0/aws/AmazonEC2/20260826000000/us-east-1/index.json"
GCP_COMPUTE = "/v1/services/6F81-5844-456A/skus"
GCP_TPU = "/v1/services/E000-3F24-B8AA/skus"
OCI = "/pls/apex/cetools/api/v1/products/"


def shared(name: str) -> bytes:
    return (SHARED_PRICES / name).read_bytes()


def json_reply(body: bytes) -> Reply:
    return Reply(200, body, {"Content-Type": "application/json"})


def csv_reply(body: bytes) -> Reply:
    return Reply(200, body, {"Content-Type": "text/plain; charset=utf-8"})


def catalog_paths(root: Path = CATALOG_ROOT) -> list[str]:
    """URL paths of every catalog fixture (`/catalogs/v7/gcp/vms.csv`, `/catalogs/v8/common/accelerators.csv`, ...)."""
    return sorted("/" + p.relative_to(root).as_posix() for p in root.glob("catalogs/*/*/*.csv"))


def catalog_tree(root: Path = CATALOG_ROOT) -> bytes:
    """GitHub's recursive git tree (GET /repos/{owner}/{repo}/git/trees/{ref}?recursive=1) of a catalog folder."""
    entries = [{"path": p.relative_to(root).as_posix(), "mode": "040000" if p.is_dir() else "100644",
                "type": "tree" if p.is_dir() else "blob", "sha": "0" * 40}
               | ({} if p.is_dir() else {"size": p.stat().st_size})
               for p in sorted(root.rglob("*")) if p.name != "SOURCES.md"]
    return json.dumps({"sha": "f" * 40, "tree": entries, "truncated": False}).encode()


def serve_catalog(server: LoopbackServer, root: Path = CATALOG_ROOT) -> None:
    """The catalog's files at their repository paths and its tree at `CATALOG_TREE`, each with an ETag (a 304 when
    a conditional request names it), as raw.githubusercontent.com and api.github.com answer."""

    def tagged(body: bytes, content_type: str):
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'

        def reply(_path, _query, headers):
            if headers.get("if-none-match") == etag:
                return Reply(304, b"", {"ETag": etag})
            return Reply(200, body, {"Content-Type": content_type, "ETag": etag})
        return reply

    for path in catalog_paths(root):
        server.route(path, tagged((root / path.lstrip("/")).read_bytes(), "text/plain; charset=utf-8"))
    server.route(CATALOG_TREE, tagged(catalog_tree(root), "application/json"))


def serve_fixtures(server: LoopbackServer, azure_page2: bytes | None = None) -> None:
    page1 = shared("azure_retail_prices_page1.json").replace(b"https://prices.azure.com:443", server.url.encode())
    page2 = azure_page2 or shared("azure_retail_prices_page2.json")
    server.route(AZURE, lambda path, query, headers: json_reply(page2 if "$skip" in query else page1))
    index = {"formatVersion": "v1.0", "regions": {"us-east-1": {"regionCode": "us-east-1", "currentVersionUrl": AWS_OFFER}}}
    server.route(AWS_INDEX, lambda *_: json_reply(json.dumps(index).encode()))
    server.route(AWS_OFFER, lambda *_: json_reply(shared("aws_offer_ec2_us-east-1_subset.json")))
    server.route(GCP_COMPUTE, lambda *_: json_reply(shared("gcp_billing_skus_compute_gpu.json")))
    server.route(GCP_TPU, lambda *_: json_reply(shared("gcp_billing_skus_tpu.json")))
    server.route(OCI, lambda *_: json_reply(shared("oci_products.json")))
    serve_catalog(server)


@contextlib.contextmanager
def refresh_environment(base: Path, prices: LoopbackServer, github_api_url: str | None = None) -> Iterator[bool]:
    """For a whole refresh in this process: MLPERF_WAREHOUSE_DIR=base and, when the shared price lists
    exist, them served by `prices` with every price URL variable pointing there (and GitHub's API at
    `github_api_url` when given). Yields whether prices are served; the environment is restored afterwards."""
    with pytest.MonkeyPatch.context() as env:
        env.setenv("MLPERF_WAREHOUSE_DIR", str(base))
        if github_api_url is not None:
            env.setenv("MLPERF_GITHUB_API_URL", github_api_url)
        with_prices = SHARED_PRICES.is_dir()
        if with_prices:
            serve_fixtures(prices)
            for variable in PRICE_URL_VARIABLES:
                env.setenv(variable, prices.url)
            env.setenv("MLPERF_GCP_API_KEY", "test-key")
        yield with_prices
