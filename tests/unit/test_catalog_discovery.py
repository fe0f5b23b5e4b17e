"""How the SkyPilot catalog's versions and clouds are found (pipelines/lib/prices/catalog.py): where a base URL
is listed, GitHub's tree read (and refused), the bounds, the record kept between refreshes, the refresh's line."""

from __future__ import annotations

import json

import pytest

from pipelines.lib.prices.catalog import (
    MAX_LISTING_ENTRIES,
    CatalogReport,
    DiscoveryRecord,
    Repository,
    clouds_named,
    fallback_window,
    github_repository,
    listing_api,
    listing_from_folder,
    listing_from_tree,
    tree_url,
)

RAW = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"


def tree(paths: list[str], **extra) -> bytes:
    return json.dumps({"tree": [{"path": p, "type": "tree" if "." not in p.rsplit("/", 1)[-1] else "blob",
                                 "size": 10} for p in paths], **extra}).encode()


def test_where_a_catalog_is_listed():
    assert github_repository(RAW) == Repository("skypilot-org", "skypilot-catalog", "master")
    for not_github in ("http://raw.githubusercontent.com/a/b/c", "https://mirror.example/a/b/c",
                       "https://raw.githubusercontent.com/a/b", "/srv/catalog", "file:///srv/catalog"):
        assert github_repository(not_github) is None, not_github
    api = "https://api.github.com"
    assert listing_api(RAW, None, api) == api  # the default catalog: GitHub's tree of its repository
    assert listing_api("https://mirror.example/catalog", None, api) is None  # another mirror: probed
    assert listing_api("https://mirror.example/catalog", "http://127.0.0.1:9/", api) == "http://127.0.0.1:9"
    assert listing_api("/srv/catalog", "http://127.0.0.1:9", api) is None  # a folder lists itself
    assert listing_api("file:///srv/catalog", None, api) is None
    assert tree_url(api, github_repository(RAW)) == \
        f"{api}/repos/skypilot-org/skypilot-catalog/git/trees/master?recursive=1"


def test_a_tree_gives_each_clouds_files_by_version_and_nothing_else():
    listing = listing_from_tree(tree([
        "catalogs", "catalogs/v7", "catalogs/v8", "catalogs/v9", "catalogs/v7/gcp/vms.csv", "catalogs/v8/lambda/vms.csv",
        "catalogs/v7/lambda/vms.csv", "catalogs/v8/common/accelerators.csv", "catalogs/v8/kubernetes/images.csv",
        "catalogs/v8/common/vms.csv",  # the shared folder is no cloud
        "catalogs/v8/../vms.csv", "catalogs/v8/Bad Name/vms.csv", "catalogs/v8/UPPER/vms.csv",  # not cloud names
        "catalogs/vX/gcp/vms.csv", "catalogs/v99999/gcp/vms.csv", "other/v8/gcp/vms.csv", "catalogs/v8/a/b/vms.csv",
    ]), "test tree")
    assert listing.files == {"gcp": {"v7": 10}, "lambda": {"v8": 10, "v7": 10}}
    # what looks like a cloud's file but has no valid name is said, not read
    assert set(listing.refused) == {"catalogs/v8/../vms.csv", "catalogs/v8/Bad Name/vms.csv", "catalogs/v8/UPPER/vms.csv",
                                    "catalogs/vX/gcp/vms.csv", "catalogs/v99999/gcp/vms.csv"}
    assert listing.versions == ("v9", "v8", "v7") and listing.newest() == "v8"  # v9 holds no vms.csv yet


@pytest.mark.parametrize("body, why", [
    (tree(["catalogs/v8/gcp/vms.csv"], truncated=True), "truncated"),
    (b'{"message": "Not Found"}', "not a git tree"),
    (b"[1, 2]", "not a git tree"),
    (json.dumps({"tree": [{"path": "x", "type": "blob"}] * (MAX_LISTING_ENTRIES + 1)}).encode(), "entries"),
])
def test_a_tree_that_cannot_be_trusted_is_refused(body, why):
    with pytest.raises(ValueError, match=why):
        listing_from_tree(body, "test tree")


def test_a_folder_is_listed_and_a_folder_without_catalogs_refused(tmp_path):
    for path in ("catalogs/v8/verda/vms.csv", "catalogs/v6/azure/vms.csv", "catalogs/v8/common/accelerators.csv",
                 "catalogs/v8/kubernetes/images.csv"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    (tmp_path / "catalogs/notes.txt").write_text("not a version")
    listing = listing_from_folder(tmp_path)
    assert listing.files == {"verda": {"v8": 1}, "azure": {"v6": 1}} and listing.newest() == "v8"
    with pytest.raises(ValueError, match="no catalogs/ folder"):
        listing_from_folder(tmp_path / "catalogs")


def test_clouds_named_by_accelerators_csv():
    text = ('AcceleratorName,Clouds\nA100,"[\'AWS\', \'PrimeIntellect\', \'nebius\']"\nB200,[\'DO\']\n'
            'X,"[\'../etc\', \'a b\']"\n')
    assert clouds_named(text) == {"aws", "primeintellect", "nebius", "do"}


def test_a_cloud_falls_back_at_most_two_versions():
    assert fallback_window("v8") == ["v8", "v7", "v6"]
    assert fallback_window("v2") == ["v2", "v1"] and fallback_window("v1") == ["v1"]


def test_the_record_survives_a_round_trip_and_a_broken_one_is_ignored(tmp_path):
    path = tmp_path / "discovery.json"
    assert DiscoveryRecord.load(path) is None
    record = DiscoveryRecord(newest="v8", read={"gcp": "v7"}, listing_url="u", listing_etag='"e"',
                             listing={"files": {"gcp": {"v7": 1}}, "versions": ["v7"], "how": "x"})
    record.save(path)
    assert DiscoveryRecord.load(path) == record
    for broken in ("{", "[]", '{"newest": "eight"}', '{"newest": 8}', '{"read": 3}', '{"read": {"gcp": 7}}'):
        path.write_text(broken)
        assert DiscoveryRecord.load(path) is None, broken


def test_the_refresh_line_says_versions_new_clouds_and_unknown_kinds():
    report = CatalogReport(how="GitHub tree", newest="v8", read={"verda": "v8", "lambda": "v8", "gcp": "v7",
                                                                  "azure": "v6"},
                           new=["verda"], gone=["fluidstack"], unknown_kind=["verda"], skipped={"aws": "own API"})
    line = report.summary()
    assert line.startswith("catalog v8 (GitHub tree); 2 clouds from v8: lambda, verda; "
                           "from v7 (no vms.csv in a newer version): gcp; "
                           "from v6 (no vms.csv in a newer version): azure; new: verda; no longer read: fluidstack")
    assert "kind unknown" in line and "skipped: aws" in line
    assert report.fallbacks() == {"gcp": "v7", "azure": "v6"} and report.warning
    assert not CatalogReport(newest="v8", read={"lambda": "v8"}).warning
