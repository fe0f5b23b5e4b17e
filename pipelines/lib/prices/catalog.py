"""The public SkyPilot catalog (skypilot-org/skypilot-catalog) as a price source of its own: its layout and listing.

Here: the catalog's layout, how its versions and clouds are found, and what a fetch found and keeps for the next
one (`CatalogReport`, `DiscoveryRecord`). The fetch itself: `catalog_fetch.py`; one vms.csv read into prices:
`catalog_vms.py`.

Files: `{base}/catalogs/{version}/{cloud}/vms.csv`. Which versions and clouds exist is read from the
catalog, never written here (below and `catalog_fetch.py`): the newest version that has any vms.csv is read, and a
cloud with no vms.csv there is read from the version below it, then the one below that
(`FALLBACK_VERSIONS`), never further; every row says the version it came from (`catalog_version`) and
whether that is an older version than the newest (`catalog_fallback`). Rows become prices of the cloud
they describe (provider `gcp`, `lambda`, `runpod`, ...) with `price_source = 'catalog'`; marts never let
them replace a provider's own API row.

How the versions and clouds are found (the catalog is only files; SkyPilot itself pins its version in
code, `CATALOG_SCHEMA_VERSION`, and knows its clouds from its own registry, so neither can be asked):
- a local mirror (a path or file://) is a folder: its `catalogs/v*/<cloud>/vms.csv` files are listed;
- the catalog on GitHub (raw.githubusercontent.com/<owner>/<repo>/<ref>, the default) is listed by one
  request to GitHub's git-trees API (the repository's whole tree with sizes, conditional on the ETag of
  the last listing) at `listing_api_url`;
- anything else, or a listing that cannot be read, is probed: `catalogs/v<N>/common/accelerators.csv`
  (every version from v5 ships one) from the newest version recorded (else v1) upward until
  `PROBE_AHEAD` versions in a row are missing; the clouds are the ones the catalog's
  common/accelerators.csv names, those read before (the record) and those asked for. A cloud named
  nowhere cannot be seen without a listing, and the refresh says the catalog was probed.
What was found is kept (`DiscoveryRecord`, `<raw>/catalog/discovery.json`): the next refresh knows which
clouds are new and where to start probing.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, urlsplit

from pipelines.lib.io.files import atomic_write_text
from pipelines.lib.io.jsonsafe import loads_bounded
from pipelines.lib.io.package_data import package_path
from pipelines.lib.reference.sources import DEFAULT_CATALOG_URL

# --- the catalog's layout (README.md of skypilot-org/skypilot-catalog: schema versions v1 ... v8) ------
VMS_PATH = re.compile(r"catalogs/(v(\d+))/([^/]+)/vms\.csv")
VERSION_FOLDER = re.compile(r"v(\d{1,4})")
# A cloud is a folder name used in URLs, file names and provider names: nothing else is read as one.
CLOUD_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")
SHARED_FOLDER = "common"  # catalogs/<version>/common/: accelerators.csv of every cloud, not a cloud
PROBE_FILE = "common/accelerators.csv"  # shipped by every version from v5 on (AcceleratorName,Clouds)
GITHUB_RAW_HOST = "raw.githubusercontent.com"

# why 2: the catalog's newest Azure file is v6 (no v7 or v8 Azure vms.csv in the repository's listing,
# SOURCES.md), two versions below v8; a file further down is a frozen snapshot, not a price list.
FALLBACK_VERSIONS = 2
PROBE_AHEAD = 3  # versions probed past the newest found (v9, v10, v11 when v8 is the newest)
MAX_PROBES = 32  # version probes of one refresh with nothing recorded (v1 up to v32 at most)
MAX_CLOUDS = 100  # clouds read in one refresh (v8 lists 26 folders); more are named, not read
MAX_LISTING_ENTRIES = 100_000  # GitHub truncates a recursive tree at 100,000 entries itself

# The clouds not read unless asked for (PriceSources.catalog_clouds), and why.
SKIPPED_CLOUDS: dict[str, str] = {
    "aws": "read from the AWS Price List API instead (aws_prices); the catalog's AWS file is several MB "
           "of older prices",
}
CLOUD_PROVIDERS_CSV = package_path("pipelines.lib.reference", "cloud_providers.csv")
RECORD_NAME = "discovery.json"


def version_number(version: str) -> int:
    found = VERSION_FOLDER.fullmatch(version or "")
    if not found:
        raise ValueError(f"not a catalog version folder: {version!r}")
    return int(found[1])


def version_name(number: int) -> str:
    return f"v{number}"


def vms_path(version: str, cloud: str) -> str:
    """The path of a cloud's vms.csv below the catalog base URL."""
    return f"catalogs/{version}/{cloud}/vms.csv"


