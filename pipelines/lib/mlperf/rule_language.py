"""The expression language of the official rule files, interpreted: downloaded rules are data, never code.

The YAML rule files of `mlcommons/logging` carry Python snippets (`CHECK`, `PRE`, `POST`, `BEGIN: CODE`,
`END: PRE`, `FIRST_CHECK`, `ATLEAST_ONE_CHECK`) that upstream's checker hands to `eval`/`exec`. Here they
are parsed with `ast.parse` (parsing runs nothing), checked against the subset of Python the real rule
files use (found by scanning every shared ruleset and the pinned package: `ALLOWED_NODES`, `BUILTINS`,
`ATTRIBUTES`), and turned into a tree of closures that evaluates them with Python's own operators on
the same values, so a real rule gives exactly the verdict `eval` gave. What the subset cannot do:

- import anything but `from dataclasses import replace` (bound to a copy of a log line);
- read or write an attribute outside `ATTRIBUTES` (none starts with `_`), or assign attributes of
  anything but a log line;
- call anything but `BUILTINS`, the `math` functions of `MATH_FUNCTIONS`, the checker's helpers and
  the methods of `METHODS` on str, list, dict, set, int and float values (`str.format` only with plain
  field names: no `{0.attr}` or `{0[key]}`);
- loop without end or build huge values: `for` loops share an iteration budget, `**`, `*` and `+`
  refuse results beyond `MAX_INT_BITS` / `MAX_SEQUENCE` (`RuleLimitExceeded`, which is no `Exception`,
  so the checker's own `except Exception` cannot swallow it).
Anything else makes the rule file invalid (`RuleLanguageError`, naming the construct and the line).
Plain functions, no Dagster.
"""

from __future__ import annotations

import ast
import math
import operator
import string
import time
from collections.abc import Callable
from dataclasses import replace as _dataclass_replace
from typing import Any

from pipelines.lib.mlperf.mllog import LogLine

MAX_LOOP_ITERATIONS = 5_000_000  # per evaluation; a BEGIN block loops once over a log (≤ 10^6 lines)
MAX_SEQUENCE = 10_000_000  # characters or items a `*` or `+` may produce
MAX_INT_BITS = 100_000  # bits of an integer `**` may produce


class RuleLanguageError(ValueError):
    """A rule snippet uses a construct outside the rule language: the rule file is not used."""


class RuleLimitExceeded(BaseException):
    """A rule went past a budget while running (a loop, or a value too large). A BaseException on
    purpose: the checker catches `Exception` from rules, and must not take this for a failed check."""


class RuleDeadline(RuleLimitExceeded):
    """The round's scoring deadline passed while a rule was running."""


_DEADLINE: list[float | None] = [None]  # wall-clock time (time.time()) past which rules stop, per process


def set_deadline(deadline: float | None) -> None:
    """Rules evaluated in this process stop (RuleDeadline) once `deadline` (time.time()) has passed."""
    _DEADLINE[0] = deadline


ALLOWED_NODES = frozenset({
    # structure
    "Module", "Expression", "Expr", "Assign", "AugAssign", "If", "For", "ImportFrom", "alias",
    # expressions
    "BoolOp", "BinOp", "UnaryOp", "Compare", "Call", "keyword", "Attribute", "Subscript", "Slice", "Name",
    "Constant", "List", "Tuple", "Dict", "Set", "IfExp",
    # contexts and operators
    "Load", "Store", "And", "Or", "Add", "Sub", "Mult", "Div", "FloorDiv", "Mod", "Pow", "BitOr", "BitAnd",
    "Not", "USub", "UAdd", "Eq", "NotEq", "Lt", "LtE", "Gt", "GtE", "In", "NotIn", "Is", "IsNot",
})


def _print(*_args, **_kwargs) -> None:
    """Upstream prints a score line from two 0.6 rule files; the warehouse has no console for rules."""


