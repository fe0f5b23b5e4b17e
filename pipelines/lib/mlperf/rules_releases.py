"""The rules of a round nobody here has reviewed yet, found the way rounds are: from `mlcommons/logging` itself.

A round's rules live in the newest release tag of its own release line that ships the round's rule folder
(`6.0.0-rc6` ships `training_6.0.0/`; a final `X.Y.0` wins over its release candidates, the highest candidate
otherwise; HPC's tags are `hpc-X.Y.Z`), found through GitHub's tag listing (ETag- and rate-limit aware). A
round no tag ships yet (such as v6.1 in the shared snapshot of the repository) takes the default branch's head, a
commit. A round whose rule folder exists nowhere is scored by the newest rules there are and published as
provisional, saying so.

`rules_refs.csv` stays the reviewed record of what scored each published round and always wins. A ref it
does not list is trusted on first use: its content digest is pinned in the warehouse's own record
(`raw/rules/record.json`), named in the refresh's output and in `status`, and the same ref with other
content later is refused with both digests.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from pipelines.lib.io.files import atomic_write_text
from pipelines.lib.io.locking import exclusive
from pipelines.lib.io.paths import raw_dir
from pipelines.lib.io.retry import FetchError
from pipelines.lib.mlperf.rounds import round_sort_key
from pipelines.lib.mlperf.rules import (
    RulesError,
    RulesRef,
    folder_is_own,
    newest_listed_ref,
)
from pipelines.lib.mlperf.suites import TRAINING, Suite

LOGGING_REPOSITORY = "mlcommons/logging"
# How a resolved ref was found (RulesRef.source)
RELEASE_TAG, DEFAULT_BRANCH, SETTING, STAND_IN = "release_tag", "default_branch", "setting", "stand_in"
RECORD = "record.json"


# ---- release tags ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReleaseTag:
    name: str
    sha: str
    version: tuple[int, int, int]
    candidate: int | None  # the release candidate's number; None for a final release

    @property
    def rank(self) -> tuple:
        """Best first when sorted in reverse: a final release over its candidates, a higher patch, a higher
        candidate, the plain tag over a variant with a suffix (`4.0.0-rc3-rcp-prunning`)."""
        return (self.candidate is None, self.version[2], self.candidate or 0, -len(self.name))


def release_tags(tags: list, suite: Suite = TRAINING) -> list[ReleaseTag]:
    """The suite's release tags in a tag listing (`GET /repos/mlcommons/logging/tags` items)."""
    out = []
    for tag in tags:
        if not isinstance(tag, dict) or not isinstance(tag.get("name"), str):
            continue
        m = suite.release_tag.match(tag["name"])
        if m:
            sha = tag.get("commit", {}).get("sha", "") if isinstance(tag.get("commit"), dict) else ""
            out.append(ReleaseTag(tag["name"], str(sha), (int(m.group(1)), int(m.group(2)), int(m.group(3))),
                                  int(m.group(4)) if m.group(4) else None))
    return out


def release_line(tags: list[ReleaseTag], round_version: str) -> list[ReleaseTag]:
    """The tags of the round's own release line (`6.0.*` for v6.0), best first."""
    line = [t for t in tags if t.version[:2] == round_sort_key(round_version)]
    return sorted(line, key=lambda t: t.rank, reverse=True)


def newest_tag(tags: list[ReleaseTag]) -> ReleaseTag | None:
    return max(tags, key=lambda t: (t.version[:2], t.rank), default=None)


# ---- the warehouse's own record --------------------------------------------------------------------------

def record_path(base: Path | None = None) -> Path:
    return raw_dir("rules", base) / RECORD


