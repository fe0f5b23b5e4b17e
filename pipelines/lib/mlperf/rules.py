"""The compliance rules each round was scored with, as upstream data.

MLCommons scored and published every round with the `mlcommons/logging` release of its time; rule
files and checker code were edited afterwards, and today's package re-judges old logs (all v2.1
BERT logs fail it). So a round is scored twice:

- *as published*: the rule files and checker semantics of the round's own ref (`rules_refs.csv`,
  fetched as the repository's archive at that ref), and
- *current rules*: the pinned `mlperf-logging` package.

A `RuleSet` is the YAML rule files of one ruleset folder plus the semantics of the checker code that
evaluated them (`CheckerSemantics`, read off that release's `mlp_compliance.py`), and what else of the
release decides a score: its RCP files, its RCP checker and its result summarizer, read as data.

A round `rules_refs.csv` does not list (a round nobody here has reviewed yet) gets its ref from the
release tags of `mlcommons/logging` (`rules_releases.py`), and is pinned by content on first use.
"""

from __future__ import annotations

import csv
import hashlib
import re
import tarfile
import zlib
from dataclasses import dataclass
from functools import cache, cached_property, lru_cache
from importlib import metadata, resources
from pathlib import Path, PurePosixPath

from pipelines.lib.io.limits import limit
from pipelines.lib.io.package_data import package_path
from pipelines.lib.mlperf.rounds import round_sort_key, url_template
from pipelines.lib.mlperf.suites import TRAINING, Suite
from pipelines.lib.reference.sources import DEFAULT_RULES_URL_TEMPLATE

RULES_REFS_CSV = package_path(__package__, "rules_refs.csv")
CHECKER_DIR = "mlperf_logging/compliance_checker/"
RCP_DIR = "mlperf_logging/rcp_checker/"
SUMMARIZER = "mlperf_logging/result_summarizer/result_summarizer.py"
RULES_TABLE = "rules_refs.csv"
REVIEWED = "reviewed"  # the source of a ref listed in rules_refs.csv (vocabulary rules_ref_source)
# Rule folders of each suite: `Suite.rules_folder` (Training: `0.6.0/`, later `training_0.6.0/`; HPC: `hpc_1.0.0/`).


class RulesError(Exception):
    """A rules archive cannot be used (unreadable, no checker, no ruleset for the round)."""


@dataclass(frozen=True)
class RulesRef:
    round: str  # a round of `suite`
    ref: str
    ref_date: str
    why: str
    # how the ref was found (vocabulary rules_ref_source): reviewed (rules_refs.csv), release_tag or
    # default_branch (discovered: rules_releases.py), setting (rules_default_ref), stand_in (nothing better found)
    source: str = REVIEWED
    sha256: str = ""  # the pinned content digest of the ref's rule files (`content_digest`); "" unknown
    suite: str = TRAINING.name
    # the ref does not ship the round's own rule folder: its scores are provisional, and `why` says so
    provisional: bool = False

    @property
    def listed(self) -> bool:
        return self.source == REVIEWED


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], RulesRef]:
    """(suite, round) → the ref that scored it."""
    with open(RULES_REFS_CSV, newline="") as fh:
        return {(row["suite"], row["round"]): RulesRef(row["round"], row["ref"], row["ref_date"], row["why"], REVIEWED,
                                                       row.get("sha256") or "", row["suite"])
                for row in csv.DictReader(fh)}


def pinned_digest(ref: str) -> str:
    """The content digest rules_refs.csv pins for a ref ("" when the table does not know the ref)."""
    return next((r.sha256 for r in _table().values() if r.ref == ref and r.sha256), "")


def accepted_digests(ref: str) -> frozenset[str]:
    """The contents a ref's rules archive may have: the pinned one."""
    pinned = pinned_digest(ref)
    return frozenset({pinned} if pinned else ())