BUILTINS: dict[str, Any] = {
    "abs": abs, "all": all, "any": any, "bool": bool, "dict": dict, "float": float, "int": int,
    "isinstance": isinstance, "len": len, "list": list, "max": max, "min": min, "print": _print,
    "round": round, "set": set, "sorted": sorted, "str": str, "sum": sum, "tuple": tuple, "type": type,
    "True": True, "False": False, "None": None,
}
MATH_FUNCTIONS = frozenset({"ceil", "floor", "isclose", "log", "log2", "log10", "sqrt", "exp", "fabs", "isfinite",
                            "isnan", "inf", "pi"})
# Methods a rule may call on values of the types in METHOD_TYPES (`format`: through `_safe_format`).
METHODS = frozenset({"append", "extend", "get", "update", "values", "keys", "items", "setdefault", "add",
                     "count", "index", "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith",
                     "split", "join", "replace", "find", "is_integer", "format"})
METHOD_TYPES = (str, list, dict, set, int, float)
# Fields of a log line a rule reads (and, on a copy, writes).
LOG_LINE_FIELDS = frozenset({"key", "value", "timestamp", "lineno", "full_string"})
ATTRIBUTES = METHODS | MATH_FUNCTIONS | LOG_LINE_FIELDS
# the names a snippet finds in its environment besides BUILTINS (see compliance.py)
ENVIRONMENT = frozenset({"s", "v", "ll", "loglines", "enqueue_config", "is_integer", "math"})


def copy_line(line, **changes):
    """`from dataclasses import replace` in a rule: a copy of a log line, nothing else."""
    if not isinstance(line, LogLine):
        raise TypeError("replace() copies a log line only")
    return _dataclass_replace(line, **changes)


_SAFE_CALLABLES: set[int] = {id(f) for f in BUILTINS.values() if callable(f)}
_SAFE_CALLABLES |= {id(getattr(math, name)) for name in MATH_FUNCTIONS if callable(getattr(math, name, None))}
_SAFE_CALLABLES.add(id(copy_line))


def allow_callable(function) -> None:
    """Let rules call one more function of ours (the checker's helpers)."""
    _SAFE_CALLABLES.add(id(function))


_FORMATTER = string.Formatter()


def _check_format(template: str) -> None:
    for _text, field, spec, _conversion in _FORMATTER.parse(template):
        if field and not (field.isdigit() or field.isidentifier()):
            raise RuleLimitExceeded(f"format field {{{field}}} reads an attribute or item: not allowed in rules")
        if spec and "{" in spec:
            _check_format(spec)


class _SafeFormat:
    """`'...'.format(...)` with plain field names only."""

    __slots__ = ("template",)

    def __init__(self, template: str):
        self.template = template

    def __call__(self, *args, **kwargs):
        _check_format(self.template)
        return self.template.format(*args, **kwargs)


def _callable_allowed(function) -> bool:
    if id(function) in _SAFE_CALLABLES or isinstance(function, _SafeFormat):
        return True
    owner = getattr(function, "__self__", None)
    return (type(function).__name__ == "builtin_function_or_method" and type(owner) in METHOD_TYPES
            and function.__name__ in METHODS and function.__name__ != "format")


def _attribute(obj: Evaluator, name: str) -> Evaluator:
    """`obj.name`, checked by what the name is: `format` of a string only (as `_SafeFormat`), a math
    function of `math` only, anything else in ATTRIBUTES of any value."""
    if name == "format":
        def format_of(scope):
            value = obj(scope)
            if isinstance(value, str):
                return _SafeFormat(value)
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


# --- checking the tree --------------------------------------------------------------------------------

