"""MLCommons' RCP checker, reimplemented: the verdict and the normalization factor of one result folder.

A closed-division Training (or HPC) result is only valid when its runs converge no faster than the
Reference Convergence Points (RCPs) allow: `mlperf_logging/rcp_checker/rcp_checker.py` compares the
olympic mean of the runs' epochs (or samples) to converge with the reference runs of the same global
batch size (or an interpolation between two batch sizes), passes or fails the result, and gives the
factor by which a result faster than the reference mean must be slowed down (`scaling.json`). The
result summarizer prints that verdict as the `RCP` column of its detailed summary, with `GBS` and
`samples_to_converge`.

Facts carry over, code does not: the warehouse never runs MLCommons' code. It reads the RCP JSON files
and the checker source of a `mlcommons/logging` release *as data* (`RcpSemantics.from_checker_source`:
the number of submission runs per benchmark, which benchmarks converge in samples, the stable-diffusion
thresholds, the llama31_405b speedup adjustment, whether RCPs are pruned, ...) and reproduces the logic
here, in plain Python. numpy and scipy are not installed: the olympic mean and population stdev follow
numpy's pairwise summation, `np.interp` its two-point formula, and the one-sided p-value of
`scipy.stats.ttest_ind_from_stats(equal_var=True)` comes from Student's t CDF computed with a regularized
incomplete beta function (continued fraction; a series of positive terms where the fraction loses digits),
within about 1e-14 relative for the checker's degrees of freedom (below 200; 1e-12 up to 10⁴): the binary
search for the minimum acceptable mean takes the same branches as the original unless a p-value lies
within that distance of alpha.

The checker reads raw log text: a line is read only when it holds one of `TRIGGERS`, and parsed with
`json.loads` only then. `run_convergence` takes those lines as text (`rcp_lines`), which is exact, or the
project's parsed `LogLine`s, which agree wherever the project's parser keeps every line the checker reads
(a line it refuses, e.g. without `time_ms`, is missing there; on every shared round both agree).
The logs' order matters where they disagree on the batch size or lack it: the checker takes the order
`glob` gives, which is the file system's; pass them in the folder's listing order.

Entry points: `RcpSemantics.from_checker_source`, `rcp_tables` (the RCP records of one ruleset),
`run_convergence` (what the checker reads from one result log) and `check_result` (the verdict of a
result folder, as `check_directory(..., rcp_pass='pruned_rcps', set_scaling=True)` and the summarizer
give it).
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from pipelines.lib.mlperf.mllog import LogLine

TOKEN = ":::MLLOG "
NOT_CONVERGED = 1e9  # the checker's stand-in for the epochs of a run that did not converge
# Every substring on which the checker reads a log line: a line holding none of them is never read.
TRIGGERS = ("global_batch_size", "submission_benchmark", "eval_error", "eval_accuracy", "train_samples", "run_stop")
_TRIGGERS_BYTES = tuple(t.encode() for t in TRIGGERS)


class RcpError(Exception):
    """What the official checker would raise (a missing RCP file, an unknown benchmark, a log line it
    cannot read): the summarizer catches it and leaves RCP, GBS and samples_to_converge empty."""


# --------------------------------------------------------------------------------------------------
# numpy and scipy, as the checker uses them

def _fdiv(a: float, b: float) -> float:
    """a / b with numpy's float64 semantics: division by zero gives ±inf or nan, not an exception."""
    try:
        return a / b
    except ZeroDivisionError:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)


def _sqrt(x: float) -> float:
    return math.sqrt(x) if x >= 0 else math.nan


def _pairwise_sum(values: Sequence[float], start: int, n: int) -> float:
    """numpy's `pairwise_sum_DOUBLE`: the order of additions decides the last bit of every mean."""
    if n < 8:
        total = 0.0
        for i in range(start, start + n):
            total += values[i]
        return total
    if n <= 128:
        r = list(values[start:start + 8])
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] += values[start + i + j]
            i += 8
        total = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        for k in range(i, n):
            total += values[start + k]
        return total
    half = n // 2
    half -= half % 8
    return _pairwise_sum(values, start, half) + _pairwise_sum(values, start + half, n - half)


def np_sum(values: Iterable[float]) -> float:
    """`np.sum` of a short list as float64 (ints converted first, as numpy's reduction casts them)."""
    floats = [float(v) for v in values]
    return 0.0 + _pairwise_sum(floats, 0, len(floats))


def np_mean(values: Sequence[float]) -> float:
    """`np.mean`: nan for an empty list."""
    return _fdiv(np_sum(values), float(len(values)))


def np_std(values: Sequence[float]) -> float:
    """`np.std` with ddof=0: the mean, then the mean of the squared deviations, then the root."""
    mean = np_mean(values)
    squares = [(float(v) - mean) * (float(v) - mean) for v in values]
    return _sqrt(_fdiv(np_sum(squares), float(len(values))))