def content_digest(files: dict[str, str]) -> str:
    """sha256 of a rules archive's content as read (every rule file and the checker code, by path),
    not of its bytes: GitHub may compress the same tree differently."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode() + b"\0")
    return digest.hexdigest()


def check_pinned(ruleset: RuleSet, trusted: frozenset[str] = frozenset(), *, used_for: str = "",
                 base: Path | None = None) -> str:
    """Refuse rules whose content is not what they are pinned to, and say how they are trusted. A ref of
    rules_refs.csv must have the content the table pins (a moved tag, a mirror, a typo in the URL template is
    refused) unless the user trusts that ref explicitly (`--trust-rules-ref REF`); a ref the table does not
    know is trusted on first use (rules_releases.pin_on_first_use): the same ref later must have the same
    content, unless trusted explicitly, which re-pins it."""
    from pipelines.lib.mlperf.rules_releases import pin_on_first_use

    accepted = accepted_digests(ruleset.ref)
    if accepted:
        if ruleset.content_sha256 in accepted:
            return f"content {ruleset.content_sha256[:12]} pinned by {RULES_TABLE}"
        if ruleset.ref in trusted:
            return f"content {ruleset.content_sha256[:12]} trusted by --trust-rules-ref (not the pinned one)"
        pinned = pinned_digest(ruleset.ref)
        raise RulesError(f"rules {ruleset.ref}: content {ruleset.content_sha256[:16]} is not the pinned "
                         f"{pinned[:16]}: refused; --trust-rules-ref {ruleset.ref} uses it")
    return pin_on_first_use(ruleset.ref, ruleset.content_sha256, used_for, repin=ruleset.ref in trusted, base=base)


def scored_by_rules(round_version: str, suite: Suite = TRAINING) -> bool:
    """Whether a round of `suite` is judged by a rules release (Training v0.5 predates them; LoadGen judges
    Inference)."""
    return suite.has_rules and not (suite is TRAINING and round_sort_key(round_version) <= (0, 5))


def listed_ref(round_version: str, suite: Suite = TRAINING) -> RulesRef | None:
    """The reviewed ref of a round (rules_refs.csv), or None when the table does not list it."""
    return _table().get((suite.name, round_version))


def newest_listed_ref(suite: Suite = TRAINING) -> RulesRef:
    return max((r for r in _table().values() if r.suite == suite.name), key=lambda r: r.ref_date)


def ref_for_round(round_version: str, suite: Suite = TRAINING, base: Path | None = None) -> RulesRef | None:
    """The ref a round of `suite` is scored with: the reviewed table's, else the one the rules archive asset
    resolved and recorded (rules_releases.py). None when no rules release judges the round. RulesError when
    the round's ref has not been resolved yet."""
    if not scored_by_rules(round_version, suite):
        return None
    if (listed := listed_ref(round_version, suite)) is not None:
        return listed
    from pipelines.lib.mlperf.rules_releases import recorded_resolution

    resolved = recorded_resolution(round_version, suite, base)
    if resolved is None:
        raise RulesError(f"{suite.round_label(round_version)}: rules_refs.csv does not list it and its rules release "
                         "has not been resolved yet (the rules archive asset resolves it)")
    return resolved


def folder_is_own(folder: str, round_version: str, suite: Suite = TRAINING) -> bool:
    """Whether a rule folder (`training_6.0.0`, `0.6.0`, `hpc_3.0.0`) holds the round's own rules."""
    m = suite.rules_folder.match(folder)
    return m is not None and (int(m.group(1)), int(m.group(2))) == round_sort_key(round_version)


def rules_url_template(template: str | None = None) -> str:
    """The rules archive URL template, checked (else GitHub's archive of the ref)."""
    return url_template(template, DEFAULT_RULES_URL_TEMPLATE, "{ref}", "rules")


def rules_url(template: str, ref: str) -> str:
    return rules_url_template(template).replace("{ref}", ref)


