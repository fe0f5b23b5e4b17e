"""The compliance rules each round was scored with, as upstream data.

MLCommons scored and published every round with the `mlcommons/logging` release of its time; rule
files and checker code were edited afterwards, and today's package re-judges old logs (all v2.1
BERT logs fail it). So a round is scored twice:

- *as published*: the rule files and checker semantics of the round's own ref (`rules_refs.csv`,
  fetched as the repository's archive at that ref), and
- *current rules*: the pinned `mlperf-logging` package.

A `RuleSet` is the YAML rule files of one ruleset folder plus the semantics of the checker code that
evaluated them (`CheckerSemantics`, read off that release's `mlp_compliance.py`).
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
# Rule folders of each suite: `Suite.rules_folder` (Training: `0.6.0/`, later `training_0.6.0/`; HPC: `hpc_1.0.0/`).


class RulesError(Exception):
    """A rules archive cannot be used (unreadable, no checker, no ruleset for the round)."""


@dataclass(frozen=True)
class RulesRef:
    round: str  # a round of `suite`
    ref: str
    ref_date: str
    why: str
    listed: bool  # False: the round is not in the table and the newest ref stands in
    sha256: str = ""  # the pinned content digest of the ref's rule files (`content_digest`); "" unknown
    suite: str = TRAINING.name


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], RulesRef]:
    """(suite, round) → the ref that scored it."""
    with open(RULES_REFS_CSV, newline="") as fh:
        return {(row["suite"], row["round"]): RulesRef(row["round"], row["ref"], row["ref_date"], row["why"], True,
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


def check_pinned(ruleset: RuleSet, trusted: frozenset[str] = frozenset()) -> None:
    """Refuse rules whose content is not what rules_refs.csv pins for their ref (a moved tag, a mirror, a
    typo in the URL template), unless the user trusts that ref explicitly (`--trust-rules-ref REF`)."""
    if ruleset.ref in trusted:
        return
    accepted = accepted_digests(ruleset.ref)
    if not accepted:
        raise RulesError(f"rules {ruleset.ref}: no pinned digest (content {ruleset.content_sha256[:16]}): refused; "
                         f"--trust-rules-ref {ruleset.ref} uses it")
    if ruleset.content_sha256 not in accepted:
        pinned = pinned_digest(ruleset.ref)
        raise RulesError(f"rules {ruleset.ref}: content {ruleset.content_sha256[:16]} is not the pinned "
                         f"{pinned[:16]}: refused; --trust-rules-ref {ruleset.ref} uses it")


def ref_for_round(round_version: str, default_ref: str | None = None, suite: Suite = TRAINING) -> RulesRef | None:
    """The ref a round of `suite` was scored with. Training v0.5 predates the rules releases: None. A
    round missing from the table uses `default_ref` (the `rules_default_ref` setting), else the newest
    ref of the table, and says so."""
    if (suite is TRAINING and round_sort_key(round_version) <= (0, 5)) or not suite.has_rules:
        return None
    table = _table()
    if (suite.name, round_version) in table:
        return table[(suite.name, round_version)]
    newest = max((r for r in table.values() if r.suite == suite.name), key=lambda r: r.ref_date)
    ref = default_ref or newest.ref
    return RulesRef(round_version, ref, "", f"{suite.name} {round_version} is not in rules_refs.csv: scored with ref "
                    f"{ref}", False, suite=suite.name)


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


def _ruleset(ref: str, round_version: str, yaml_files: dict[str, str], checker_source: str,
             suite: Suite = TRAINING) -> RuleSet:
    folders = {name.split("/", 1)[0] for name in yaml_files}
    folder = folder_for_round(folders, round_version, suite)
    if folder is None:
        raise RulesError(f"rules ref {ref} has no {suite.name} ruleset for {round_version} "
                         f"(folders: {', '.join(sorted(folders))})")
    # another suite's folders and *_warn folders are never enqueued by this suite's rules
    files = tuple(sorted((n, t) for n, t in yaml_files.items() if suite.rules_folder.match(n.split("/", 1)[0])))
    digest = content_digest(yaml_files | {"mlp_compliance.py": checker_source})
    return RuleSet(ref, folder, files, CheckerSemantics.from_checker_source(checker_source), digest)


def ruleset_from_archive(path: Path, ref: str, round_version: str, suite: Suite = TRAINING) -> RuleSet:
    """Read a `mlcommons/logging` archive (any top folder) as a stream: only the checker's YAML and
    `mlp_compliance.py`, regular files of bounded size; nothing is extracted to disk. The whole stream is
    bounded too (every member's size counts: skipping one still inflates it)."""
    yaml_files: dict[str, str] = {}
    checker_source = None
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
                if not info.isfile() or ".." in parts or not rel.startswith(CHECKER_DIR):
                    continue
                inner = rel[len(CHECKER_DIR):]
                if not (inner.endswith(".yaml") and inner.count("/") == 1) and inner != "mlp_compliance.py":
                    continue
                if info.size > max_file or total + info.size > max_total:
                    raise RulesError(f"rules archive {path.name}: {rel} is over the rule-file limit "
                                     "(MLPERF_MAX_RULE_FILE_BYTES, MLPERF_MAX_RULE_FILES_BYTES)")
                total += info.size
                text = tar.extractfile(info).read().decode("utf-8", "replace")
                if inner == "mlp_compliance.py":
                    checker_source = text
                else:
                    yaml_files[inner] = text
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise RulesError(f"cannot read rules archive {path.name}: {exc}") from exc
    if checker_source is None or not yaml_files:
        raise RulesError(f"{path.name} holds no mlperf_logging/compliance_checker rules: not a mlcommons/logging archive")
    return _ruleset(ref, round_version, yaml_files, checker_source, suite)


def package_ruleset(round_version: str, suite: Suite = TRAINING) -> RuleSet | None:
    """Today's rules: the pinned `mlperf-logging` package's files. None for Training v0.5 (no rules)."""
    if suite is TRAINING and round_sort_key(round_version) <= (0, 5):
        return None
    return _package_ruleset(round_version, suite)


@cache
def _package_ruleset(round_version: str, suite: Suite = TRAINING) -> RuleSet:
    yaml_files, checker_source = _package_files()
    return _ruleset(f"mlperf-logging=={metadata.version('mlperf-logging')}", round_version, yaml_files, checker_source,
                    suite)


@lru_cache(maxsize=1)
def _package_files() -> tuple[dict[str, str], str]:
    """The installed package's rule files and checker code, read once per process."""
    root = Path(str(resources.files("mlperf_logging.compliance_checker")))
    yaml_files = {f"{p.parent.name}/{p.name}": p.read_text() for p in root.glob("*/*.yaml")}
    return yaml_files, (root / "mlp_compliance.py").read_text()