def np_interp(x: float, x0: float, x1: float, y0: float, y1: float) -> float:
    """`np.interp(x, [x0, x1], [y0, y1])`, numpy's two-point branch included (ends, equal abscissae)."""
    x, x0, x1, y0, y1 = float(x), float(x0), float(x1), float(y0), float(y1)
    if math.isnan(x):
        return math.nan
    if x > x1:
        return y1
    if x < x0:
        return y0
    if x >= x1:
        return y1
    if x == x0:
        return y0
    slope = _fdiv(y1 - y0, x1 - x0)
    result = slope * (x - x0) + y0
    if math.isnan(result):
        result = slope * (x - x1) + y1
        if math.isnan(result) and y0 == y1:
            result = y0
    return result


_BETA_EPS = 1e-16
_BETA_TINY = 1e-300
_BETA_MAX_ITERATIONS = 10_000


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (modified Lentz), converging fast for x < (a+1)/(a+b+2)."""
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
    h = d
    for m in range(1, _BETA_MAX_ITERATIONS):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + aa * d
            d = 1.0 / (d if abs(d) > _BETA_TINY else _BETA_TINY)
            c = 1.0 + aa / c
            c = c if abs(c) > _BETA_TINY else _BETA_TINY
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _BETA_EPS:
            break
    return h


def _stirling_remainder(x: float) -> float:
    """log Γ(x) - ((x - ½) log x - x + ½ log 2π), for x >= 30 (the next term is below 1e-19)."""
    x2 = 1.0 / (x * x)
    return (1 / 12 - x2 * (1 / 360 - x2 * (1 / 1260 - x2 * (1 / 1680 - x2 / 1188)))) / x


def _log_gamma_ratio(a: float, b: float) -> float:
    """log Γ(a) - log Γ(a + b) without the cancellation of two large `lgamma`s: shift `a` to 30 or more
    (Γ(a+1) = aΓ(a)), then Stirling's series, whose leading terms cancel analytically."""
    shift = 0.0
    while a < 30:
        shift += math.log1p(b / a)
        a += 1.0
    return (shift - (a - 0.5) * math.log1p(b / a) - b * math.log(a + b) + b
            + _stirling_remainder(a) - _stirling_remainder(a + b))


def _log_beta(a: float, b: float) -> float:
    """log B(a, b) = log Γ(small) + log Γ(big) - log Γ(big + small), accurate when `big` is large (the
    t distribution's df/2) where three `lgamma`s would lose digits."""
    small, big = (a, b) if a <= b else (b, a)
    return math.lgamma(small) + _log_gamma_ratio(big, small)