@dataclass(frozen=True)
class CheckerSemantics:
    """How a release's `mlp_compliance.py` evaluated the rule files, where releases differ."""

    checks_submission_keys_once: bool  # 2.1+: PRE/CHECK/POST run on the first `submission_*` line only
    begin_sees_loglines: bool  # 3.1+: a config's BEGIN code can read `loglines`
    at_least_n: bool  # 3.1+: `REQ: AT_LEAST(n)` is enforced (earlier releases ignore it)
    first_check: bool  # newer package: `FIRST_CHECK` runs on a key's first line
    weights_init_warnings: bool  # 1.1 only: weights_initialization failures are warnings

    def exercised_by(self, rule_text: str) -> CheckerSemantics:
        """These semantics with every difference the given rule files do not exercise switched off:
        two checkers that differ only there judge those files alike."""
        return CheckerSemantics(
            checks_submission_keys_once=self.checks_submission_keys_once,
            begin_sees_loglines=self.begin_sees_loglines and "loglines" in rule_text,
            at_least_n=self.at_least_n and "AT_LEAST(" in rule_text,
            first_check=self.first_check and "FIRST_CHECK" in rule_text,
            weights_init_warnings=self.weights_init_warnings and "initialized_tensors" in rule_text,
        )

    @classmethod
    def from_checker_source(cls, source: str) -> CheckerSemantics:
        return cls(
            checks_submission_keys_once="has_been_exec" in source,
            begin_sees_loglines=re.search(r"exec\(begin_blocks\[0\]\['BEGIN'\]\['CODE'\]\.strip\(\),\s*state,\s*locals\(\)\)",
                                          source) is not None,
            at_least_n="AT_LEAST(" in source,
            first_check="FIRST_CHECK" in source,
            weights_init_warnings="can be ignored for 1.1.0" in source,
        )


@dataclass(frozen=True)
class RuleSet:
    """A release's rule files (path relative to the compliance checker → YAML text; configs enqueue
    files of older folders, e.g. training_4.0.0 → training_3.1.0/closed_resnet_lars.yaml), the
    round's entry folder, and the semantics of the checker that evaluates them. A few hundred KB,
    picklable: sent to worker processes."""

    ref: str  # a git ref of mlcommons/logging, or "mlperf-logging==<version>" for the installed package
    folder: str  # e.g. "training_4.1.0" or "0.6.0"
    files: tuple[tuple[str, str], ...]
    semantics: CheckerSemantics
    content_sha256: str = ""  # content_digest of everything read from the rules archive

    @property
    def entry(self) -> str:
        return f"{self.folder}/common.yaml"

    @cached_property
    def texts(self) -> dict[str, str]:
        return dict(self.files)

    @cached_property
    def digest(self) -> str:
        h = hashlib.sha256(repr(self.semantics).encode())
        for name, text in self.files:
            h.update(name.encode() + b"\0" + text.encode() + b"\0")
        return h.hexdigest()[:16]

    def config_text(self, relative_path: str) -> str | None:
        return self.texts.get(relative_path)

    def differing_files(self, other: RuleSet) -> frozenset[str]:
        """Rule files whose text differs between the two releases (or exists in one only)."""
        mine, theirs = self.texts, other.texts
        return frozenset(n for n in mine.keys() | theirs.keys() if mine.get(n) != theirs.get(n))


def folder_for_round(folders: set[str], round_version: str, suite: Suite = TRAINING) -> str | None:
    """The round's own folder of `suite` (`training_X.Y.0` or `X.Y.0`; `hpc_X.Y.0`), else the newest
    older one. HPC only: a round older than every HPC folder (v0.7: no release holds its rules) takes
    the oldest, the nearest rules there are (rules_refs.csv says so for the round)."""
    wanted = round_sort_key(round_version)
    candidates, newer = [], []
    for name in folders:
        m = suite.rules_folder.match(name)
        if m:
            key = (int(m.group(1)), int(m.group(2)), name.startswith("training_"))
            (candidates if key[:2] <= wanted else newer).append((key, name))
    if candidates:
        return max(candidates)[1]
    return min(newer)[1] if newer and suite is not TRAINING else None


