"""The MLPerf suites the warehouse loads: what differs between them, written down once.

Inference shares only the archive layout idea: its results are LoadGen summaries, judged by LoadGen
itself (`Result is : VALID`), with no rules release to fetch (`has_rules` False).

Training and HPC share the log format, the rules releases (`mlcommons/logging`) and the scorer; they
differ in the repository of their results (`training_results_vX.Y`, `hpc_results_vX.Y`), the rule
folders of a release (`training_X.Y.0`, `hpc_X.Y.0`), the layout below a system folder (HPC adds a
`strong`/`weak` level from v1.0 on) and the tables their rows are staged into. A round of one suite
is not a round of the other: HPC v1.0 and Training v1.0 are unrelated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipelines.lib.io.limits import variable
from pipelines.lib.reference.sources import (
    DEFAULT_HPC_RESULTS_URL_TEMPLATE,
    DEFAULT_INFERENCE_RESULTS_URL_TEMPLATE,
    DEFAULT_RESULTS_URL_TEMPLATE,
)


@dataclass(frozen=True)
class RoundDefinitions:
    """How the Dagster definitions (`pipelines/defs/rounds/assets.py`) name, describe and schedule a suite's rounds.
    The assets, the group and the job are named by `Suite.domain`; the partitions here. An instance's partition and
    materialization history is keyed by these names: a rename needs a migration (`pipelines/defs/rounds/migration.py`)."""

    partitions: str  # the dynamic partitions definition of its rounds: `mlperf_hpc_round`
    results_archive: str  # the description of `<domain>_results_archive`
    rules_archive: str | None  # of `<domain>_rules_archive`, the asset a suite with rules has (None: `has_rules` False)
    round_tables: str  # of `<domain>_round_tables`
    job: str  # of `<domain>_round_job`, which materializes the three (two) for one round
    weekly_cron: str  # when `weekly_<domain>_results` re-runs that job for every known round (UTC)
    weekly: str  # that schedule's description
    no_partitions: str  # why it skips a week in which the suite has no round partition yet


@dataclass(frozen=True)
class Suite:
    name: str  # "training" | "hpc": the value of every `suite` column
    repository: str  # results repository and archive name prefix: `<repository>_vX.Y`
    rules_folder: re.Pattern  # a rule folder of this suite in a logging release; groups: major, minor, patch
    # a release tag of this suite in mlcommons/logging; groups: major, minor, patch, release candidate (or None)
    release_tag: re.Pattern
    default_results_url_template: str
    results_setting: str  # the setting naming where its archives are (MLPERF_<NAME>, the refresh's --<name>)
    rounds_setting: str  # the setting naming the rounds a refresh loads (MLPERF_<NAME>)
    default_rounds: tuple[str, ...]  # that setting's default, oldest first (and every later round GitHub lists)
    rounds_description: str  # what each of the two settings sets, for the docs' settings page
    results_description: str
    staged_prefix: str  # staged tables `<prefix>runs`, ...; quarantine files `<quarantine_prefix><round>`
    quarantine_source: str  # `source` of this suite's quarantine rows
    quarantine_prefix: str
    exclusion_prefix: str  # how a build names a round of this suite it leaves out ("" | "hpc:" | "inference:")
    definitions: RoundDefinitions  # its Dagster partitions, assets, job and schedule (pipelines/defs/rounds)
    loaded_by_default: bool = True  # in the `suites` setting's default (the suites a refresh loads)
    # takes a round given without a suite that no suite's configured rounds list (a round nobody lists yet)
    takes_unlisted_rounds: bool = False
    has_rules: bool = True  # scored by the rule files of an mlcommons/logging release
    runs_table: str = "runs"  # the staged table with one row per scored unit (a log; an Inference result)
    results_model: str = "fct_training_result"  # the published table with one row per result (status lists its rounds)
    systems_model: str = "dim_system"  # the published table of its systems (`accelerator_mapping`: checked)
    label: str = "Training"  # how a person reads the suite's name in a round: "HPC v3.0"
    oldest_round: str = "v0.5"  # the oldest round whose archive layout the parser reads (older ones are not loaded)
    # the limits (lib/io/limits.py) of this suite's results archive: its download, its decompressed size
    archive_limit: str = "max_archive_bytes"
    archive_total_limit: str = "max_archive_total_bytes"
    scaling_table: str | None = "scaling"  # the staged scaling.json factors (None: the suite has none)
    # where a round's results are looked for below the archive's top folder (named when a round has none)
    result_layouts: tuple[str, ...] = (
        "<submitter>/results/<system>/<benchmark>/result_*.txt",
        "vX.Y.Z/<submitter>/<entry>/[<folder>/]results/<system>/<benchmark>/result_*.txt",  # v0.5
    )

    @property
    def results_flag(self) -> str:
        """The refresh's option that sets `results_setting`: `--hpc-results-url-template`."""
        return "--" + self.results_setting.replace("_", "-")

    @property
    def results_variable(self) -> str:
        """The environment variable of `results_setting`: `MLPERF_HPC_RESULTS_URL_TEMPLATE`."""
        return variable(self.results_setting)

    @property
    def domain(self) -> str:
        """What its Dagster pieces are named by (`staged_prefix` without its `_`): the asset group `hpc`, the assets
        `hpc_results_archive`, `hpc_rules_archive`, `hpc_round_tables`, the job `hpc_round_job`, the schedule
        `weekly_hpc_results`. Training's is `training`, as its staged tables' prefix."""
        return self.staged_prefix.removesuffix("_")

    def staged(self, table: str) -> str:
        return f"{self.staged_prefix}{table}"

    def round_label(self, round_version: str) -> str:
        """A round as people read it beside other suites' rounds: `v4.1` (Training), `HPC v3.0`, `Inference v5.1`."""
        return round_version if self is TRAINING else f"{self.label} {round_version}"


