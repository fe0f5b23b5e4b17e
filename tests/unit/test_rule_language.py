"""The rule language: real rule snippets evaluate as Python evaluates them; nothing else runs."""

from __future__ import annotations

import math
import time
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.lib.mlperf import rule_interpreter as ri
from pipelines.lib.mlperf import rule_language as rl
from pipelines.lib.mlperf.mllog import LogLine

_FRESH = object()


def run(source: str, mode: str = "eval", state: dict | None = None, local=_FRESH):
    """Evaluate as the checker does: `local` None is exec(code, state) (locals are the state)."""
    state = {"s": {}, "math": math, "enqueue_config": [].append, "is_integer": lambda v: float(v).is_integer()} \
        if state is None else state
    return ri.compile_snippet(source, mode, "test.yaml")(ri.Scope(state, {} if local is _FRESH else local))


def line(key="eval_accuracy", value=None, ts=10.0) -> LogLine:
    return LogLine("", ts, key, value if value is not None else {"value": 0.5, "metadata": {"epoch_num": 3}}, 7, ts)


REAL = [  # snippets of the shared rulesets, with the values they see
    ("('epoch_num' in v['metadata']) | ('samples_count' in v['metadata'])", {"v": {"metadata": {"epoch_num": 1}}}),
    (" isinstance(v['value'], int) ", {"v": {"value": 3}}),
    (" type(v['value'])==bool ", {"v": {"value": True}}),
    ("v['value'] >= 0.720 and v['value'] < 1.0", {"v": {"value": 0.73}}),
    ("math.isclose(v['value'], 2 ** math.floor(math.log2(v['value'])))", {"v": {"value": 256}}),
    ("'training_1.0.0/closed_{}.yaml'.format(v['value'].lower())", {"v": {"value": "BERT"}}),
    ("s['x'] if s.get('x') else max(1, len(sorted([3, 1])))", {}),
    ("abs(ll.timestamp - 4) < 1e-3 * -1 or not ll.key", {"ll": line()}),
]


@pytest.mark.parametrize("source,local", REAL)
def test_real_snippets_evaluate_as_python_does(source, local):
    state = {"s": {"x": 0}, "math": math}
    assert run(source, state=dict(state), local=dict(local)) == eval(source, dict(state), dict(local))  # noqa: S307


def test_statements_begin_blocks_and_scopes():
    state = {"s": {}}
    run("s.update({'init': False, 'n': 0})\nx = 1", "exec", state, None)  # BEGIN before 3.1: locals are state
    assert state["s"] == {"init": False, "n": 0} and state["x"] == 1
    local = {"ll": line(), "v": {"value": 2, "metadata": {}}}
    run("s['n'] += v['value']\nif s['n'] > 1:\n    s['big'] = True\nelse:\n    s['big'] = False", "exec", state, local)
    assert state["s"]["n"] == 2 and state["s"]["big"] is True and "x" not in local
    # the stable diffusion BEGIN block: copies of log lines, edited, appended
    lines = [line(value={"value": 1.0, "metadata": {"metric": "FID", "samples_count": 512}}),
             line(value={"value": 0.2, "metadata": {"metric": "CLIP", "samples_count": 512}}, ts=12.0)]
    code = (
        "from dataclasses import replace\nagg = {}\nfor line in loglines:\n"
        "    if line.key == 'eval_accuracy' and 'metric' in line.value['metadata']:\n"
        "        n = line.value['metadata']['samples_count']\n"
        "        if n not in agg:\n            new_line = replace(line)\n            new_line.key = 'aggregated'\n"
        "            new_line.value = {'value': {'samples_count': n}, 'metadata': {}}\n            agg[n] = new_line\n"
        "        agg[n].timestamp = max(line.timestamp, agg[n].timestamp)\n"
        "        agg[n].value['value'][line.value['metadata']['metric']] = line.value['value']\n"
        "loglines.extend(agg.values())")
    run(code, "exec", {"s": {}}, {"loglines": lines})
    assert len(lines) == 3 and lines[2].key == "aggregated" and lines[0].key == "eval_accuracy"
    assert lines[2].value["value"] == {"samples_count": 512, "FID": 1.0, "CLIP": 0.2} and lines[2].timestamp == 12.0


AUGMENTED = [  # `+=` and friends as Python runs them: in place where the value has an in-place form
    "t = s['tensors']\ns['tensors'] += ['w1']\ns['tensors'] += ('w2',)\nseen = len(t)",  # upstream's weights_initialization POST
    "t = s['tensors']\nt *= 2\nn = s['n']\nn += 1.5\nword = 'ab'\nword += 'c'",
    "u = s['names']\nu |= {'b'}\nu -= {'a'}\nflag = True\nflag += 1",
]


@pytest.mark.parametrize("source", AUGMENTED)
def test_augmented_assignments_act_in_place_as_python_does(source):
    def state():
        return {"s": {"tensors": ["w0"], "n": 1, "names": {"a"}}}
    ours, python = state(), state()
    ours_local, python_local = {}, {}
    run(source, "exec", ours, ours_local)
    exec(source, python, python_local)  # noqa: S102 - the reference semantics, on our own test text
    assert ours["s"] == python["s"] and ours_local == python_local