def _ruleset(ref: str, round_version: str, archive: RulesArchive, suite: Suite = TRAINING) -> RuleSet:
    folder = folder_for_round(archive.folders, round_version, suite)
    if folder is None:
        raise RulesError(f"rules ref {ref} has no {suite.name} ruleset for {round_version} "
                         f"(folders: {', '.join(sorted(archive.folders))})")
    # another suite's folders and *_warn folders are never enqueued by this suite's rules
    files = tuple(sorted((n, t) for n, t in archive.yaml_files.items()
                         if suite.rules_folder.match(n.split("/", 1)[0])))
    return RuleSet(ref, folder, files, CheckerSemantics.from_checker_source(archive.checker_source),
                   archive.content_sha256)


@dataclass(frozen=True)
class RulesArchive:
    """What a `mlcommons/logging` release (an archive of a ref, or the installed package) holds that decides a
    score, as text: the compliance rule files and checker code, the RCP files and the RCP checker code, and the
    result summarizer's code (read for its facts, never run)."""

    yaml_files: dict[str, str]  # path below the compliance checker (`training_6.0.0/common.yaml`) → YAML
    checker_source: str  # mlp_compliance.py
    rcp_files: dict[str, str]  # path below the RCP checker (`training_6.0.0/rcps_flux1.json`) → JSON
    rcp_checker_source: str  # rcp_checker.py ("" where the release has none)
    summarizer_source: str  # result_summarizer.py ("" where the release has none)

    @property
    def folders(self) -> set[str]:
        return {name.split("/", 1)[0] for name in self.yaml_files}

    @cached_property
    def content_sha256(self) -> str:
        return content_digest(self.yaml_files | {"mlp_compliance.py": self.checker_source}
                              | {f"rcp_checker/{n}": t for n, t in self.rcp_files.items()}
                              | {"rcp_checker/rcp_checker.py": self.rcp_checker_source,
                                 "result_summarizer/result_summarizer.py": self.summarizer_source})


def _archive_member(rel: str) -> str | None:
    """Which part of a release a member is (its key in RulesArchive's reading), or None: not read."""
    if rel.startswith(CHECKER_DIR):
        inner = rel[len(CHECKER_DIR):]
        if (inner.endswith(".yaml") and inner.count("/") == 1) or inner == "mlp_compliance.py":
            return "compliance:" + inner
    elif rel.startswith(RCP_DIR):
        inner = rel[len(RCP_DIR):]
        if (inner.endswith(".json") and inner.count("/") == 1) or inner == "rcp_checker.py":
            return "rcp:" + inner
    elif rel == SUMMARIZER:
        return "summarizer:"
    return None


def read_rules_archive(path: Path) -> RulesArchive:
    """Read a `mlcommons/logging` archive (any top folder) as a stream: only the rule, RCP and checker files,
    regular files of bounded size; nothing is extracted to disk. The whole stream is bounded too (every
    member's size counts: skipping one still inflates it). Read once per file version and process."""
    stat = path.stat()
    return _read_rules_archive(path, stat.st_size, stat.st_mtime_ns)


