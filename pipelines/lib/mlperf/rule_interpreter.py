"""The rule language (`rule_language.py`) interpreted: a checked snippet compiled into a tree of closures.

`compile_snippet` / `compile_tree` turn a snippet that passed `rule_language.parse` into a function of a `Scope`
(exec/eval's namespaces) that evaluates it with Python's own operators on the same values. What a static check
cannot see is guarded while it runs: `for` loops share an iteration budget (`MAX_LOOP_ITERATIONS`), `**`, `*` and
`+` refuse results beyond `MAX_INT_BITS` / `MAX_SEQUENCE`, calls and attributes are checked by what they reach
(`RuleLimitExceeded`), and a loop stops once the round's scoring deadline has passed (`set_deadline`,
`RuleDeadline`). Plain functions, no Dagster.
"""

from __future__ import annotations

import ast
import math
import operator
import time
from collections.abc import Callable
from typing import Any

from pipelines.lib.mlperf.mllog import LogLine
from pipelines.lib.mlperf.rule_language import (
    BUILTINS,
    LOG_LINE_FIELDS,
    MATH_FUNCTIONS,
    RuleLanguageError,
    RuleLimitExceeded,
    SafeFormat,
    callable_allowed,
    copy_line,
    parse,
)

MAX_LOOP_ITERATIONS = 5_000_000  # per evaluation; a BEGIN block loops once over a log (≤ 10^6 lines)
MAX_SEQUENCE = 10_000_000  # characters or items a `*` or `+` may produce
MAX_INT_BITS = 100_000  # bits of an integer `**` may produce


class RuleDeadline(RuleLimitExceeded):
    """The round's scoring deadline passed while a rule was running."""


_DEADLINE: list[float | None] = [None]  # wall-clock time (time.time()) past which rules stop, per process


def set_deadline(deadline: float | None) -> None:
    """Rules evaluated in this process stop (RuleDeadline) once `deadline` (time.time()) has passed."""
    _DEADLINE[0] = deadline


def _attribute(obj: Evaluator, name: str) -> Evaluator:
    """`obj.name`, checked by what the name is: `format` of a string only (as `SafeFormat`), a math
    function of `math` only, anything else in ATTRIBUTES of any value."""
    if name == "format":
        def format_of(scope):
            value = obj(scope)
            if isinstance(value, str):
                return SafeFormat(value)
            raise RuleLimitExceeded("format is only called on a string in rules")
        return format_of
    if name in MATH_FUNCTIONS:
        def math_function(scope):
            value = obj(scope)
            if value is not math:
                raise AttributeError(name)
            return getattr(value, name)
        return math_function
    return lambda scope: getattr(obj(scope), name)


Evaluator = Callable[["Scope"], Any]


class Scope:
    """exec/eval's namespaces: names are looked up in `local`, then `state` (the globals), then the
    language's builtins; assignments go to `local` (which may be `state` itself, as upstream's BEGIN
    blocks before release 3.1 ran)."""

    __slots__ = ("local", "state", "iterations")

    def __init__(self, state: dict, local: dict | None):
        self.state = state
        self.local = state if local is None else local
        self.iterations = 0


def _name_loader(name: str) -> Evaluator:
    """Reads `name`: from the scope's local names, then its state (the globals), then the builtins."""
    def load(scope: Scope):
        local = scope.local
        if name in local:
            return local[name]
        state = scope.state
        if name in state:
            return state[name]
        if name in BUILTINS:
            return BUILTINS[name]
        raise NameError(f"name {name!r} is not defined")
    return load


def _guarded_pow(a, b):
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1:
        if b * max(abs(a).bit_length(), 1) > MAX_INT_BITS:
            raise RuleLimitExceeded("an integer power in a rule is too large")
    return a ** b


_NUMBERS = frozenset({int, float, bool})


def _sequence_length(value) -> int | None:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else None


def _check_repetition(a, b) -> None:
    for seq, times in ((a, b), (b, a)):
        n = _sequence_length(seq)
        if n is not None and isinstance(times, int) and n * times > MAX_SEQUENCE:
            raise RuleLimitExceeded("a repeated sequence in a rule is too long")


def _check_concatenation(a, b) -> None:
    n, m = _sequence_length(a), _sequence_length(b)
    if n is not None and m is not None and n + m > MAX_SEQUENCE:
        raise RuleLimitExceeded("a concatenation in a rule is too long")


def _guarded_mult(a, b):
    _check_repetition(a, b)
    return a * b


def _guarded_imult(a, b):
    _check_repetition(a, b)
    return operator.imul(a, b)


def _guarded_add(a, b):
    if type(a) in _NUMBERS:  # the common case (a counter): a number plus anything is no long sequence
        return a + b
    _check_concatenation(a, b)
    return a + b


