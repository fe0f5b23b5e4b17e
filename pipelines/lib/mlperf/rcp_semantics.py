"""How one release of MLCommons' `rcp_checker.py` reads logs and RCPs, where releases differ, read off its source.

The checker source of a `mlcommons/logging` release is read *as data*, never run (`RcpSemantics.from_checker_source`:
the number of submission runs per benchmark, which benchmarks converge in samples, the stable-diffusion thresholds,
the llama31_405b speedup adjustment (`SpeedupOffset`), whether RCPs are pruned, ...); a construct these semantics
cannot express leaves the release unsupported (`RcpSemantics.unsupported`). The checker itself: `rcp.py`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from pipelines.lib.mlperf.suites import TRAINING


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split("."))


@dataclass(frozen=True)
class SpeedupOffset:
    """`rcp_record['Max Speedup'] = rcp_record['RCP Mean'] / (rcp_record['Min Epochs'] - offset)` for one
    benchmark, for the rulesets listed or (`min_ruleset`) every ruleset at least that version."""

    benchmark: str
    offset: float
    rulesets: frozenset[str] = frozenset()
    min_ruleset: str | None = None

    def applies(self, benchmark: str | None, ruleset: str) -> bool:
        if benchmark != self.benchmark:
            return False
        if self.min_ruleset is not None:
            return _version(ruleset) >= _version(self.min_ruleset)
        return ruleset in self.rulesets


@dataclass(frozen=True)
class RcpSemantics:
    """How one release's `rcp_checker.py` reads logs and RCPs, where releases differ, read off its source.

    Releases up to 2.1 hold all RCPs of a usage in one checker and take the benchmark from the result
    folder's name; 3.0 and later read the log's `submission_benchmark` and load that benchmark's file."""

    supported: bool  # False: the source has a construct these semantics cannot express (see `unsupported`)
    unsupported: tuple[str, ...]
    rulesets: frozenset[str]  # the rulesets the checker accepts (it raises for any other)
    submission_runs: tuple[tuple[str, tuple[tuple[str, int], ...]], ...]  # usage → benchmark → runs
    rcp_folder: str  # "{usage}_{ruleset}", or "{ruleset}" (1.0.0: one folder per ruleset, training only)
    benchmark_from_log: bool  # 3.0+: `submission_benchmark` (else the folder name)
    per_file_reader: bool  # 3.0+: `read_submission_file`, one verdict per log (else one pass over all logs)
    eval_lines: str  # "accuracy" (eval_accuracy only), "error_if_any" (eval_error when a log has one), "either"
    run_stop_key_checked: bool  # the line's key must be run_stop (else any line mentioning run_stop)
    samples_count_benchmarks: frozenset[str]  # converge at an eval line's metadata.samples_count
    stable_diffusion: str | None  # the benchmark converging at its first eval step passing `sd_criteria`
    sd_step_unit: str  # metadata field naming the eval step
    sd_step_unit_rulesets: tuple[tuple[str, str], ...]  # (ruleset, unit) exceptions
    sd_criteria: tuple[tuple[str, str, float], ...]  # (metric, "<=" or ">=", threshold)
    samples_unit_benchmarks: frozenset[str]  # RCP files list "samples to converge" (else "Epochs to converge")
    rejected: tuple[tuple[str, int], ...]  # runs dropped at each end of the olympic mean, per benchmark
    rejected_default: int
    max_not_converged: tuple[tuple[str, int], ...]  # runs allowed not to converge, per benchmark
    max_not_converged_default: int
    alpha: float
    tolerance: float
    stdev_olympic: bool  # the RCP stdev over the olympic slice (else over every reference run)
    sorts_by_bs: bool  # RCP records sorted by batch size (stable) before use
    prune_key: str | None  # pruning compares this record field ('Min Epochs', 'RCP Mean'); None: no pruning
    prune_usage: str | None  # 2.0: pruning walks this usage's benchmarks whatever the checked usage
    norm_factor: bool  # computes the normalization factor (2.1+)
    returns_norm: bool  # check_directory returns it (3.0+; 2.1 only writes it into scaling.json)
    resets_scaling: bool  # deletes scaling.json before writing it (5.1+)
    speedup_offsets: tuple[SpeedupOffset, ...]

    # -- lookups

    def runs(self, usage: str, benchmark: str | None) -> int:
        """Submission runs of a benchmark; KeyError as the checker's dict lookup."""
        for name, table in self.submission_runs:
            if name == usage:
                return dict(table)[benchmark]
        raise KeyError(usage)

    def benchmarks(self, usage: str) -> tuple[str, ...]:
        for name, table in self.submission_runs:
            if name == usage:
                return tuple(b for b, _ in table)
        raise KeyError(usage)

    def rejected_for(self, benchmark: str | None) -> int:
        return dict(self.rejected).get(benchmark, self.rejected_default)

    def not_converged_allowed(self, benchmark: str | None) -> int:
        return dict(self.max_not_converged).get(benchmark, self.max_not_converged_default)

    def step_unit(self, ruleset: str) -> str:
        return dict(self.sd_step_unit_rulesets).get(ruleset, self.sd_step_unit)

    def rcp_path(self, usage: str, ruleset: str, benchmark: str) -> str:
        return f"{self.rcp_folder.format(usage=usage, ruleset=ruleset)}/rcps_{benchmark}.json"

    # -- reading a release

    @classmethod
    def from_checker_source(cls, source: str) -> RcpSemantics:
        missing: list[str] = []

        def need(value, what: str):
            if value is None:
                missing.append(what)
            return value

        runs = need(_submission_runs(source), "the submission_runs dict")
        rejected = need(_rejected(source), "samples_rejected per benchmark")
        not_converged = need(_not_converged(source), "the non-converged run limits")
        prune_key = _prune_key(source)
        if "def _prune_rcps" in source and prune_key is None:
            missing.append("the pruning criterion")
        sd = _stable_diffusion(source)
        if "stable_diffusion_eval_results" in source and sd is None:
            missing.append("the stable diffusion convergence")
        sd_name, sd_unit, sd_unit_rulesets, sd_criteria = sd or (None, "samples_count", (), ())
        samples_count = _samples_count_benchmarks(source)
        if '["metadata"]["samples_count"]' in source.replace("'", '"') and samples_count is None and sd is None:
            missing.append("the samples_count benchmarks")
        offsets = _speedup_offsets(source)
        if "- 46080" in source and not offsets or "Max Speedup'] = " in source and offsets is None:
            missing.append("the Max Speedup adjustment")
        if not re.search(r"submission_runs(\[benchmark\])?\s*\*\s*2", source):
            missing.append("the interpolation's reference sample count")
        return cls(
            supported=not missing,
            unsupported=tuple(missing),
            rulesets=need(_rulesets(source), "the supported rulesets") or frozenset(),
            submission_runs=runs or (),
            rcp_folder="{usage}_{ruleset}" if 'f"{usage}_{ruleset}"' in source else "{ruleset}",
            benchmark_from_log='"submission_benchmark" in str' in source,
            per_file_reader="def read_submission_file" in source,
            eval_lines=("either" if '"eval_error" in str or "eval_accuracy" in str' in source
                        else "error_if_any" if "def _detect_eval_error" in source else "accuracy"),
            run_stop_key_checked=re.search(r'json\.loads\(str\)\["key"\]\s*==\s*"run_stop"', source) is not None,
            samples_count_benchmarks=samples_count or frozenset(),
            stable_diffusion=sd_name,
            sd_step_unit=sd_unit,
            sd_step_unit_rulesets=sd_unit_rulesets,
            sd_criteria=sd_criteria,
            samples_unit_benchmarks=_samples_unit_benchmarks(source),
            rejected=rejected[0] if rejected else (),
            rejected_default=rejected[1] if rejected else 1,
            max_not_converged=not_converged[0] if not_converged else (),
            max_not_converged_default=not_converged[1] if not_converged else 1,
            alpha=float(need(_number(source, r"self\.alpha\s*=\s*([0-9.eE+-]+)"), "alpha") or 0.05),
            tolerance=float(need(_number(source, r"self\.tolerance\s*=\s*([0-9.eE+-]+)"), "tolerance") or 0.0001),
            stdev_olympic=re.search(r"np\.std\(epoch_list\[samples_rejected", source) is not None,
            sorts_by_bs="sorted(processed_rcp_data.items()" in source,
            prune_key=prune_key,
            prune_usage=_prune_usage(source),
            norm_factor="def _find_norm_factor" in source,
            returns_norm="return rcp_check, rcp_msg, rcp_score_norm" in source,
            resets_scaling="self._reset_results_scaling(results_dir)" in source,
            speedup_offsets=offsets or (),
        )