@lru_cache(maxsize=8)
def _read_rules_archive(path: Path, _size: int, _mtime_ns: int) -> RulesArchive:
    read: dict[str, str] = {}
    total = streamed = 0
    max_file, max_total = limit("max_rule_file_bytes"), limit("max_rule_files_bytes")
    max_stream = limit("max_rules_archive_total_bytes")
    try:
        with tarfile.open(path, mode="r|gz") as tar:
            for info in tar:
                streamed += max(info.size, 0) + 512
                if streamed > max_stream:
                    raise RulesError(f"rules archive {path.name} inflates past {max_stream:,} bytes at {info.name!r} "
                                     "(MLPERF_MAX_RULES_ARCHIVE_TOTAL_BYTES): not a rules archive; refused")
                parts = PurePosixPath(info.name).parts
                rel = "/".join(parts[1:])
                if not info.isfile() or ".." in parts or (key := _archive_member(rel)) is None:
                    continue
                if info.size > max_file or total + info.size > max_total:
                    raise RulesError(f"rules archive {path.name}: {rel} is over the rule-file limit "
                                     "(MLPERF_MAX_RULE_FILE_BYTES, MLPERF_MAX_RULE_FILES_BYTES)")
                total += info.size
                read[key] = tar.extractfile(info).read().decode("utf-8", "replace")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise RulesError(f"cannot read rules archive {path.name}: {exc}") from exc
    archive = _rules_archive(read)
    if not archive.checker_source or not archive.yaml_files:
        raise RulesError(f"{path.name} holds no mlperf_logging/compliance_checker rules: not a mlcommons/logging archive")
    return archive


def _rules_archive(read: dict[str, str]) -> RulesArchive:
    """A RulesArchive from files keyed as `_archive_member` names them."""
    def part(kind: str) -> dict[str, str]:
        return {k[len(kind) + 1:]: v for k, v in read.items() if k.startswith(kind + ":")}

    compliance, rcp = part("compliance"), part("rcp")
    return RulesArchive(
        yaml_files={n: t for n, t in compliance.items() if n != "mlp_compliance.py"},
        checker_source=compliance.get("mlp_compliance.py", ""),
        rcp_files={n: t for n, t in rcp.items() if n != "rcp_checker.py"},
        rcp_checker_source=rcp.get("rcp_checker.py", ""),
        summarizer_source=read.get("summarizer:", ""))


def ruleset_from_archive(path: Path, ref: str, round_version: str, suite: Suite = TRAINING) -> RuleSet:
    """The round's ruleset of a `mlcommons/logging` archive (read_rules_archive)."""
    return _ruleset(ref, round_version, read_rules_archive(path), suite)


def package_ruleset(round_version: str, suite: Suite = TRAINING) -> RuleSet | None:
    """Today's rules: the pinned `mlperf-logging` package's files. None for Training v0.5 (no rules)."""
    if not scored_by_rules(round_version, suite):
        return None
    return _package_ruleset(round_version, suite)


def current_rules_missing(round_version: str, suite: Suite = TRAINING) -> str | None:
    """Why today's rules give a round no verdict, else None: the pinned package ships no rule folder of the
    round (a round newer than the package, or one between or before its folders), and its result summarizer
    scores no ruleset it does not ship. Another round's folder would be another round's rules, so none stands
    in. None too for a round no rules exist for (v0.5: start, stop, success)."""
    if not scored_by_rules(round_version, suite):
        return None
    folder = folder_for_round(package_archive().folders, round_version, suite)
    if folder is not None and folder_is_own(folder, round_version, suite):
        return None
    nearest = f" (their nearest: {folder})" if folder else ""
    return (f"today's rules ({package_ref()}) ship none of {suite.round_label(round_version)}{nearest}, "
            "so they give it no verdict")


def package_ref() -> str:
    """How the pinned package's rules are named where a rules ref would be (`mlperf-logging==4.1.68`)."""
    return f"mlperf-logging=={metadata.version('mlperf-logging')}"


@cache
def _package_ruleset(round_version: str, suite: Suite = TRAINING) -> RuleSet:
    return _ruleset(package_ref(), round_version, package_archive(), suite)


@lru_cache(maxsize=1)
def package_archive() -> RulesArchive:
    """The installed package's release, read once per process as an archive of it would be."""
    root = Path(str(resources.files("mlperf_logging")))
    read = {}
    for path in sorted(root.rglob("*")):
        rel = f"mlperf_logging/{path.relative_to(root).as_posix()}"
        if path.is_file() and (key := _archive_member(rel)) is not None:
            read[key] = path.read_text()
    return _rules_archive(read)