def _beta_series(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) = x^a y^b / (a B(a, b)) · 2F1(a+b, 1; a+1; x), a series of positive terms (DLMF 8.17.8),
    for x small against 1/(a+b)."""
    total, term, n = 1.0, 1.0, 0
    while term > total * 1e-17 and n < 100_000:
        term *= (a + b + n) / (a + 1 + n) * x
        total += term
        n += 1
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    return math.exp(a * log_x + b * log_y - _log_beta(a, b)) * total / a


def betainc(a: float, b: float, x: float, y: float | None = None) -> float:
    """The regularized incomplete beta function I_x(a, b); `y` is 1 - x when the caller has it more
    accurately than `1 - x` (x near 1)."""
    y = 1.0 - x if y is None else y
    if math.isnan(x) or math.isnan(y) or a <= 0 or b <= 0:
        return math.nan
    if x <= 0:
        return 0.0
    if y <= 0:
        return 1.0
    log_x = math.log1p(-y) if y < 0.5 else math.log(x)
    log_y = math.log1p(-x) if x < 0.5 else math.log(y)
    log_front = a * log_x + b * log_y - _log_beta(a, b)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, y) / b


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom (`scipy.special.stdtr(df, t)`)."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return math.nan
    if math.isinf(t):
        return 0.0 if t < 0 else 1.0
    if t == 0:
        return 0.5
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    t2 = t * t
    # I_x(df/2, 1/2) with x = df/(df+t²) is the two-sided tail; 1-x = t²/(df+t²) without cancellation
    a, x, y = 0.5 * df, df / (df + t2), t2 / (df + t2)
    tail = None
    if df > 100 and t2 < 50:
        # the continued fraction loses about log10(df/t²) digits when df is large; 1 - I_y(1/2, df/2) from
        # a series of positive terms loses log10(1/tail): take it when that is fewer digits
        complement = 1.0 - _beta_series(0.5, a, y, x)
        tail = complement if complement > t2 / df else None
    if tail is None:
        tail = betainc(a, 0.5, x, y)
    return 0.5 * tail if t < 0 else 1.0 - 0.5 * tail


def one_sided_p_value(mean1: float, std1: float, nobs1: int, mean2: float, std2: float, nobs2: int) -> float:
    """The checker's `_find_p_value`: `ttest_ind_from_stats(..., equal_var=True)`'s two-sided p-value
    turned one-sided (p/2 when t < 0, else 1 - p/2)."""
    v1 = 0.0 if nobs1 == 1 else std1 * std1  # scipy: a single observation has no variance to pool
    v2 = 0.0 if nobs2 == 1 else std2 * std2
    df = nobs1 + nobs2 - 2.0
    pooled = _fdiv((nobs1 - 1) * v1 + (nobs2 - 1) * v2, df)
    denom = _sqrt(pooled * (_fdiv(1.0, nobs1) + _fdiv(1.0, nobs2)))
    t = _fdiv(mean1 - mean2, denom)
    two_sided = 2.0 * student_t_cdf(-abs(t), df)
    return two_sided / 2.0 if t < 0 else 1.0 - two_sided / 2.0


def min_acceptable_mean(mean: float, stdev: float, num_samples_ref: int, submission_runs: int | Callable[[], int],
                        alpha: float = 0.05, tolerance: float = 0.0001) -> float:
    """The checker's `_find_min_acceptable_mean`: the binary search between 0 and `mean` for the lowest
    submission mean whose one-sided p-value against the reference still exceeds alpha. `submission_runs`
    may be a callable: old releases look it up only when the stdev is not zero (and fail there)."""
    if stdev == 0:
        return mean
    runs = submission_runs() if callable(submission_runs) else submission_runs
    num_samples_subm = runs - 2
    mean_max, mean_min = mean, 0.0
    mean_mid = (mean_min + mean_max) / 2
    while mean_max - mean_min > tolerance:
        # the reference's sample count goes with the submission's mean, as the checker calls it
        p_value = one_sided_p_value(mean_mid, stdev, num_samples_ref, mean, stdev, num_samples_subm)
        if p_value > alpha:
            mean_max = mean_mid
        else:
            mean_min = mean_mid
        mean_mid = (mean_min + mean_max) / 2
    return mean_mid


# --------------------------------------------------------------------------------------------------
# the semantics of one release of rcp_checker.py

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
        table = {"training": table}  # 1.0.0: one flat dict, Training only
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


# --------------------------------------------------------------------------------------------------
# RCP records of one ruleset

@dataclass(frozen=True)
class RcpRecord:
    """One reference convergence point with the checker's statistics."""

    name: str
    benchmark: str
    bs: Any  # as the JSON file gives it (compared with the log's global_batch_size as is)
    epochs: tuple[float, ...]  # sorted
    mean: float  # olympic mean
    stdev: float  # np.std
    min_epochs: float  # the minimum acceptable submission mean
    max_speedup: float  # mean / min_epochs
    interpolated: bool = False

    def adjusted(self, max_speedup: float) -> RcpRecord:
        return RcpRecord(self.name, self.benchmark, self.bs, self.epochs, self.mean, self.stdev, self.min_epochs,
                         max_speedup, self.interpolated)


@dataclass
class _Data:
    """What one checker instance holds: every record (by name, in the checker's order) and the pruned ones."""

    full: dict[str, RcpRecord]
    pruned: dict[str, RcpRecord] | None