@pytest.mark.parametrize("source,what", [
    ("open('/tmp/x', 'w')", "name open"),
    ("__import__('os').system('true')", "name __import__|attribute .system"),
    ("v.__class__", "attribute .__class__"),
    ("().__class__.__bases__[0].__subclasses__()", "attribute .__"),
    ("(lambda: 1)()", "Lambda"),
    ("[x for x in s]", "ListComp"),
    ("getattr(v, 'x')", "name getattr"),
    ("eval('1')", "name eval"),
    ("exec('x = 1')", "name exec"),
    ("globals()", "name globals"),
    ("f'{v}'", "JoinedStr"),
    ("v.mro", "attribute .mro"),
    ("v['value'] is 3", "'is' compares with None, True or False only"),
])
def test_anything_outside_the_language_is_refused_before_it_runs(source, what):
    with pytest.raises(rl.RuleLanguageError, match=what):
        tree = rl.parse(source, "eval", "common.yaml")
        rl.check_names([tree], "common.yaml")


@pytest.mark.parametrize("source", [
    "import os", "from os import system", "def f():\n    pass", "while True:\n    pass", "with open('x') as f:\n    pass",
    "try:\n    x = 1\nexcept Exception:\n    pass", "class A:\n    pass", "global s", "del s", "ll.__dict__ = {}",
])
def test_statements_outside_the_language_are_refused(source):
    with pytest.raises(rl.RuleLanguageError):
        rl.parse(source, "exec", "common.yaml")


def test_runtime_guards_stop_what_a_static_check_cannot_see():
    with pytest.raises(rl.RuleLimitExceeded, match="format field"):
        run("'{0.__class__}'.format(v)", local={"v": 1})
    with pytest.raises(rl.RuleLimitExceeded, match="power"):
        run("10 ** 10 ** 8")
    with pytest.raises(rl.RuleLimitExceeded, match="too long"):
        run("'x' * 10 ** 9")
    with pytest.raises(rl.RuleLimitExceeded, match="not part of the rule language"):
        run("type(ll)('', 0, 'k', {}, 0, 0)", local={"ll": line()})  # a class is no function of the language
    with pytest.raises(rl.RuleLimitExceeded, match="type\\(\\) takes one argument"):
        run("type('X', (), {})")
    # a guard is no Exception: the checker's `except Exception` around a CHECK cannot swallow it
    assert not issubclass(rl.RuleLimitExceeded, Exception)


@pytest.mark.slow  # runs the rule interpreter to its 5,000,000-iteration loop budget
def test_nested_loops_stop_at_the_iteration_budget():
    with pytest.raises(rl.RuleLimitExceeded, match="looped more than"):
        run("for a in s['x']:\n    for b in s['x']:\n        for c in s['x']:\n            s['n'] = 1", "exec",
            {"s": {"x": list(range(200))}})


def test_the_scoring_deadline_stops_a_loop():
    ri.set_deadline(time.time() - 1)
    try:
        with pytest.raises(ri.RuleDeadline):
            run("for a in s['x']:\n    s['n'] = a", "exec", {"s": {"x": list(range(10_000))}})
    finally:
        ri.set_deadline(None)


# --- property tests: generated expressions evaluate as Python's eval evaluates them --------------------

_leaf = st.one_of(
    st.integers(-50, 50).map(str), st.floats(-1e3, 1e3, allow_nan=False).map(repr),
    st.sampled_from(["True", "False", "None", "'a'", "'bc'", "v['value']", "v['metadata']['epoch_num']",
                     "s['n']", "len(s)", "[1, 2]", "{'k': 1}"]),
)


def _combine(children):
    binary = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", " and ", " or ", " in ",
                              " not in ", "|", "&", "//"])
    return st.one_of(
        st.tuples(children, st.sampled_from([" is ", " is not "]), st.sampled_from(["None", "True", "False"])).map(
            lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(children, binary, children).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        st.tuples(st.sampled_from(["not ", "-", "+"]), children).map(lambda t: f"({t[0]}{t[1]})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["abs", "bool", "len", "str", "int", "float", "sorted", "max", "min", "type"]),
                  children).map(lambda t: f"{t[0]}({t[1]})"),
        st.tuples(children, children).map(lambda t: f"[{t[0]}, {t[1]}][0]"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} < {t[1]} <= {t[2]})"),
    )


expressions = st.recursive(_leaf, _combine, max_leaves=12)


def _outcome(function):
    try:
        return ("value", function())
    except Exception as exc:  # the checker turns any exception into a failed check: the type must agree
        return ("error", type(exc).__name__)


@settings(max_examples=400, deadline=None)
@given(expressions, st.sampled_from([0, 1, 2.5, "x", True, None]))
def test_generated_expressions_agree_with_python(source, value):
    state = {"s": {"n": 3}, "math": math}
    local = {"v": {"value": value, "metadata": {"epoch_num": 2}}}
    ours = _outcome(lambda: run(source, state={"s": {"n": 3}, "math": math}, local=dict(local)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)  # `x is 1`: Python warns, and evaluates it all the same
        python = _outcome(lambda: eval(source, dict(state), dict(local)))  # noqa: S307 - our own generated text
    if python[0] == "value" and isinstance(python[1], float) and math.isnan(python[1]):
        assert ours[0] == "value" and math.isnan(ours[1])
    else:
        assert ours == python, source


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(["__import__", "open", "eval", "exec", "compile", "getattr", "setattr", "globals", "vars",
                        "locals", "breakpoint", "input", "memoryview", "object", "__builtins__", "_secret"]),
       expressions)
def test_generated_uses_of_forbidden_names_are_refused(name, source):
    with pytest.raises(rl.RuleLanguageError):
        tree = rl.parse(f"{name}({source})", "eval", "common.yaml")
        rl.check_names([tree], "common.yaml")
