"""The official compliance rules, evaluated fast, and never executed.

Rule files (YAML, one folder per ruleset; see `rules.py` for where they come from) are read as data;
their snippets are checked by `rule_language` and interpreted by `rule_interpreter` (no `eval`, no `exec`), and evaluated
with the semantics of the checker release that goes with them (`CheckerSemantics`):
the same per-config state, the same overwriting of messages when a later config redefines a key,
the same occurrence requirements, and the differences between releases (which lines run a key's
checks, AT_LEAST(n), FIRST_CHECK, the 1.1 weights-initialization warnings). What makes the official
checker slow is re-reading YAML and re-parsing the log for every file; here each config is loaded
and its snippets compiled (into closures) once per process, and a log is parsed once.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import yaml

from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.rule_interpreter import Scope, compile_tree
from pipelines.lib.mlperf.rule_language import RuleLanguageError, allow_callable, check_names, parse
from pipelines.lib.mlperf.rules import RulesError, RuleSet

_Loader = getattr(yaml, "CBaseLoader", yaml.BaseLoader)  # BaseLoader: every scalar is a string, as upstream


def _is_integer(value):
    return abs(round(value) - value) < 0.00001


allow_callable(_is_integer)


def _as_list(tests):
    return tests if isinstance(tests, list) else [tests]


@dataclass
class _KeyRule:
    name: str
    req: str | None
    pre: object = None
    checks: list = field(default_factory=list)
    post: object = None
    first_checks: list = field(default_factory=list)
    at_least_one_check: object = None
    at_least_one_source: str = ""


@dataclass
class _Config:
    begin: object
    keys: dict[str, _KeyRule]
    end_pre: object
    end_checks: list


def load_config(ruleset: RuleSet, relative_path: str) -> _Config | None:
    """One config file of the ruleset, compiled once per process and text (_compile_config); None when the
    ruleset has no such file."""
    text = ruleset.config_text(relative_path)
    return None if text is None else _compile_config(relative_path, text)


def validate_ruleset(ruleset: RuleSet) -> None:
    """Check every snippet of every rule file against the rule language now, so that a ruleset holding
    anything else is refused whole before a single log is judged by it (RulesError naming the file and
    the construct). Files that are not YAML stay as upstream has them: they fail when a log uses them."""
    for name, _ in ruleset.files:
        try:
            load_config(ruleset, name)
        except RuleLanguageError as exc:
            raise RulesError(f"rules {ruleset.ref}: {exc}: the ruleset is not used") from None
        except yaml.YAMLError:
            pass


# Compiling depends on the file's name and text alone: a file another ruleset already had (a round's published
# rules and today's share most files; every release carries the older versions' files) is compiled once.
@functools.cache
def _compile_config(relative_path: str, text: str) -> _Config:
    records = yaml.load(text, Loader=_Loader) or []
    trees = []

    def snippet(code, mode):
        tree = parse(code, mode, relative_path)
        trees.append(tree)
        return tree

    def ev(code):
        return snippet(code, "eval")

    def ex(code):
        return snippet(code, "exec") if code is not None else None

    begin, end_pre, end_checks, keys = None, None, [], {}
    for record in records:
        kind = list(record)[0]
        body = record[kind]
        if kind == "BEGIN":
            begin = ex(body["CODE"])
        elif kind == "END":
            end_pre = ex(body.get("PRE"))
            end_checks = [(t, ev(t)) for t in _as_list(body["CHECK"])] if "CHECK" in body else []
        elif kind == "KEY":
            rule = _KeyRule(body["NAME"], body.get("REQ"))
            rule.pre = ex(body.get("PRE"))
            rule.post = ex(body.get("POST"))
            if "CHECK" in body:
                rule.checks = [(t, ev(t)) for t in _as_list(body["CHECK"])]
            if "FIRST_CHECK" in body:
                rule.first_checks = [(t, ev(t)) for t in _as_list(body["FIRST_CHECK"])]
            if "ATLEAST_ONE_CHECK" in body:
                rule.at_least_one_source = body["ATLEAST_ONE_CHECK"]
                rule.at_least_one_check = ev(body["ATLEAST_ONE_CHECK"])
            keys[rule.name] = rule
    check_names(trees, relative_path)
    compiled = {id(tree): compile_tree(tree) for tree in trees}

    def run(tree):
        return None if tree is None else compiled[id(tree)]

    for rule in keys.values():
        rule.pre, rule.post = run(rule.pre), run(rule.post)
        rule.checks = [(t, run(c)) for t, c in rule.checks]
        rule.first_checks = [(t, run(c)) for t, c in rule.first_checks]
        rule.at_least_one_check = run(rule.at_least_one_check)
    return _Config(run(begin), keys, run(end_pre), [(t, run(c)) for t, c in end_checks])


@dataclass
class ComplianceResult:
    passed: bool
    messages: list[str]
    configs: frozenset[str] = frozenset()  # the rule files that were run (or looked for)

    @property
    def reason(self) -> str | None:
        return None if self.passed else self.messages[0]


class _Run:
    """One check of one log: the state `ComplianceChecker` keeps between configs."""

    def __init__(self, ruleset: RuleSet):
        self.ruleset = ruleset
        self.semantics = ruleset.semantics
        self.overwritable: dict[str, str] = {}
        self.fixed: list[str] = []
        self.queue: list[str] = []
        self.configs: set[str] = set()

    def message(self, text: str, key: str | None = None):
        if key:
            self.overwritable[key] = text
        else:
            self.fixed.append(text)

    def check(self, line: LogLine, tests, state):
        scope = Scope(state, {"ll": line, "v": line.value})
        for source, code in tests:
            try:
                if not code(scope):
                    self.message(f"CHECK for '{line.key}' failed in line {line.lineno}: {source.strip()}", line.key)
            except Exception:
                self.message(f"Failed executing CHECK code for '{line.key}' in line {line.lineno}: {source.strip()}", line.key)

    def execute(self, line: LogLine, code, state, action):
        if code is None:
            return
        try:
            code(Scope(state, {"ll": line, "v": line.value}))
        except Exception:
            self.message(f"Failed executing {action} code for '{line.key}' in line {line.lineno}", line.key)

    def run_config(self, lines: list[LogLine], relative_path: str):
        """One config file over the log (`lines` may be extended by the config's BEGIN code)."""
        self.configs.add(relative_path)
        config = load_config(self.ruleset, relative_path)
        if config is None:
            self.message(f"Could not find config file: {relative_path}")
            return
        state = {"enqueue_config": self.queue.append, "s": {}, "is_integer": _is_integer, "math": math}
        if config.begin is not None:
            if self.semantics.begin_sees_loglines:
                config.begin(Scope(state, {"loglines": lines}))
            else:  # releases before 3.1 ran BEGIN with the config state only
                config.begin(Scope(state, None))
        rules = config.keys
        reported: dict[str, list] = {k: [] for k in rules}
        for key in rules:  # a later config's rules replace earlier messages for the same key
            self.overwritable.pop(key, None)

        at_least_one: dict[str, int] = {}
        submission_seen: set[str] = set()
        first_seen: set[str] = set()
        get_rule, message = rules.get, self.message
        for line in lines:
            rule = get_rule(line.key)
            if rule is None:
                continue
            try:
                reported[line.key].append(line.value["value"])
            except Exception:
                continue  # upstream treats a value it cannot index as an unknown key
            if line.key not in submission_seen:  # stays empty before 2.1: every line runs the checks
                # self.execute and self.check, inlined: this loop runs for most lines of every log
                # PRE, the CHECKs and POST each get their own local names, as upstream's exec/eval calls do
                if rule.pre is not None:
                    try:
                        rule.pre(Scope(state, {"ll": line, "v": line.value}))
                    except Exception:
                        message(f"Failed executing PRE code for '{line.key}' in line {line.lineno}", line.key)
                if rule.checks:
                    scope = Scope(state, {"ll": line, "v": line.value})
                    for source, code in rule.checks:
                        try:
                            if not code(scope):
                                message(f"CHECK for '{line.key}' failed in line {line.lineno}: {source.strip()}", line.key)
                        except Exception:
                            message(f"Failed executing CHECK code for '{line.key}' in line {line.lineno}: {source.strip()}",
                                    line.key)
                if rule.post is not None:
                    try:
                        rule.post(Scope(state, {"ll": line, "v": line.value}))
                    except Exception:
                        message(f"Failed executing POST code for '{line.key}' in line {line.lineno}", line.key)
            if rule.first_checks and self.semantics.first_check and line.key not in first_seen:
                first_seen.add(line.key)
                self.check(line, rule.first_checks, state)
            if rule.at_least_one_check is not None:
                at_least_one.setdefault(line.key, 0)
                try:
                    passed = rule.at_least_one_check(Scope(state, {"ll": line, "v": line.value}))
                except Exception:  # upstream crashes here; a failed check is the useful answer
                    passed = False
                at_least_one[line.key] += bool(passed)
            if "submission_" in line.key and self.semantics.checks_submission_keys_once:
                submission_seen.add(line.key)
        for name, count in at_least_one.items():
            if count == 0:
                self.message(f"Failed checks for {name} : {rules[name].at_least_one_source}")

        alternatives = set()
        for name, rule in rules.items():
            req = (rule.req or "").strip()
            values = reported[name]
            if not req or (req == "OPTIONAL" and not values):
                continue
            if req == "EXACTLY_ONE" and len(values) != 1:
                if values and all(v == values[0] for v in values):
                    pass  # upstream: only a warning, and warnings are silenced when scoring
                else:
                    self.message(f"Required EXACTLY_ONE occurrence of '{name}' but found {len(values)}", name)
            if req == "AT_LEAST_ONE" and not values:
                if name == "weights_initialization" and self.semantics.weights_init_warnings:
                    pass  # 1.1: "Failed weights initialization check (can be ignored for 1.1.0)", a warning
                else:
                    self.message(f"Required AT_LEAST_ONE occurrence of '{name}' but found 0", name)
            if req.startswith("AT_LEAST(") and self.semantics.at_least_n and len(values) < int(req[len("AT_LEAST("):-1]):
                self.message(f"Required {req} occurrence of '{name}' but found {len(values)}", name)
            if req.startswith("AT_LEAST_ONE_OR"):
                alts = [s.strip() for s in req[len("AT_LEAST_ONE_OR("):-1].split(",")]
                alternatives.add(tuple(sorted({name, *alts})))
        for alts in sorted(alternatives):
            if not any(reported.get(k) for k in alts):
                self.message("Required AT_LEAST_ONE occurrence of " + " or ".join(f"'{k}'" for k in alts))

        if config.end_pre is not None:
            config.end_pre(Scope(state, None))
        for source, code in config.end_checks:
            try:
                if not code(Scope(state, None)):
                    if self.semantics.weights_init_warnings and _is_weights_init_test(source):
                        continue  # 1.1: a warning, not a failure
                    self.message(f"failed test: {source.strip()}")
            except Exception:
                self.message(f"Failed executing END CHECK code: {source.strip()}")


def _is_weights_init_test(source: str) -> bool:
    words = source.strip().split()
    return bool(words) and words[0] == "sorted(s['initialized_tensors'])"


def check_log(lines: list[LogLine], parse_errors: int, ruleset: RuleSet) -> ComplianceResult:
    """Does this log pass the ruleset's compliance rules? Same verdict as that release's checker."""
    run = _Run(ruleset)
    if parse_errors:
        run.message("Log lines had parsing errors.")
    if not lines:
        run.message("No log lines detected")
    run.queue.append(ruleset.entry)
    lines = list(lines)  # configs may append virtual lines; keep the caller's list intact
    while run.queue:
        run.run_config(lines, run.queue.pop(0))
    messages = run.fixed + list(run.overwritable.values())
    return ComplianceResult(not messages, messages, frozenset(run.configs))