@dataclass
class RcpTables:
    """The RCP files of one usage and ruleset under one release's semantics. Records are computed on first
    use, per benchmark (3.0+) or for the whole usage (older releases load every benchmark at once)."""

    usage: str
    ruleset: str
    semantics: RcpSemantics
    files: Mapping[str, str]
    _cache: dict[str | None, _Data | str] = field(default_factory=dict, repr=False)

    def data(self, benchmark: str | None) -> _Data:
        """The checker's records for a result of `benchmark`; RcpError where the checker raises."""
        key = benchmark if self.semantics.benchmark_from_log else None
        if not isinstance(key, str | None):
            raise RcpError(f"KeyError: {key!r}")  # a benchmark that is not a name has no entry in submission_runs
        if key not in self._cache:
            try:
                self._cache[key] = self._load(benchmark)
            except RcpError as exc:
                self._cache[key] = str(exc)
        cached = self._cache[key]
        if isinstance(cached, str):
            raise RcpError(cached)
        return cached

    def records(self, benchmark: str, pruned: bool = False) -> tuple[RcpRecord, ...]:
        """A benchmark's records (pruned or all), in the checker's order."""
        data = self.data(benchmark)
        chosen = data.pruned if pruned and data.pruned is not None else data.full
        return tuple(r for r in chosen.values() if self.semantics.benchmark_from_log or r.benchmark == benchmark)

    def _load(self, benchmark: str | None) -> _Data:
        sem = self.semantics
        if not sem.supported:
            raise RcpError(f"checker semantics not supported: {', '.join(sem.unsupported)}")
        if self.ruleset not in sem.rulesets:
            raise RcpError(f"RCP Checker not supported in {self.ruleset}")
        try:
            if sem.benchmark_from_log:
                runs = sem.runs(self.usage, benchmark)
                full = self._records(benchmark, lambda _b: runs)
                pruned = self._pruned(full, [None], lambda _b: runs) if sem.prune_key else None
            else:
                benchmarks = sem.benchmarks(self.usage)
                full = {}
                for name in benchmarks:
                    full.update(self._records(name, lambda b: sem.runs(self.usage, b)))
                walk = sem.benchmarks(sem.prune_usage or self.usage) if sem.prune_key else []
                pruned = self._pruned(full, walk, lambda b: sem.runs(self.usage, b)) if sem.prune_key else None
        except KeyError as exc:
            raise RcpError(f"KeyError: {exc}") from exc
        except (ValueError, TypeError, AttributeError, IndexError) as exc:
            raise RcpError(f"{type(exc).__name__}: {exc}") from exc
        return _Data(full, pruned)

    def _raw(self, benchmark: str | None) -> dict:
        path = self.semantics.rcp_path(self.usage, self.ruleset, str(benchmark))
        if path not in self.files:
            raise RcpError(f"No RCP file {path}")
        try:
            return json.loads(self.files[path])
        except ValueError as exc:
            raise RcpError(f"{path}: {exc}") from exc

    def _records(self, benchmark: str | None, runs: Callable[[str], int]) -> dict[str, RcpRecord]:
        """One file's records with their statistics (`_process_raw_rcp_data`, `compute_rcp_stats`)."""
        sem = self.semantics
        raw = []
        for name, contents in self._raw(benchmark).items():
            unit = "samples to converge" if contents["Benchmark"] in sem.samples_unit_benchmarks else "Epochs to converge"
            contents["Hyperparams"]  # noqa: B018 - the checker copies it: a record without it fails
            raw.append((name, contents["Benchmark"], contents["BS"], contents[unit]))
        if sem.sorts_by_bs:
            raw.sort(key=lambda item: item[2])
        records = {}
        for name, bench, bs, epochs in raw:
            epochs = sorted(epochs)
            rejected = sem.rejected_for(bench)
            olympic = epochs[rejected:len(epochs) - rejected]
            mean = np_mean(olympic)
            stdev = np_std(olympic if sem.stdev_olympic else epochs)
            min_epochs = min_acceptable_mean(mean, stdev, len(epochs) - rejected * 2, lambda b=bench: runs(b),
                                             sem.alpha, sem.tolerance)
            records[name] = RcpRecord(name, bench, bs, tuple(epochs), mean, stdev, min_epochs, _fdiv(mean, min_epochs))
        return records

    def interpolate(self, benchmark: str | None, target_bs, low: RcpRecord, high: RcpRecord,
                    runs: int | Callable[[], int]) -> RcpRecord:
        """`_create_interp_rcp`: mean and stdev interpolated linearly in the batch size; the reference
        count is twice the submission runs."""
        mean = np_interp(target_bs, low.bs, high.bs, low.mean, high.mean)
        stdev = np_interp(target_bs, low.bs, high.bs, low.stdev, high.stdev)
        submission_runs = runs() if callable(runs) else runs
        min_epochs = min_acceptable_mean(mean, stdev, submission_runs * 2, submission_runs,
                                         self.semantics.alpha, self.semantics.tolerance)
        return RcpRecord(f"{benchmark}_interp_{target_bs}", str(benchmark), target_bs, (), mean, stdev, min_epochs,
                         _fdiv(mean, min_epochs), interpolated=True)

    def _pruned(self, full: dict[str, RcpRecord], benchmarks: Sequence[str | None],
                runs: Callable[[str], int]) -> dict[str, RcpRecord]:
        """`_prune_rcps`: drop the records of batch sizes below the fastest-converging one, then every record
        converging slower than the interpolation of its two neighbours."""
        key = _PRUNE_FIELDS[self.semantics.prune_key]
        pruned: dict[str, RcpRecord] = {}
        for benchmark in benchmarks:
            points = [r for r in full.values() if benchmark is None or r.benchmark == benchmark]
            fastest = min(points, key=key)  # ValueError on a benchmark without records, as the checker
            points = [r for r in points if r.bs >= fastest.bs]
            i = 1
            while i < len(points) - 1:
                interp = self.interpolate(benchmark if benchmark is not None else points[i].benchmark,
                                          points[i].bs, points[i - 1], points[i + 1],
                                          lambda b=benchmark, r=points[i]: runs(b if b is not None else r.benchmark))
                if key(points[i]) > key(interp):
                    del points[i]
                    i -= 1
                i += 1
            for point in points:
                for name, record in full.items():
                    if record.benchmark == point.benchmark and record.bs == point.bs:
                        pruned[name] = record
        return pruned