def parse(source: str, mode: str, where: str) -> ast.AST:
    """Parse a snippet (`eval` or `exec` mode) and check it against the rule language."""
    try:
        tree = ast.parse(source.strip(), filename=where, mode=mode)
    except SyntaxError as exc:
        raise RuleLanguageError(f"{where}: does not parse: {exc.msg} (line {exc.lineno})") from None
    for node in ast.walk(tree):
        kind = type(node).__name__
        line = getattr(node, "lineno", "?")
        if kind not in ALLOWED_NODES:
            raise RuleLanguageError(f"{where}: line {line}: {kind} is not part of the rule language")
        if isinstance(node, ast.Attribute) and (node.attr not in ATTRIBUTES or node.attr.startswith("_")):
            raise RuleLanguageError(f"{where}: line {line}: attribute .{node.attr} is not part of the rule language")
        if isinstance(node, ast.Name) and node.id.startswith("_"):
            raise RuleLanguageError(f"{where}: line {line}: name {node.id} is not part of the rule language")
        if isinstance(node, ast.ImportFrom) and not (
                node.module == "dataclasses" and node.level == 0
                and [(a.name, a.asname) for a in node.names] == [("replace", None)]):
            raise RuleLanguageError(f"{where}: line {line}: only 'from dataclasses import replace' may be imported")
        if isinstance(node, ast.For) and node.orelse:
            raise RuleLanguageError(f"{where}: line {line}: for ... else is not part of the rule language")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.For)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                _check_target(target, where)
        if isinstance(node, ast.keyword) and node.arg is None:
            raise RuleLanguageError(f"{where}: line {line}: **arguments are not part of the rule language")
        if isinstance(node, ast.Compare):
            _check_identity(node, where)
    return tree


_SINGLETONS = (None, True, False)


def _check_identity(node: ast.Compare, where: str) -> None:
    """`is` and `is not` compare with None, True or False only: identity of other values is an accident
    of the interpreter (CPython folds `-6 is -6` to True; two computed -6 are two objects)."""
    operands = [node.left, *node.comparators]
    for i, op in enumerate(node.ops):
        if isinstance(op, (ast.Is, ast.IsNot)) and not any(
                isinstance(o, ast.Constant) and any(o.value is v for v in _SINGLETONS) for o in operands[i:i + 2]):
            raise RuleLanguageError(f"{where}: line {node.lineno}: 'is' compares with None, True or False only "
                                    "in the rule language")


def _check_target(target: ast.AST, where: str) -> None:
    if isinstance(target, (ast.Name, ast.Subscript)):
        return
    if isinstance(target, ast.Attribute) and target.attr in LOG_LINE_FIELDS:
        return
    if isinstance(target, ast.Tuple) and all(isinstance(e, ast.Name) for e in target.elts):
        return
    raise RuleLanguageError(f"{where}: line {getattr(target, 'lineno', '?')}: cannot assign to "
                            f"{type(target).__name__} in the rule language")


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names a snippet assigns or imports, names it reads), in one walk of its tree."""
    stored, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            stored.add(node.id)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            read.add(node.id)
        elif isinstance(node, ast.ImportFrom):
            stored.update(a.asname or a.name for a in node.names)
    return stored, read


def check_names(trees: list[ast.AST], where: str, also: set[str] = frozenset()) -> None:
    """Every name the snippets of one rule file read is the environment's, a builtin of the language,
    or assigned by one of them (BEGIN blocks before release 3.1 define names for later checks)."""
    names = [_names(tree) for tree in trees]
    known = ENVIRONMENT | set(BUILTINS) | set(also)
    for stored, _ in names:
        known |= stored
    for _, read in names:
        unknown = sorted(read - known)
        if unknown:
            raise RuleLanguageError(f"{where}: name {unknown[0]} is not part of the rule language")


# --- evaluating it -------------------------------------------------------------------------------------

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
        if not _callable_allowed(f):
            raise RuleLimitExceeded(f"a rule called {getattr(f, '__name__', type(f).__name__)}, which is not "
                                    "part of the rule language")
        positional = [a(scope) for a in args]
        named = {k: v(scope) for k, v in keywords}
        for value in (*positional, *named.values()):
            if callable(value) and not isinstance(value, type) and not _callable_allowed(value):
                raise RuleLimitExceeded("a rule passed a function that is not part of the rule language")
        if f is type and (len(positional) != 1 or named):
            raise RuleLimitExceeded("type() takes one argument in rules")
        return f(*positional, **named)
    return call