def load_record(base: Path | None = None) -> dict:
    try:
        record = json.loads(record_path(base).read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def update_record(base: Path | None, change: Callable[[dict], object]) -> object:
    """Apply `change` to the record under a lock and write it atomically; returns what `change` returned."""
    path = record_path(base)
    with exclusive(path.with_name(RECORD + ".lock"), wait=True, what="rules record update"):
        record = load_record(base)
        outcome = change(record)
        atomic_write_text(path, json.dumps(record, indent=2, sort_keys=True))
    return outcome


def _round_key(round_version: str, suite: Suite) -> str:
    return f"{suite.name}:{round_version}"


def recorded_resolution(round_version: str, suite: Suite = TRAINING, base: Path | None = None) -> RulesRef | None:
    """The ref the rules archive asset resolved for a round the reviewed table does not list."""
    entry = load_record(base).get("rounds", {}).get(_round_key(round_version, suite))
    if not isinstance(entry, dict):
        return None
    try:
        return RulesRef(round_version, entry["ref"], entry.get("ref_date") or "", entry["why"], entry["source"],
                        suite=suite.name, provisional=bool(entry.get("provisional")))
    except KeyError:
        return None


def record_resolution(ref: RulesRef, suite: Suite, base: Path | None = None) -> None:
    entry = {k: v for k, v in asdict(ref).items() if k in ("ref", "ref_date", "why", "source", "provisional")}
    entry["resolved_at"] = _now()
    update_record(base, lambda record: record.setdefault("rounds", {}).__setitem__(_round_key(ref.round, suite), entry))


def pin_on_first_use(ref: str, digest: str, used_for: str, *, repin: bool = False, base: Path | None = None) -> str:
    """Trust a ref the reviewed table does not know on first use: its content digest goes into the record.
    Later the same ref must have the same content (RulesError naming both digests), unless `repin` (the
    operator trusts the new content explicitly). Returns how the content is trusted, for the refresh's output."""

    def change(record: dict) -> str:
        pins = record.setdefault("pins", {})
        pinned = pins.get(ref)
        if isinstance(pinned, dict) and pinned.get("sha256") == digest:
            if used_for not in pinned.setdefault("used_for", []):
                pinned["used_for"].append(used_for)
            return f"content {digest[:12]} pinned on first use {pinned.get('first_seen', '')[:10]}"
        if isinstance(pinned, dict) and not repin:
            raise RulesError(f"rules {ref}: content {digest[:16]} is not the content pinned on first use "
                             f"{pinned.get('sha256', '')[:16]} ({pinned.get('first_seen', '')[:10]}, {record_path(base)}): "
                             f"refused; --trust-rules-ref {ref} re-pins it")
        was = f" (re-pinned: was {pinned.get('sha256', '')[:12]})" if isinstance(pinned, dict) else ""
        pins[ref] = {"sha256": digest, "first_seen": _now(), "used_for": [used_for]}
        return f"content {digest[:12]} pinned on first use now{was}"

    return update_record(base, change)


def pinned_on_first_use(base: Path | None = None) -> dict[str, dict]:
    """Every ref trusted on first use: ref → sha256, first_seen, used_for."""
    pins = load_record(base).get("pins", {})
    return {ref: pin for ref, pin in pins.items() if isinstance(pin, dict)} if isinstance(pins, dict) else {}


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# ---- resolution ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class GitHubSource:
    """Where the tags and the default branch of mlcommons/logging are read (GitHub's REST API or a mirror)."""

    api_url: str
    token: str | None = None

    @property
    def tags_url(self) -> str:
        return f"{self.api_url.rstrip('/')}/repos/{LOGGING_REPOSITORY}/tags?per_page=100"

    @property
    def head_url(self) -> str:
        # `HEAD` names the default branch, whatever it is called
        return f"{self.api_url.rstrip('/')}/repos/{LOGGING_REPOSITORY}/commits/HEAD"


def tags_path(base: Path | None = None) -> Path:
    """The last tag listing, kept like a download (with its ETag) so the next refresh asks GitHub whether it
    changed, and the pre-flight can tell that nothing did."""
    return raw_dir("rules", base) / "tags.json"


def listed_tags(github: GitHubSource, base: Path | None = None) -> tuple[list, str]:
    """The repository's tags (conditional on the last listing's ETag), and a note when they are not today's
    (GitHub rate-limited or unreachable: the last listing, if there is one)."""
    from pipelines.lib.io.github import list_pages
    from pipelines.lib.io.sidecars import keep_response, recorded_etag

    kept = tags_path(base)
    etag = recorded_etag(kept, github.tags_url)
    try:
        listing = list_pages(github.tags_url, github.api_url, etag=etag, token=github.token)
        problem = listing.message if listing.skip_until is not None else ""
    except FetchError as exc:
        listing, problem = None, f"GitHub could not be read ({exc})"
    if listing is not None and not problem and not listing.not_modified:
        items = [{"name": t.get("name"), "commit": {"sha": (t.get("commit") or {}).get("sha")}}
                 for t in listing.items if isinstance(t, dict)]
        keep_response(kept, github.tags_url, json.dumps(items, indent=1).encode(), listing.etag)
        return items, ""
    try:
        items = json.loads(kept.read_text()) if etag is not None else None
    except (OSError, ValueError):
        items = None
    if not isinstance(items, list):
        raise FetchError(problem or "GitHub answered 304 but no earlier tag listing is kept")
    if listing is not None and listing.not_modified:
        return items, ""
    listed_at = datetime.fromtimestamp(kept.stat().st_mtime, UTC).date().isoformat()
    return items, f"{problem}: the tags as listed {listed_at}"


def head_path(base: Path | None = None) -> Path:
    return raw_dir("rules", base) / "head.json"


def default_branch_head(github: GitHubSource, base: Path | None = None) -> tuple[str, str]:
    """(commit sha, commit date) of the default branch's head (kept like a download, asked conditionally)."""
    from pipelines.lib.io.github import headers
    from pipelines.lib.io.http import fetch_to_file
    from pipelines.lib.io.jsonsafe import loads_bounded
    from pipelines.lib.io.retry import RetryPolicy

    kept = fetch_to_file(github.head_url, head_path(base), headers=headers(None, github.token),
                         policy=RetryPolicy(max_attempts=2, backoff_seconds=0.5)).path
    try:
        found = loads_bounded(kept.read_bytes())
    except (OSError, ValueError) as exc:
        raise FetchError(f"{github.head_url}: unreadable answer ({exc})") from exc
    sha = found.get("sha") if isinstance(found, dict) else None
    if not isinstance(sha, str) or len(sha) != 40 or not all(c in "0123456789abcdef" for c in sha):
        raise FetchError(f"{github.head_url}: no commit sha in the answer")
    committer = (found.get("commit") or {}).get("committer") or {}
    return sha, str(committer.get("date") or "")[:10]


def discovery_sources(ref: RulesRef, github: GitHubSource, base: Path | None = None) -> list[tuple[str, Path]]:
    """What a discovered ref depends on besides its archive, as kept (the pre-flight asks each conditionally;
    one never kept cannot be shown unchanged): the tag listing, and the default branch's head unless a
    release tag was found."""
    if ref.source == SETTING:
        return []
    sources = [(github.tags_url, tags_path(base))]
    if ref.source != RELEASE_TAG:
        sources.append((github.head_url, head_path(base)))
    return sources


def resolve_rules(round_version: str, suite: Suite, github: GitHubSource, *, default_ref: str | None,
                  folders_of: Callable[[str], set[str]], base: Path | None = None) -> tuple[RulesRef, list[str]]:
    """The ref that scores a round the reviewed table does not list, and what was tried on the way.

    `folders_of(ref)` fetches the ref's archive and names its rule folders (FetchError or RulesError when it
    cannot). Order: the `rules_default_ref` setting when set; else the round's release line, best tag first;
    else the default branch's head; the first that ships the round's own folder wins. When none does, the
    newest rules found stand in and the ref is provisional. Every outcome's `why` says how it was found."""
    label = suite.round_label(round_version)
    own = f"{label}'s own rule folder"
    notes: list[str] = []

    def ships_own(ref: str) -> bool | None:
        try:
            return any(folder_is_own(f, round_version, suite) for f in folders_of(ref))
        except (FetchError, RulesError) as exc:
            notes.append(f"{ref}: {exc}")
            return None

    if default_ref:
        own_folder = ships_own(default_ref)
        why = f"the rules_default_ref setting names {default_ref}"
        if own_folder is False:
            why += f", which does not ship {own}"
        return RulesRef(round_version, default_ref, "", why, SETTING, suite=suite.name,
                        provisional=not own_folder), notes
    try:
        tags, stale = listed_tags(github, base)
        if stale:
            notes.append(stale)
    except FetchError as exc:
        tags = []
        notes.append(f"tags of {LOGGING_REPOSITORY}: {exc}")
    suite_tags = release_tags(tags, suite)
    line = release_line(suite_tags, round_version)
    for tag in line:
        if ships_own(tag.name):
            why = (f"the best release tag of {label}'s line that ships {own} (a final release over candidates, the "
                   f"highest candidate otherwise), found among {LOGGING_REPOSITORY}'s tags")
            return RulesRef(round_version, tag.name, "", why, RELEASE_TAG, suite=suite.name), notes
    no_tag = (f"no release tag of {label}'s line ({', '.join(t.name for t in line)}) ships {own}" if line
              else f"{LOGGING_REPOSITORY} has no release tag of {label}'s line")
    try:
        head, head_date = default_branch_head(github, base)
    except FetchError as exc:
        head, head_date = None, ""
        notes.append(f"default branch of {LOGGING_REPOSITORY}: {exc}")
    if head is not None:
        own_folder = ships_own(head)
        if own_folder is not None:
            why = (f"{no_tag}; the default branch's head ({head_date or 'today'}) "
                   + ("does" if own_folder else "does not either: the newest rules there stand in for its own"))
            return RulesRef(round_version, head, head_date, why, DEFAULT_BRANCH, suite=suite.name,
                            provisional=not own_folder), notes
    earlier = recorded_resolution(round_version, suite, base)
    if earlier is not None and earlier.source != STAND_IN and notes:
        # GitHub could not be read now: the ref resolved when it could be stays (its content stays pinned)
        return replace(earlier, why=f"{earlier.why} (resolved earlier; now {notes[-1]})"), notes
    newest = newest_tag(suite_tags)
    stand_in = newest.name if newest is not None else newest_listed_ref(suite).ref
    why = (f"{no_tag} and the default branch could not be read: {stand_in}, the newest "
           f"{'release tag' if newest is not None else 'reviewed ref'} known, stands in")
    return RulesRef(round_version, stand_in, "", why, STAND_IN, suite=suite.name, provisional=True), notes