def probe_path(version: str) -> str:
    return f"catalogs/{version}/{PROBE_FILE}"


def fallback_window(newest: str) -> list[str]:
    """The versions a cloud may be read from, newest first: the newest and `FALLBACK_VERSIONS` below it."""
    top = version_number(newest)
    return [version_name(n) for n in range(top, max(top - FALLBACK_VERSIONS, 1) - 1, -1)]


# --- where the catalog lives and how it is listed ------------------------------------------------

@dataclass(frozen=True)
class Repository:
    owner: str
    name: str
    ref: str

    def __str__(self) -> str:
        return f"{self.owner}/{self.name}@{self.ref}"


def github_repository(catalog_url: str) -> Repository | None:
    """The repository and ref of a raw.githubusercontent.com/<owner>/<repo>/<ref> base URL, else None."""
    parts = urlsplit(catalog_url or "")
    segments = [s for s in parts.path.split("/") if s]
    if parts.scheme != "https" or (parts.hostname or "").lower() != GITHUB_RAW_HOST or len(segments) != 3:
        return None
    return Repository(*segments)


def is_local(catalog_url: str) -> bool:
    scheme = urlsplit(catalog_url or "").scheme
    return scheme == "file" or len(scheme) <= 1  # a path (or a Windows drive letter)


def listing_api(catalog_url: str, listing_api_url: str | None, github_api_url: str | None) -> str | None:
    """The GitHub API (or a mirror of it) that lists the catalog's tree, or None (a folder is listed
    directly; any other mirror is probed). An explicit `listing_api_url` wins; else GitHub's API when
    the catalog is read from raw.githubusercontent.com."""
    if is_local(catalog_url):
        return None
    if listing_api_url:
        return listing_api_url.rstrip("/")
    if github_repository(catalog_url) is not None and github_api_url:
        return github_api_url.rstrip("/")
    return None


def listed_repository(catalog_url: str) -> Repository:
    """The repository whose tree lists the catalog: the base URL's own, else the default catalog's (a
    mirror of it)."""
    repository = github_repository(catalog_url) or github_repository(DEFAULT_CATALOG_URL)
    assert repository is not None, DEFAULT_CATALOG_URL
    return repository


def tree_url(api_url: str, repository: Repository) -> str:
    return (f"{api_url.rstrip('/')}/repos/{quote(repository.owner)}/{quote(repository.name)}/git/trees/"
            f"{quote(repository.ref, safe='')}?recursive=1")


@dataclass(frozen=True)
class CatalogListing:
    """Every vms.csv the catalog holds: cloud → version → size in bytes (None when not listed)."""

    files: dict[str, dict[str, int | None]]
    versions: tuple[str, ...]  # every version folder seen, newest first (some hold no vms.csv)
    how: str  # where the listing came from, for the refresh's line
    refused: tuple[str, ...] = ()  # vms.csv paths whose version or cloud is no valid name: said, not read

    def newest(self) -> str | None:
        with_files = {v for by_version in self.files.values() for v in by_version}
        return max(with_files, key=version_number) if with_files else None

    def to_json(self) -> dict:
        return {"files": self.files, "versions": list(self.versions), "how": self.how, "refused": list(self.refused)}

    @classmethod
    def from_json(cls, data: dict, how: str) -> CatalogListing:
        return cls({c: dict(v) for c, v in data["files"].items()}, tuple(data["versions"]), how,
                   tuple(data.get("refused", ())))