_PRUNE_FIELDS: dict[str | None, Callable[[RcpRecord], float]] = {
    "RCP Mean": lambda r: r.mean,
    "Min Epochs": lambda r: r.min_epochs,
}


def rcp_tables(files: Mapping[str, str], usage: str, ruleset: str, semantics: RcpSemantics) -> RcpTables:
    """The RCP records of `usage` and `ruleset` (e.g. 'training', '6.0.0') from a release's RCP files: a
    mapping from the path relative to `rcp_checker/` ('training_6.0.0/rcps_bert.json') to the JSON text."""
    return RcpTables(usage, ruleset, semantics, files)


# --------------------------------------------------------------------------------------------------
# one result log

@dataclass(frozen=True)
class RunConvergence:
    """What the checker reads from one result log.

    3.0+ (`per_file_reader`): `gbs` (the last global_batch_size, -1 when none), `benchmark` (the last
    submission_benchmark), `converged` and `value` (the epochs, samples or eval step to converge, rounded
    as the checker rounds them; 1e9 when not converged). Older releases read all logs of a folder in one
    pass: every line mentioning run_stop counts as a run (`stops`), and a run's value may be the previous
    log's (`stops` values of None; `last_value` carries into the next log). `error`: what the checker
    would raise reading this log."""

    gbs: Any
    benchmark: str | None
    converged: bool
    value: float
    stops: tuple[tuple[bool, Any], ...] = ()
    last_value: Any = None
    error: str | None = None


class _Unset:
    """conv_epoch before any eval line: reading it is the checker's UnboundLocalError."""


_UNSET = _Unset()


def rcp_lines(data: bytes) -> list[str]:
    """The token lines of a log the checker may read, cut as it cuts them (from the last `:::MLLOG `,
    stripped; Latin-1, universal newlines): those holding one of `TRIGGERS`, in the log's order. Found
    by searching each trigger, not by walking every line: a log has up to millions of lines and a few
    hundred of these."""
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    spans = set()
    for trigger in _TRIGGERS_BYTES:
        found = data.find(trigger)
        while found >= 0:
            end = data.find(b"\n", found)
            end = len(data) if end < 0 else end
            spans.add((data.rfind(b"\n", 0, found) + 1, end))
            found = data.find(trigger, end)
    token = TOKEN.encode()
    out = []
    for start, end in sorted(spans):
        cut = data.rfind(token, start, end)
        if cut >= 0:
            line = data[cut:end].decode("latin-1").strip()
            if any(t in line for t in TRIGGERS):
                out.append(line)
    return out


def _line_pairs(lines: Iterable[LogLine | str]) -> Iterable[tuple[str, Callable[[], Any]]]:
    """(text after the token, the parsed JSON object) per line; parsing is lazy: the checker parses a line
    only when it reads it, so an unparsable line matters only there."""
    for line in lines:
        if isinstance(line, str):
            text = line[len(TOKEN):] if line.startswith(TOKEN) else line
            yield text, (lambda text=text: json.loads(text))
        else:
            yield line.full_string[len(TOKEN):], (lambda value=line.value: value)


def run_convergence(lines: Iterable[LogLine | str], semantics: RcpSemantics, ruleset: str,
                    benchmark_hint: str | None = None, bert_train_samples: bool = False) -> RunConvergence:
    """What the checker of `semantics` reads from one log checked against `ruleset`. `lines`: the
    project's parsed MLLOG lines (`parse_log(...).lines`), or the token lines as text (`rcp_lines`),
    which the checker reads even where the project's parser refuses a line. `benchmark_hint`: the result
    folder's name, which releases before 3.0 take as the benchmark."""
    pairs = list(_line_pairs(lines))
    try:
        if semantics.per_file_reader:
            return _read_per_file(pairs, semantics, ruleset, bert_train_samples)
        return _read_pass(pairs, semantics, benchmark_hint, bert_train_samples)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
        return RunConvergence(-1, None, False, NOT_CONVERGED, error=f"{type(exc).__name__}: {exc}")


def _is_eval(text: str, semantics: RcpSemantics, use_eval_error: bool) -> bool:
    if semantics.eval_lines == "either":
        return "eval_error" in text or "eval_accuracy" in text
    if semantics.eval_lines == "error_if_any":
        return "eval_error" in text if use_eval_error else "eval_accuracy" in text
    return "eval_accuracy" in text


def _is_run_stop(text: str, obj: Callable[[], Any], semantics: RcpSemantics) -> bool:
    return "run_stop" in text and (not semantics.run_stop_key_checked or obj()["key"] == "run_stop")