def _guarded_iadd(a, b):
    if type(a) in _NUMBERS:
        return a + b
    _check_concatenation(a, b)
    return operator.iadd(a, b)


_BINARY = {
    ast.Add: _guarded_add, ast.Sub: operator.sub, ast.Mult: _guarded_mult, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: _guarded_pow, ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
}
# `x += y` is in place, as in Python: a list grows where it is (upstream's `s['tensors'] += [...]`), it is
# not copied on every line (quadratic in a log's lines), and every name bound to it sees the change.
_AUGMENTED = _BINARY | {ast.Add: _guarded_iadd, ast.Mult: _guarded_imult, ast.Sub: operator.isub,
                        ast.BitOr: operator.ior, ast.BitAnd: operator.iand}
_COMPARE = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_, ast.IsNot: operator.is_not,
}
_UNARY = {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}


def compile_snippet(source: str, mode: str, where: str) -> Evaluator:
    """A checked snippet as a function of a Scope: eval mode returns the expression's value, exec mode
    runs the statements."""
    return compile_tree(parse(source, mode, where))


def compile_tree(tree: ast.AST) -> Evaluator:
    if isinstance(tree, ast.Expression):
        return _expr(tree.body)
    body = [_stmt(s) for s in tree.body]

    def run(scope: Scope) -> None:
        for statement in body:
            statement(scope)
    return run


def _stmt(node: ast.stmt) -> Evaluator:
    if isinstance(node, ast.Expr):
        return _expr(node.value)
    if isinstance(node, ast.Assign):
        value = _expr(node.value)
        stores = [_store(t) for t in node.targets]

        def assign(scope):
            v = value(scope)
            for store in stores:
                store(scope, v)
        return assign
    if isinstance(node, ast.AugAssign):
        return _aug_assign(node)
    if isinstance(node, ast.If):
        test, body, orelse = _expr(node.test), compile_tree(ast.Module(node.body, [])), \
            compile_tree(ast.Module(node.orelse, []))

        def if_(scope):
            (body if test(scope) else orelse)(scope)
        return if_
    if isinstance(node, ast.For):
        iterable, store, body = _expr(node.iter), _store(node.target), compile_tree(ast.Module(node.body, []))

        def for_(scope):
            for item in iterable(scope):
                scope.iterations += 1
                if scope.iterations > MAX_LOOP_ITERATIONS:
                    raise RuleLimitExceeded(f"a rule looped more than {MAX_LOOP_ITERATIONS:,} times")
                if not scope.iterations & 0xFFF and _DEADLINE[0] is not None and time.time() > _DEADLINE[0]:
                    raise RuleDeadline("the scoring deadline passed while a rule was running")
                store(scope, item)
                body(scope)
        return for_
    if isinstance(node, ast.ImportFrom):  # checked: from dataclasses import replace
        def import_(scope):
            scope.local["replace"] = copy_line
        return import_
    raise RuleLanguageError(f"{type(node).__name__} is not part of the rule language")


def _aug_assign(node: ast.AugAssign) -> Evaluator:
    op, value = _AUGMENTED[type(node.op)], _expr(node.value)
    target = node.target
    if isinstance(target, ast.Name):
        name, load = target.id, _name_loader(target.id)

        def aug_name(scope):
            scope.local[name] = op(load(scope), value(scope))
        return aug_name
    if isinstance(target, ast.Subscript):
        container, key = _expr(target.value), _expr(target.slice)

        def aug_item(scope):
            c, k = container(scope), key(scope)
            c[k] = op(c[k], value(scope))
        return aug_item
    obj = _expr(target.value)
    field = target.attr

    def aug_attr(scope):
        o = obj(scope)
        _check_line(o, field)
        setattr(o, field, op(getattr(o, field), value(scope)))
    return aug_attr


def _check_line(obj, field: str) -> None:
    if not isinstance(obj, LogLine) or field not in LOG_LINE_FIELDS:
        raise RuleLimitExceeded(f"a rule may set .{field} of a log line only")


def _store(target: ast.AST) -> Callable[[Scope, Any], None]:
    if isinstance(target, ast.Name):
        name = target.id

        def store_name(scope, value):
            scope.local[name] = value
        return store_name
    if isinstance(target, ast.Subscript):
        container, key = _expr(target.value), _expr(target.slice)

        def store_item(scope, value):
            container(scope)[key(scope)] = value
        return store_item
    if isinstance(target, ast.Attribute):
        obj, field = _expr(target.value), target.attr

        def store_attr(scope, value):
            o = obj(scope)
            _check_line(o, field)
            setattr(o, field, value)
        return store_attr
    names = [e.id for e in target.elts]  # a tuple of names (checked)

    def store_tuple(scope, value):
        values = tuple(value)
        if len(values) != len(names):
            raise ValueError(f"expected {len(names)} values to unpack, got {len(values)}")
        for n, v in zip(names, values, strict=True):
            scope.local[n] = v
    return store_tuple