def _listing(paths: list[tuple[str, int | None]], folders: set[str], how: str) -> CatalogListing:
    files: dict[str, dict[str, int | None]] = {}
    refused = []
    for path, size in paths:
        found = VMS_PATH.fullmatch(path)
        if not found and re.fullmatch(r"catalogs/[^/]+/[^/]+/vms\.csv", path):
            refused.append(path)
        elif found and found[3] != SHARED_FOLDER:
            if CLOUD_NAME.fullmatch(found[3]) and VERSION_FOLDER.fullmatch(found[1]):
                files.setdefault(found[3], {})[found[1]] = size
            else:
                refused.append(path)
    versions = {v for v in folders if VERSION_FOLDER.fullmatch(v)} | {v for c in files.values() for v in c}
    return CatalogListing(files, tuple(sorted(versions, key=version_number, reverse=True)), how,
                          tuple(refused[:20]))


def listing_from_tree(body: bytes, what: str) -> CatalogListing:
    """GitHub's recursive git tree of the catalog repository → its listing. ValueError when the body is
    not a tree or GitHub truncated it (then nothing in it can be trusted to be complete)."""
    tree = loads_bounded(body)
    if not isinstance(tree, dict) or not isinstance(tree.get("tree"), list):
        raise ValueError(f"{what}: not a git tree (no 'tree' list)")
    if tree.get("truncated"):
        raise ValueError(f"{what}: GitHub truncated the tree; the listing is incomplete")
    entries = tree["tree"]
    if len(entries) > MAX_LISTING_ENTRIES:
        raise ValueError(f"{what}: {len(entries)} entries, over {MAX_LISTING_ENTRIES}")
    paths, folders = [], set()
    for entry in entries:
        path = entry.get("path") if isinstance(entry, dict) else None
        if not isinstance(path, str) or not path.startswith("catalogs/"):
            continue
        parts = path.split("/")
        if entry.get("type") == "tree" and len(parts) == 2:
            folders.add(parts[1])
        elif entry.get("type") == "blob":
            size = entry.get("size")
            paths.append((path, size if isinstance(size, int) and not isinstance(size, bool) else None))
    return _listing(paths, folders, what)


def listing_from_folder(root: Path) -> CatalogListing:
    """A local mirror's `catalogs/v*/<cloud>/vms.csv` files (bounded: `MAX_LISTING_ENTRIES`)."""
    catalogs = Path(root) / "catalogs"
    if not catalogs.is_dir():
        raise ValueError(f"{root}: no catalogs/ folder (not a SkyPilot catalog mirror)")
    paths, folders = [], set()
    for version in sorted(catalogs.iterdir())[:MAX_LISTING_ENTRIES]:
        if not (version.is_dir() and VERSION_FOLDER.fullmatch(version.name)):
            continue
        folders.add(version.name)
        for cloud in sorted(version.iterdir())[:MAX_LISTING_ENTRIES]:
            vms = cloud / "vms.csv"
            if vms.is_file():
                paths.append((vms_path(version.name, cloud.name), vms.stat().st_size))
    return _listing(paths, folders, f"folder {root}")


def clouds_named(accelerators_csv: bytes | str) -> set[str]:
    """The clouds a catalog version's common/accelerators.csv names (`['AWS', 'PrimeIntellect']` per
    accelerator) as folder names (lower case). Clouds without accelerators, and clouds added since
    SkyPilot last aggregated the file, are not in it (v8's names none of verda, lium, daytona, ...)."""
    text = accelerators_csv.decode("utf-8-sig", "replace") if isinstance(accelerators_csv, bytes) else accelerators_csv
    found = set()
    for row in csv.DictReader(io.StringIO(text)):
        for name in re.findall(r"'([^']+)'", row.get("Clouds") or ""):
            if CLOUD_NAME.fullmatch(name.lower()):
                found.add(name.lower())
    return found


@lru_cache(maxsize=1)
def provider_kinds(path: Path = CLOUD_PROVIDERS_CSV) -> dict[str, str]:
    """provider → kind (hyperscaler, neocloud, marketplace) from cloud_providers.csv, the one place kinds
    are written."""
    with Path(path).open(newline="", encoding="utf-8") as handle:
        return {row["provider"].strip().lower(): row["kind"].strip() for row in csv.DictReader(handle)}


# --- what was read, and the record kept for the next refresh ----------------------------------------