def _read_per_file(pairs, semantics: RcpSemantics, ruleset: str, use_train_samples: bool) -> RunConvergence:
    """`read_submission_file` (3.0+)."""
    not_converged, value, bs, benchmark = True, NOT_CONVERGED, -1, None
    conv: Any = _UNSET
    sd_results: dict[Any, dict[Any, Any]] = {}
    for text, obj in pairs:
        if "global_batch_size" in text:
            bs = obj()["value"]
        if "submission_benchmark" in text:
            benchmark = obj()["value"]
            if benchmark != "bert" and use_train_samples:
                use_train_samples = False
        is_eval = _is_eval(text, semantics, False)
        if semantics.stable_diffusion is not None and benchmark == semantics.stable_diffusion and is_eval:
            meta = obj()["metadata"]
            step, metric = meta[semantics.step_unit(ruleset)], meta["metric"]
            sd_results.setdefault(step, {})[metric] = obj()["value"]
        elif benchmark in semantics.samples_count_benchmarks and is_eval:
            conv = obj()["metadata"]["samples_count"]
            obj()["value"]  # noqa: B018 - read by the checker: a line without it fails
        elif not use_train_samples and is_eval:
            conv = round(obj()["metadata"]["epoch_num"], 3)
        elif use_train_samples and "train_samples" in text:
            conv = obj()["value"]
        if _is_run_stop(text, obj, semantics):
            if obj()["metadata"]["status"] == "success":
                if semantics.stable_diffusion is not None and benchmark == semantics.stable_diffusion:
                    conv = min(step for step, result in sd_results.items() if _sd_passes(result, semantics))
                if conv is _UNSET:
                    raise ValueError("UnboundLocalError: conv_epoch read before any eval line")
                not_converged, value = False, conv
            else:
                not_converged, value = True, NOT_CONVERGED
    return RunConvergence(bs, benchmark, not not_converged, value)


def _sd_passes(result: Mapping[Any, Any], semantics: RcpSemantics) -> bool:
    """The stable-diffusion thresholds, short-circuited in order as the checker's `and` is."""
    return all(result[metric] <= threshold if op == "<=" else result[metric] >= threshold
               for metric, op, threshold in semantics.sd_criteria)


def _read_pass(pairs, semantics: RcpSemantics, benchmark: str | None, bert_train_samples: bool) -> RunConvergence:
    """One log's share of the single pass older releases make over a folder (`get_submission_epochs`)."""
    use_train_samples = benchmark == "bert" and bert_train_samples
    use_eval_error = semantics.eval_lines == "error_if_any" and any("eval_error" in text for text, _ in pairs)
    bs, conv, stops = -1, None, []
    for text, obj in pairs:
        if "global_batch_size" in text:
            bs = obj()["value"]
        if not use_train_samples and _is_eval(text, semantics, use_eval_error):
            conv = round(obj()["metadata"]["epoch_num"], 3)
        if use_train_samples and "train_samples" in text:
            conv = obj()["value"]
        if _is_run_stop(text, obj, semantics):
            success = obj()["metadata"]["status"] == "success"
            stops.append((success, conv if success else NOT_CONVERGED))
    converged = bool(stops) and all(s for s, _ in stops)
    value = stops[-1][1] if stops and stops[-1][1] is not None else NOT_CONVERGED
    return RunConvergence(bs, benchmark, converged, value, tuple(stops), conv)


# --------------------------------------------------------------------------------------------------
# the verdict of a result folder

LABELS = {"RCP found": "Fail", "RCP Interpolation": "Interp. Fail", "Cannot find any RCPs": "No RCP"}


@dataclass(frozen=True)
class RcpVerdict:
    """The checker's verdict on one result folder and what the summarizer prints for it.

    passed/message: `check_directory`'s (None and the error when it raises); label: the summarizer's RCP
    column ('Pass', 'Fail', 'Interp. Fail', 'Missing', 'No RCP', 'Unknown state'; None: left empty);
    norm_factor: the rcp_score_norm (the factor even where the release only wrote it to scaling.json);
    scaling_written: what `set_scaling=True` writes into scaling.json (None: nothing written);
    scaling_deleted: an existing scaling.json is deleted (5.1+, when the result is evaluated and none is
    written); gbs, samples_to_converge: the summarizer's figures (None: left empty)."""

    passed: bool | None
    message: str
    label: str | None
    norm_factor: float
    scaling_written: float | None
    scaling_deleted: bool
    gbs: float | None
    samples_to_converge: float | None
    benchmark: str | None = None
    record: RcpRecord | None = None  # the RCP the submission was compared with
    mean_epochs: float | None = None  # the submission's olympic mean
    error: str | None = None


