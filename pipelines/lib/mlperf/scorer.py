"""Score one result log: whether it counts toward its result under the round's own rules and today's,
why not, its events and facts, its precision and what the RCP checker reads of it. Plain functions that run
in the scoring pool's worker processes."""

from __future__ import annotations

import re
from functools import partial

from pipelines.lib.io.numbers import number_or_none
from pipelines.lib.mlperf import compliance
from pipelines.lib.mlperf.archive import result_keys
from pipelines.lib.mlperf.mllog import MLL, MLLOG, MLP05, format_for_round, normalize_v05, parse_log
from pipelines.lib.mlperf.precision import describe_statements, log_precision, stated_precisions, statement_precision
from pipelines.lib.mlperf.rcp_convergence import run_convergence
from pipelines.lib.mlperf.round_rules import RoundRules
from pipelines.lib.mlperf.rules import RuleSet
from pipelines.lib.mlperf.runs import run_facts
from pipelines.lib.reference.events import EVENT_KEYS

EVENT_COLUMNS = ("run_file", "lineno", "time_ms", "key", "value", "epoch_num", "first_epoch_num",
                 "epoch_count", "samples_count", "status")


_number = partial(number_or_none, text=False)  # event values: numbers only, never text


def add_events(events: dict[str, list], run_file: str, lines) -> None:
    (add_file, add_lineno, add_time, add_key, add_value, add_epoch, add_first_epoch, add_epoch_count,
     add_samples, add_status) = (events[c].append for c in EVENT_COLUMNS)
    seen_init_start = False
    for line in lines:
        key = line.key
        if key not in EVENT_KEYS:
            continue
        if key == "init_start":  # every rank logs it; the first one starts the timeline
            if seen_init_start:
                continue
            seen_init_start = True
        value = line.value if isinstance(line.value, dict) else {}
        md = value.get("metadata") if isinstance(value.get("metadata"), dict) else {}
        add_file(run_file)
        add_lineno(line.lineno)
        add_time(line.time_ms)
        add_key(key)
        add_value(_number(value.get("value")))
        add_epoch(_number(md.get("epoch_num")))
        add_first_epoch(_number(md.get("first_epoch_num")))
        add_epoch_count(_number(md.get("epoch_count")))
        add_samples(_number(md.get("samples_count")))
        status = md.get("status")
        add_status(status if isinstance(status, str) else None)


def _drop_reason(lines, parse_errors: int, ruleset: RuleSet | None, facts) -> tuple[str | None, frozenset[str]]:
    """Why a run does not count toward the score under `ruleset` (None if it counts), and the
    rule files that decided it."""
    configs: frozenset[str] = frozenset()
    messages: list[str] = []
    if ruleset is not None:
        verdict = compliance.check_log(lines, parse_errors, ruleset)
        passed, reason, configs, messages = verdict.passed, verdict.reason, verdict.configs, verdict.messages
    else:  # no official rules for this generation: the run must start, stop and succeed
        passed, reason = _basic_rules(lines, parse_errors)
    if not passed:
        # a benchmark the rules have no file for fails other checks too: that is the cause to name
        unknown = next((found for m in messages
                        if (found := unknown_benchmark_reason(m, ruleset, facts.benchmark_logged))), None)
        return unknown or f"compliance: {reason}", configs
    if facts.run_start_ms is None:
        return "run_start not recorded", configs
    if facts.run_stop_ms is None:
        return "run_stop not recorded", configs
    return None, configs


_MISSING_BENCHMARK_RULES = re.compile(r"^Could not find config file: ([\w.]+)/(closed|open)_(\w+)\.yaml$")


# A membership CHECK on submission_benchmark that fails: the rules list their benchmarks and this one is not among them
_BENCHMARK_NOT_LISTED = re.compile(r"^CHECK for 'submission_benchmark' failed in line \d+: v\['value'\] in \[")


UNKNOWN_BENCHMARK = "rules: no rules for benchmark"  # how every such drop reason starts (int_result_score)


def unknown_benchmark_reason(message: str | None, ruleset: RuleSet | None, benchmark: str | None = None) -> str | None:
    """A run dropped because its ruleset has no rules for its benchmark: no rule file for it (a benchmark the
    rules do not know, or one they retired: an older folder of the same release still has it), or a file but
    no place in the list of benchmarks the rules' submission_benchmark check allows."""
    if ruleset is None:
        return None
    if found := _MISSING_BENCHMARK_RULES.match(message or ""):
        folder, division, benchmark = found.groups()
        why = None
    elif benchmark and _BENCHMARK_NOT_LISTED.match(message or ""):
        folder, division = ruleset.folder, None
        why = "not among the benchmarks its submission_benchmark check allows"
    else:
        return None
    older = _folders_with_rules(ruleset, benchmark, division, but=folder)
    retired = f"retired: last in {older[-1]}" if older else None
    why = "; ".join(filter(None, (why, retired))) or "a benchmark these rules do not know"
    return f"{UNKNOWN_BENCHMARK} {benchmark!r} in {folder} of {ruleset.ref} ({why})"