@dataclass
class CatalogReport:
    """What a catalog fetch found and read: the refresh's price step says it, the asset records it."""

    how: str = ""  # how versions and clouds were found
    newest: str | None = None
    read: dict[str, str] = field(default_factory=dict)  # cloud → version read
    missing_in: dict[str, list[str]] = field(default_factory=dict)  # cloud → versions without its file (404)
    not_found: dict[str, str] = field(default_factory=dict)  # cloud → why no file was read
    failed: dict[str, str] = field(default_factory=dict)  # cloud → error (a quarantine row too)
    skipped: dict[str, str] = field(default_factory=dict)  # cloud → why it was not read
    new: list[str] = field(default_factory=list)  # read now, not at the previous refresh
    gone: list[str] = field(default_factory=list)  # read at the previous refresh, not now
    first: bool = False  # no earlier refresh to compare with
    unknown_kind: list[str] = field(default_factory=list)  # read, but cloud_providers.csv has no kind
    notes: list[str] = field(default_factory=list)  # what a person should know (listing failed, ...)
    unreachable: str = ""  # the first probe's failure that was not a 404 (the catalog cannot be reached)

    def fallbacks(self) -> dict[str, str]:
        return {c: v for c, v in self.read.items() if v != self.newest}

    @property
    def warning(self) -> bool:
        """Something a person should look at: a cloud of unknown kind, a listing that failed."""
        return bool(self.unknown_kind or self.notes)

    def summary(self) -> str:
        """One line for the refresh: versions per cloud, new clouds, unknown kinds."""
        by_version: dict[str, list[str]] = {}
        for cloud, version in sorted(self.read.items()):
            by_version.setdefault(version, []).append(cloud)
        parts = [f"catalog {self.newest or '(none)'} ({self.how})"]
        for version in sorted(by_version, key=version_number, reverse=True):
            clouds = by_version[version]
            if version == self.newest:
                parts.append(f"{len(clouds)} clouds from {version}: {', '.join(clouds)}")
            else:
                parts.append(f"from {version} (no vms.csv in a newer version): {', '.join(clouds)}")
        if self.new:
            parts.append(f"new: {', '.join(self.new)}")
        elif self.first:
            parts.append("first catalog discovery")
        if self.gone:
            parts.append(f"no longer read: {', '.join(self.gone)}")
        if self.unknown_kind:
            parts.append(f"kind unknown (not in cloud_providers.csv; not bookable): {', '.join(self.unknown_kind)}")
        if self.failed:
            parts.append(f"failed: {', '.join(sorted(self.failed))}")
        if self.not_found:
            parts.append(f"no vms.csv read: {', '.join(sorted(self.not_found))}")
        if self.skipped:
            parts.append(f"skipped: {', '.join(sorted(self.skipped))}")
        return "; ".join(parts + self.notes)

    def warnings(self) -> list[str]:
        lines = [f"catalog cloud {cloud!r} is read but cloud_providers.csv gives no kind (hyperscaler, neocloud "
                 "or marketplace): its prices are not bookable until a reviewed row says what it is"
                 for cloud in self.unknown_kind]
        return lines + [f"catalog: {note}" for note in self.notes]

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class DiscoveryRecord:
    """What the last successful catalog fetch found, kept beside the raw files for the next one."""

    newest: str | None = None
    read: dict[str, str] = field(default_factory=dict)  # cloud → version read
    probed_versions: list[str] = field(default_factory=list)  # versions whose probe file answered
    listing_url: str | None = None
    listing_etag: str | None = None
    listing: dict | None = None  # CatalogListing.to_json() of that ETag (a 304 reuses it)

    @classmethod
    def load(cls, path: Path) -> DiscoveryRecord | None:
        """The record, or None when there is none or it is unreadable (then the fetch starts afresh)."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
            record = cls(**known)
            if record.newest is not None:
                version_number(record.newest)
            if not all(isinstance(c, str) and isinstance(v, str) for c, v in record.read.items()):
                raise ValueError("read: not cloud → version")
            return record
        except (OSError, ValueError, TypeError, AttributeError):
            return None

    def save(self, path: Path) -> Path:
        return atomic_write_text(Path(path), json.dumps(asdict(self), indent=1, sort_keys=True))