def _label(passed: bool, message: str) -> str:
    if passed:
        return "Pass"
    if message in LABELS:
        return LABELS[message]
    return "Missing" if "Missing" in message else "Unknown state"


def _combine(runs: Sequence[RunConvergence], semantics: RcpSemantics) -> tuple[Any, list | None, str | None]:
    """`get_submission_epochs`: (batch size, the runs' values or None, benchmark); RcpError where it raises."""
    for run in runs:
        if run.error:
            raise RcpError(run.error)
    if semantics.per_file_reader:
        return _combine_per_file(runs, semantics)
    return _combine_pass(runs, semantics)


def _combine_per_file(runs: Sequence[RunConvergence], semantics: RcpSemantics):
    bs, benchmark, values, not_converged = -1, None, [], 0
    for run in runs:
        values.append(run.value)
        not_converged += 0 if run.converged else 1
        if bs == -1:
            bs = run.gbs
        elif run.gbs != bs:
            return -1, None, None
        if benchmark is None:
            benchmark = run.benchmark
        elif run.benchmark != benchmark:
            return -1, None, None
    if not_converged > semantics.not_converged_allowed(benchmark):
        return bs, None, benchmark
    return bs, values, benchmark


def _combine_pass(runs: Sequence[RunConvergence], semantics: RcpSemantics):
    bs, carry, values, not_converged = -1, None, [], 0
    benchmark = runs[0].benchmark if runs else None
    for run in runs:
        for success, value in run.stops:
            if not success:
                values.append(NOT_CONVERGED)
                not_converged += 1
                continue
            value = value if value is not None else carry
            if value is None:
                raise RcpError("UnboundLocalError: conv_epoch read before any eval line")
            values.append(value)
        if run.last_value is not None:
            carry = run.last_value
        if run.gbs != -1:
            bs = run.gbs
    if not_converged > semantics.not_converged_allowed(benchmark):
        return bs, None, benchmark
    return bs, values, benchmark


@dataclass
class _Evaluation:
    passed: bool
    norm: float
    mean: float
    written: float | None
    record: RcpRecord


def _evaluate(record: RcpRecord, values: list, tables: RcpTables, benchmark: str | None,
              set_scaling: bool) -> _Evaluation:
    """`_eval_submission_record`: the olympic mean of the runs against the record's minimum mean."""
    sem = tables.semantics
    for offset in sem.speedup_offsets:
        if offset.applies(benchmark, tables.ruleset):
            record = record.adjusted(_fdiv(record.mean, record.min_epochs - offset.offset))
    ordered = sorted(values)
    rejected = sem.rejected_for(record.benchmark)
    mean = np_mean(ordered[rejected:len(ordered) - rejected])
    norm = _fdiv(record.mean, mean)
    norm = 1.0 if norm < 1 else norm
    passed = mean >= _fdiv(record.mean, record.max_speedup)
    written = norm if passed and mean < record.mean and sem.norm_factor and set_scaling else None
    return _Evaluation(passed, norm if sem.norm_factor else 1.0, mean, written, record)


def _summarizer_figures(bs, values: list | None) -> tuple[float | None, float | None]:
    """GBS and samples_to_converge as the summarizer prints them: the mean of the sorted values without
    the fastest and the slowest (when there are at least 3), whatever the benchmark."""
    try:
        gbs = float(bs)
    except (TypeError, ValueError):
        gbs = None
    try:
        ordered = sorted(values) if values is not None else []
    except TypeError:
        return gbs, None
    return gbs, np_mean(ordered[1:-1]) if len(ordered) >= 3 else None


def _unevaluated(passed: bool | None, message: str, benchmark: str | None, gbs: float | None = None,
                 samples: float | None = None, error: bool = False) -> RcpVerdict:
    """A verdict reached before any RCP is compared: nothing normalized, scaling.json untouched."""
    label = None if error else _label(bool(passed), message)
    return RcpVerdict(passed=passed, message=message, label=label, norm_factor=1.0, scaling_written=None,
                      scaling_deleted=False, gbs=gbs, samples_to_converge=samples, benchmark=benchmark,
                      error=message if error else None)