def _expr(node: ast.expr) -> Evaluator:
    kind = type(node)
    # Constant operands are folded into the closure that uses them (one call less per use): rules
    # mostly read `v['metadata']['epoch_num']`, compare with a literal, add 1.
    if kind is ast.Constant:
        value = node.value
        return lambda scope: value
    if kind is ast.Name:
        return _name_loader(node.id)
    if kind is ast.Subscript:
        container = _expr(node.value)
        if type(node.slice) is ast.Constant:
            key = node.slice.value
            return lambda scope: container(scope)[key]
        index = _expr(node.slice)
        return lambda scope: container(scope)[index(scope)]
    if kind is ast.Attribute:
        return _attribute(_expr(node.value), node.attr)
    if kind is ast.Compare:
        return _compare(node)
    if kind is ast.BoolOp:
        return _bool_op(node)
    if kind is ast.BinOp:
        op, left = _BINARY[type(node.op)], _expr(node.left)
        if type(node.right) is ast.Constant:
            constant = node.right.value
            return lambda scope: op(left(scope), constant)
        right = _expr(node.right)
        return lambda scope: op(left(scope), right(scope))
    if kind is ast.UnaryOp:
        op, operand = _UNARY[type(node.op)], _expr(node.operand)
        return lambda scope: op(operand(scope))
    if kind is ast.Call:
        return _call(node)
    if kind is ast.IfExp:
        test, body, orelse = _expr(node.test), _expr(node.body), _expr(node.orelse)
        return lambda scope: body(scope) if test(scope) else orelse(scope)
    if kind is ast.List:
        items = [_expr(e) for e in node.elts]
        return lambda scope: [item(scope) for item in items]
    if kind is ast.Tuple:
        items = [_expr(e) for e in node.elts]
        return lambda scope: tuple(item(scope) for item in items)
    if kind is ast.Set:
        items = [_expr(e) for e in node.elts]
        return lambda scope: {item(scope) for item in items}
    if kind is ast.Dict:
        if any(k is None for k in node.keys):
            raise RuleLanguageError("**mapping in a dict is not part of the rule language")
        pairs = [(_expr(k), _expr(v)) for k, v in zip(node.keys, node.values, strict=True)]
        return lambda scope: {k(scope): v(scope) for k, v in pairs}
    if kind is ast.Slice:
        parts = [_expr(p) if p is not None else (lambda scope: None) for p in (node.lower, node.upper, node.step)]
        return lambda scope: slice(*(p(scope) for p in parts))
    raise RuleLanguageError(f"{kind.__name__} is not part of the rule language")


def _compare(node: ast.Compare) -> Evaluator:
    first = _expr(node.left)
    rest = [(_COMPARE[type(op)], _expr(e)) for op, e in zip(node.ops, node.comparators, strict=True)]
    if len(rest) == 1:
        (op, right), = rest
        if type(node.comparators[0]) is ast.Constant:
            constant = node.comparators[0].value
            return lambda scope: op(first(scope), constant)
        return lambda scope: op(first(scope), right(scope))

    def chain(scope):
        left = first(scope)
        for op, right in rest:
            value = right(scope)
            result = op(left, value)
            if not result:
                return result
            left = value
        return result
    return chain


def _bool_op(node: ast.BoolOp) -> Evaluator:
    values = [_expr(v) for v in node.values]
    if isinstance(node.op, ast.And):
        def and_(scope):
            for value in values:
                result = value(scope)
                if not result:
                    return result
            return result
        return and_

    def or_(scope):
        for value in values:
            result = value(scope)
            if result:
                return result
        return result
    return or_


def _call(node: ast.Call) -> Evaluator:
    if any(isinstance(a, ast.Starred) for a in node.args):
        raise RuleLanguageError("*arguments are not part of the rule language")
    function = _expr(node.func)
    args = [_expr(a) for a in node.args]
    keywords = [(k.arg, _expr(k.value)) for k in node.keywords]

    def call(scope):
        f = function(scope)
        if not callable_allowed(f):
            raise RuleLimitExceeded(f"a rule called {getattr(f, '__name__', type(f).__name__)}, which is not "
                                    "part of the rule language")
        positional = [a(scope) for a in args]
        named = {k: v(scope) for k, v in keywords}
        for value in (*positional, *named.values()):
            if callable(value) and not isinstance(value, type) and not callable_allowed(value):
                raise RuleLimitExceeded("a rule passed a function that is not part of the rule language")
        if f is type and (len(positional) != 1 or named):
            raise RuleLimitExceeded("type() takes one argument in rules")
        return f(*positional, **named)
    return call