def _literal(text: str):
    """A Python literal of the checker source, read as data (never executed)."""
    return ast.literal_eval(text)


def _number(source: str, pattern: str) -> str | None:
    m = re.search(pattern, source)
    return m.group(1) if m else None


def _submission_runs(source: str) -> tuple | None:
    m = re.search(r"^submission_runs\s*=\s*(\{.*?^\})", source, re.S | re.M)
    if not m:
        return None
    table = _literal(m.group(1))
    if all(isinstance(v, int) for v in table.values()):
        table = {TRAINING.name: table}  # 1.0.0: one flat dict, Training only (its usage is the suite's name)
    return tuple((usage, tuple(runs.items())) for usage, runs in table.items())


def _rulesets(source: str) -> frozenset[str] | None:
    m = re.search(r"if ruleset not in (\{[^}]*\})", source)
    if m:
        return frozenset(_literal(m.group(1)))
    m = re.search(r"if ruleset != ('[^']*'|\"[^\"]*\")", source)
    return frozenset({_literal(m.group(1))}) if m else None


def _rejected(source: str) -> tuple[tuple[tuple[str, int], ...], int] | None:
    found = set(re.findall(r"samples_rejected = (\d+) if (?:record_contents\['Benchmark'\]|rcp_record\[\"Benchmark\"\])"
                           r" == '(\w+)' else (\d+)", source))
    if len(found) != 1:
        return None  # none, or the RCP statistics and the submission disagree
    special, benchmark, default = found.pop()
    return ((benchmark, int(special)),), int(default)