def check_result(runs: Sequence[RunConvergence], tables: RcpTables, *, rcp_pass: str = "pruned_rcps",
                 set_scaling: bool = True, benchmark_folder: str | None = None) -> RcpVerdict:
    """The verdict of `check_directory` on a folder whose logs read as `runs` (in the folder's order:
    the batch-size and benchmark checks depend on it), with the RCPs of `tables`. `benchmark_folder`:
    the folder's name, the benchmark of releases before 3.0 (else taken from the runs' hint)."""
    sem = tables.semantics
    benchmark: str | None = None
    try:
        bs, values, benchmark = _combine(runs, sem)
        if not sem.benchmark_from_log:
            benchmark = benchmark_folder if benchmark_folder is not None else benchmark
        data = tables.data(benchmark)
    except RcpError as exc:
        return _unevaluated(None, str(exc), benchmark, error=True)
    gbs, samples = _summarizer_figures(bs, values)
    if bs == -1:
        return _unevaluated(False, "Could not detect global_batch_size", benchmark, gbs, samples)
    if values is None:
        return _unevaluated(False, "Insufficient convergence", benchmark, gbs)
    try:
        passed, message, evaluation = _decide(bs, values, tables, data, benchmark, rcp_pass, set_scaling)
    except (TypeError, KeyError, ValueError) as exc:
        return _unevaluated(None, f"{type(exc).__name__}: {exc}", benchmark, error=True)
    if evaluation is None:
        return _unevaluated(passed, message, benchmark, gbs, samples)
    return RcpVerdict(
        passed=passed,
        message=message,
        label=_label(passed, message),
        norm_factor=evaluation.norm,
        scaling_written=evaluation.written,
        scaling_deleted=evaluation.written is None and sem.resets_scaling and set_scaling,
        gbs=gbs,
        samples_to_converge=samples,
        benchmark=benchmark,
        record=evaluation.record,
        mean_epochs=evaluation.mean,
    )


def _decide(bs, values: list, tables: RcpTables, data: _Data, benchmark: str | None, rcp_pass: str,
            set_scaling: bool) -> tuple[bool, str, _Evaluation | None]:
    """check_directory's branches: the RCP of the batch size, an interpolation between the nearest batch
    sizes below and above, or the smallest RCP when the batch size is below every RCP."""
    sem = tables.semantics
    chosen = data.pruned if sem.prune_key is not None and rcp_pass == "pruned_rcps" else data.full
    if sem.prune_key is not None and rcp_pass not in ("pruned_rcps", "full_rcps"):
        raise ValueError(f"unknown rcp_pass {rcp_pass!r}")
    records = [r for r in chosen.values() if sem.benchmark_from_log or r.benchmark == benchmark]
    found = next((r for r in records if r.bs == bs), None)
    if found is not None:
        evaluation = _evaluate(found, values, tables, benchmark, set_scaling)
        return evaluation.passed, "RCP found", evaluation
    low = _nearest(records, lambda r, best: bs > r.bs > best, 0)
    high = _nearest(records, lambda r, best: bs < r.bs < best, 1e9)
    missing = f"Missing RCP, please submit RCP with BS = {bs}"
    if low is not None and high is not None:
        interp = tables.interpolate(benchmark, bs, low, high, partial(sem.runs, tables.usage, benchmark))
        evaluation = _evaluate(interp, values, tables, benchmark, set_scaling)
        return evaluation.passed, "RCP Interpolation", evaluation
    if low is not None:
        return False, missing, None
    if high is not None:
        smallest = _nearest(records, lambda r, best: r.bs < best, 1e9)
        evaluation = _evaluate(smallest, values, tables, benchmark, set_scaling)
        message = "RCP not found but slower convergence on smaller batch size" if evaluation.passed else missing
        return evaluation.passed, message, evaluation
    return False, "Cannot find any RCPs", None


def _nearest(records: Sequence[RcpRecord], better: Callable[[RcpRecord, Any], bool], start) -> RcpRecord | None:
    """The checker's `_find_top_min_rcp` / `_find_bottom_max_rcp` / `_find_min_rcp`: the first record
    strictly better than the best so far, starting from its sentinel (0, or 1e9)."""
    best, chosen = start, None
    for record in records:
        if better(record, best):
            best, chosen = record.bs, record
    return chosen


# --------------------------------------------------------------------------------------------------
# a round's release

@dataclass(frozen=True)
class RcpRules:
    """The RCP checker of the release that scores a round: its semantics, the ruleset it checks against
    ('6.0.0') and its RCP files."""

    semantics: RcpSemantics
    usage: str
    ruleset: str
    files: Mapping[str, str]
    release: str  # the ref, for the record of what judged a result

    def tables(self) -> RcpTables:
        return rcp_tables(self.files, self.usage, self.ruleset, self.semantics)


def rcp_rules(rcp_files: Mapping[str, str], checker_source: str, usage: str, folder: str,
              release: str) -> RcpRules | None:
    """The release's RCP checker for a ruleset folder (`training_6.0.0`), or None when the release has no RCP
    checker (before 1.0) or one these semantics cannot express (RcpSemantics.unsupported)."""
    if not checker_source:
        return None
    semantics = RcpSemantics.from_checker_source(checker_source)
    found = re.search(r"(\d+\.\d+\.\d+)$", folder)
    if not semantics.supported or found is None:
        return None
    return RcpRules(semantics, usage, found.group(1), dict(rcp_files), release)