def _folders_with_rules(ruleset: RuleSet, benchmark: str, division: str | None, but: str) -> list[str]:
    """The folders of the release older than `but`, oldest first, with a rule file for the benchmark."""
    def version(name: str) -> list[int]:
        return [int(n) for n in re.findall(r"\d+", name)]

    names = tuple(f"/{d}_{benchmark}.yaml" for d in ((division,) if division else ("closed", "open")))
    return sorted({name.split("/", 1)[0] for name, _ in ruleset.files
                   if name.endswith(names) and version(name.split("/", 1)[0]) < version(but)}, key=version)


def score_run(data: bytes, round_version: str, rules: RoundRules, events: dict[str, list] | None = None,
              run_file: str = "") -> dict:
    """Everything the warehouse keeps about one result file, and whether it counts toward the score
    as published (the round's own rules) and under today's rules."""
    fmt = format_for_round(round_version)
    log = parse_log(data, fmt)
    lines = normalize_v05(log.lines) if fmt is MLP05 else log.lines
    facts = run_facts(lines)
    drop_reason, configs = _drop_reason(lines, len(log.errors), rules.published, facts)
    if rules.current_missing:  # today's package ships no rules of the round: no verdict, and why
        current_drop_reason = f"rules: {rules.current_missing}"
    elif rules.same_verdict(configs):  # the same rule files and checker behaviour decided
        current_drop_reason = drop_reason
    else:
        current_drop_reason, _ = _drop_reason(lines, len(log.errors), rules.current, facts)
    statements = stated_precisions(lines)  # the 6.0 rules' keys win over configuration lines
    precision_logged, precision_evidence, precision_unmapped = statement_precision(statements)
    if precision_logged is None and precision_unmapped is None:
        precision_logged, precision_evidence = log_precision(data)
    if events is not None:
        add_events(events, run_file, lines)
    convergence = None
    if rules.rcp is not None:
        keys = result_keys(run_file.split("/")) if run_file else None
        convergence = run_convergence(lines, rules.rcp.semantics, rules.rcp.ruleset,
                                      benchmark_hint=keys[2][0] if keys and keys[2] else None)
    minutes = None
    if facts.run_start_ms is not None and facts.run_stop_ms is not None:
        minutes = (facts.run_stop_ms - facts.run_start_ms) / 60.0 / 1000.0
    row = dict(vars(facts))  # asdict without its deep copy: every field is a number, a string or None
    row.update(precision_logged=precision_logged, precision_evidence=precision_evidence,
               precision_statements=describe_statements(statements), precision_statement_unmapped=precision_unmapped)
    row.update(
        passed_compliance=not (drop_reason or "").startswith("compliance:"),
        drop_reason=drop_reason,
        current_rules_drop_reason=current_drop_reason,
        ruleset=rules.published.folder if rules.published else None,
        ruleset_ref=rules.published.ref if rules.published else None,
        time_to_train_minutes=minutes,
        log_lines=log.total_lines,
        mllog_lines=len(log.lines),
        parse_errors=len(log.errors),
        first_parse_error=(log.errors[0][1] + ": " + log.errors[0][0][:300]) if log.errors else None,
    )
    if convergence is not None:
        row[RCP_READING] = convergence  # the parent takes it out: it judges whole results (rcp_verdicts)
    return row


RCP_READING = "_rcp_reading"


def _basic_rules(lines, parse_errors: int) -> tuple[bool, str | None]:
    if parse_errors:
        return False, "Log lines had parsing errors."
    stops = [line for line in lines if line.key == "run_stop"]
    if not any(line.key == "run_start" for line in lines):
        return False, "Required EXACTLY_ONE occurrence of 'run_start' but found 0"
    if not stops:
        return False, "Required EXACTLY_ONE occurrence of 'run_stop' but found 0"
    if stops[0].value.get("metadata", {}).get("status") != "success":
        return False, "run did not reach its target (run_stop status is not success)"
    return True, None


# What a result log's own lines declare: the token of its logging generation. MLLOG lines (v0.7+)
# carry no round; `:::MLPv0.5.0` names it; `:::MLL` is v0.6's. (`:::MLL` is a prefix of `:::MLLOG`.)
LOG_FORMATS = {MLLOG: "MLLOG", MLP05: "MLPv0.5.0", MLL: "MLL"}


def log_format(data: bytes) -> str | None:
    for fmt, name in LOG_FORMATS.items():
        if fmt.token in data:
            return name
    return None