TRAINING = Suite(
    name="training",
    repository="training_results",
    # `0.6.0/` in early releases, `training_0.6.0/` later; `*_warn` folders are not scoring rules
    rules_folder=re.compile(r"^(?:training_)?(\d+)\.(\d+)\.(\d+)$"),
    # `6.0.0-rc6`, `2.1.0`, `4.0.0-rc3-rcp-prunning` (a suffix names a variant of that candidate)
    release_tag=re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-rc(\d+))?(?:-[\w.-]+)?$"),
    default_results_url_template=DEFAULT_RESULTS_URL_TEMPLATE,
    results_setting="results_url_template",
    rounds_setting="rounds",
    default_rounds=("v0.5", "v0.6", "v0.7", "v1.0", "v1.1", "v2.0", "v2.1", "v3.0", "v3.1", "v4.0", "v4.1", "v5.0",
                    "v5.1", "v6.0"),
    rounds_description="the rounds a refresh loads (comma-separated; the refresh's --rounds); left at the default, "
    "every later round GitHub lists is loaded too",
    results_description="where a round's results archive is fetched ({version}: v4.1); http(s), file:// or a path",
    staged_prefix="training_",
    quarantine_source="mlperf",  # a value users see in fct_quarantine.source: kept
    quarantine_prefix="training-",
    exclusion_prefix="",
    definitions=RoundDefinitions(
        partitions="training_round",
        results_archive="The round's MLPerf Training results archive, downloaded with a conditional GET.",
        rules_archive="The mlcommons/logging archive at the git ref the round was scored with (pipelines/lib/mlperf/"
        "rules_refs.csv): its rule files and checker code decide the score as published.",
        round_tables="Runs, systems and scaling factors parsed from the archive, each run judged by the round's own "
        "rules (as published) and today's; validated, failures quarantined.",
        job="Fetch (conditional GET) one MLPerf round and the rules it was scored with, parse, score and stage it. A "
        "round that fails keeps its previously staged tables.",
        weekly_cron="0 6 * * 1",
        weekly="Weekly: re-check every known round upstream. Unchanged archives are not re-downloaded (ETag) or "
        "re-parsed; the publish_after_refresh sensor then rebuilds if anything changed.",
        no_partitions="no training_round partitions yet: run `mlperf-warehouse refresh` or the discovery sensor",
    ),
    takes_unlisted_rounds=True,
)
HPC = Suite(
    name="hpc",
    repository="hpc_results",
    rules_folder=re.compile(r"^hpc_(\d+)\.(\d+)\.(\d+)$"),
    release_tag=re.compile(r"^hpc-(\d+)\.(\d+)\.(\d+)(?:-rc(\d+))?(?:-[\w.-]+)?$"),  # `hpc-3.0.0`, `hpc-1.0.0-rc2`
    default_results_url_template=DEFAULT_HPC_RESULTS_URL_TEMPLATE,
    results_setting="hpc_results_url_template",
    rounds_setting="hpc_rounds",
    default_rounds=("v0.7", "v1.0", "v2.0", "v3.0"),
    rounds_description="the MLPerf HPC rounds a refresh loads (comma-separated; the refresh's --rounds with --suites "
    "hpc); left at the default, every later round GitHub lists too",
    results_description="where an MLPerf HPC round's results archive is fetched ({version}: v3.0)",
    staged_prefix="hpc_",
    quarantine_source="mlperf-hpc",
    quarantine_prefix="hpc-",
    exclusion_prefix="hpc:",
    definitions=RoundDefinitions(
        partitions="mlperf_hpc_round",  # an HPC round (v3.0) is not a Training round of the same name
        results_archive="The round's MLPerf HPC results archive (mlcommons/hpc_results_vX.Y), downloaded with a "
        "conditional GET.",
        rules_archive="The mlcommons/logging archive at the git ref whose hpc_X.Y.0 rules scored the HPC round "
        "(pipelines/lib/mlperf/rules_refs.csv, suite hpc).",
        round_tables="HPC runs (strong and weak scaling), systems and scaling factors parsed from the archive, each "
        "run judged by the round's own HPC rules and today's; validated, failures quarantined.",
        job="Fetch (conditional GET) one MLPerf HPC round and the rules it was scored with, parse, score and stage "
        "it. A round that fails keeps its previously staged tables.",
        weekly_cron="30 6 * * 1",
        weekly="Weekly: re-check every known MLPerf HPC round upstream, as weekly_training_results does for Training.",
        no_partitions="no mlperf_hpc_round partitions yet: run `mlperf-warehouse refresh --suites hpc`",
    ),
    results_model="fct_hpc_result",
    systems_model="dim_hpc_system",
    label="HPC",
    oldest_round="v0.7",
    result_layouts=("<submitter>/results/<system>/{strong,weak}/<benchmark>/result_*.txt",
                    "<submitter>/results/<system>/<benchmark>/result_*.txt"),  # v0.7: strong only, no level
)
INFERENCE = Suite(
    name="inference",
    repository="inference_results",
    rules_folder=re.compile(r"^$^"),  # no rule folders: LoadGen judges each run
    release_tag=re.compile(r"^$^"),
    default_results_url_template=DEFAULT_INFERENCE_RESULTS_URL_TEMPLATE,
    results_setting="inference_results_url_template",
    rounds_setting="inference_rounds",
    # every published round whose layout the parser reads (v4.0 on)
    default_rounds=("v4.0", "v4.1", "v5.0", "v5.1"),
    rounds_description="the MLPerf Inference rounds a refresh loads when the inference suite is on (default: every "
    "round from v4.0, and every later round GitHub lists)",
    results_description="where an MLPerf Inference round's results archive is fetched ({version}: v5.1)",
    staged_prefix="inference_",
    quarantine_source="mlperf-inference",
    quarantine_prefix="inference-",
    exclusion_prefix="inference:",
    definitions=RoundDefinitions(
        partitions="mlperf_inference_round",
        results_archive="The round's MLPerf Inference results archive (mlcommons/inference_results_vX.Y), downloaded "
        "with a conditional GET.",
        rules_archive=None,
        round_tables="Inference results (one LoadGen performance summary per division, submitter, system, model and "
        "scenario) and systems parsed from the archive; validated, failures quarantined. LoadGen judged each run: "
        "no rules archive is fetched.",
        job="Fetch (conditional GET) one MLPerf Inference round, parse its LoadGen summaries and systems, and stage "
        "them. A round that fails keeps its previously staged tables.",
        weekly_cron="45 6 * * 1",
        weekly="Weekly: re-check every known MLPerf Inference round upstream (partitions exist only when the "
        "inference suite was loaded).",
        no_partitions="no mlperf_inference_round partitions: `mlperf-warehouse refresh --suites inference`",
    ),
    # opt-in: its upstream archives hold every detail log, gigabytes per round
    loaded_by_default=False,
    has_rules=False,
    runs_table="results",
    results_model="fct_inference_result",
    systems_model="dim_inference_system",
    scaling_table=None,
    label="Inference",
    oldest_round="v4.0",  # the results layout and LoadGen logs the parser reads (issue: every round from v4.0)
    result_layouts=("<division>/<submitter>/results/<system>/<model>/<scenario>/performance/run_1/"
                    "mlperf_log_summary.txt",),
    # every detail log and the submitters' code: gigabytes, of which only summaries and systems files are read
    archive_limit="max_inference_archive_bytes",
    archive_total_limit="max_inference_archive_total_bytes",
)
SUITES = {suite.name: suite for suite in (TRAINING, HPC, INFERENCE)}


def suite_named(name: str) -> Suite:
    try:
        return SUITES[name.strip().lower()]
    except KeyError:
        raise ValueError(f"not an MLPerf suite: {name!r} (known: {', '.join(SUITES)})") from None


@dataclass(frozen=True)
class RoundKey:
    """One round of one suite, as a value. Its text is how a build records a round it leaves out (`_build_info`,
    published.json): the suite's exclusion prefix and the round, `hpc:v3.0`, `inference:v5.1`, and for the suite
    without a prefix (Training) the round alone, `v4.1`."""

    suite: Suite
    version: str

    def __str__(self) -> str:
        return f"{self.suite.exclusion_prefix}{self.version}"

    @property
    def label(self) -> str:
        """As a person reads it: `HPC v3.0`, `v4.1`."""
        return self.suite.round_label(self.version)

    @classmethod
    def parse(cls, text: str) -> RoundKey:
        """The key a text names (`str` of a key gives it back)."""
        for suite in SUITES.values():
            if suite.exclusion_prefix and text.startswith(suite.exclusion_prefix):
                return cls(suite, text[len(suite.exclusion_prefix):])
        return cls(next(s for s in SUITES.values() if not s.exclusion_prefix), text)