def _not_converged(source: str) -> tuple[tuple[tuple[str, int], ...], int] | None:
    m = re.search(r"\(not_converged > (\d+) and benchmark != '(\w+)'\) or \(not_converged > (\d+) and "
                  r"benchmark == '(\w+)'\)", source)
    if not m or m.group(2) != m.group(4):
        return None
    return ((m.group(4), int(m.group(3))),), int(m.group(1))


def _prune_key(source: str) -> str | None:
    if "def _prune_rcps" not in source:
        return None
    first = re.search(r"fastest_conv = min\(min_epochs, key=lambda rc: rc\['([^']+)'\]\)", source)
    second = re.search(r"if min_epochs\[i\]\['([^']+)'\] > rcp\['([^']+)'\]", source)
    if not first or not second or len({first.group(1), second.group(1), second.group(2)}) != 1:
        return None
    return first.group(1)


def _prune_usage(source: str) -> str | None:
    m = re.search(r"def _prune_rcps.*?for benchmark in submission_runs\['(\w+)'\]", source, re.S)
    return m.group(1) if m and "def _prune_rcps" in source else None


def _samples_count_benchmarks(source: str) -> frozenset[str] | None:
    m = re.search(r"elif (?P<cond>[^\n]*?)\s*and \(\"eval_error\" in str or \"eval_accuracy\" in str\):\s*\n"
                  r"\s*eval_accuracy_str = str\s*\n"
                  r"\s*conv_epoch = json\.loads\(eval_accuracy_str\)\[\"metadata\"\]\[\"samples_count\"\]", source)
    if not m:
        return None
    return frozenset(re.findall(r"\"(\w+)\"", m.group("cond")))


def _stable_diffusion(source: str):
    bench = re.search(r"if benchmark == \"(\w+)\" and \(\"eval_error\" in str or \"eval_accuracy\" in str\):", source)
    if not bench:
        return None
    conditional = re.search(r"step_unit = \"(\w+)\" if ruleset in (\[[^\]]*\]) else \"(\w+)\"", source)
    fixed = re.search(r"eval_step = json\.loads\(eval_accuracy_str\)\[\"metadata\"\]\[\"(\w+)\"\]", source)
    if conditional:
        unit, exceptions = conditional.group(3), tuple((r, conditional.group(1)) for r in _literal(conditional.group(2)))
    elif fixed:
        unit, exceptions = fixed.group(1), ()
    else:
        return None
    line = re.search(r"if (eval_result\[.*?):\s*\n\s*passing_epochs\.append", source)
    if not line:
        return None
    criteria = tuple((metric, op, float(value)) for metric, op, value in
                     re.findall(r"eval_result\[\"(\w+)\"\]\s*(<=|>=)\s*([0-9.eE+-]+)", line.group(1)))
    if not criteria or len(criteria) != line.group(1).count("eval_result["):
        return None
    return bench.group(1), unit, exceptions, criteria


def _samples_unit_benchmarks(source: str) -> frozenset[str]:
    m = re.search(r"conv_unit = \"samples to converge\" if record_contents\['Benchmark'\]\s*(?:==|in)\s*"
                  r"(\[[^\]]*\]|'[^']*')", source)
    if not m:
        return frozenset()
    value = _literal(m.group(1))
    return frozenset([value] if isinstance(value, str) else value)


def _speedup_offsets(source: str) -> tuple[SpeedupOffset, ...] | None:
    offsets = []
    for m in re.finditer(r"if (?P<cond>[^\n]*?) and self\.benchmark == \"(?P<bench>\w+)\":\s*\n"
                         r"\s*rcp_record\['Max Speedup'\] = rcp_record\['RCP Mean'\] / "
                         r"\(rcp_record\['Min Epochs'\] - (?P<offset>[0-9.]+)\)[ \t]*$", source, re.M):
        cond, bench, offset = m.group("cond").strip(), m.group("bench"), float(m.group("offset"))
        if eq := re.fullmatch(r"self\.ruleset == \"([\d.]+)\"", cond):
            offsets.append(SpeedupOffset(bench, offset, frozenset({eq.group(1)})))
        elif among := re.fullmatch(r"self\.ruleset in (\[[^\]]*\])", cond):
            offsets.append(SpeedupOffset(bench, offset, frozenset(_literal(among.group(1)))))
        elif least := re.fullmatch(r"is_version_at_least\(self\.ruleset, \"([\d.]+)\"\)", cond):
            offsets.append(SpeedupOffset(bench, offset, min_ruleset=least.group(1)))
        else:
            return None
    if source.count("rcp_record['Max Speedup'] = ") != len(offsets):
        return None
    return tuple(offsets)
