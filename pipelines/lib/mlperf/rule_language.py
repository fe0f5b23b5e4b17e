"""The expression language of the official rule files: what it allows, checked before anything runs.

The YAML rule files of `mlcommons/logging` carry Python snippets (`CHECK`, `PRE`, `POST`, `BEGIN: CODE`,
`END: PRE`, `FIRST_CHECK`, `ATLEAST_ONE_CHECK`) that upstream's checker hands to `eval`/`exec`. Here they
are parsed with `ast.parse` (parsing runs nothing), checked against the subset of Python the real rule
files use (found by scanning every shared ruleset and the pinned package: `ALLOWED_NODES`, `BUILTINS`,
`ATTRIBUTES`), and turned into a tree of closures (`rule_interpreter.py`) that evaluates them with Python's
own operators on the same values, so a real rule gives exactly the verdict `eval` gave. Downloaded rules are
data, never code. What the subset cannot do:

- import anything but `from dataclasses import replace` (bound to a copy of a log line);
- read or write an attribute outside `ATTRIBUTES` (none starts with `_`), or assign attributes of
  anything but a log line;
- call anything but `BUILTINS`, the `math` functions of `MATH_FUNCTIONS`, the checker's helpers and
  the methods of `METHODS` on str, list, dict, set, int and float values (`str.format` only with plain
  field names: no `{0.attr}` or `{0[key]}`);
- loop without end or build huge values: `for` loops share an iteration budget, `**`, `*` and `+`
  refuse results beyond `MAX_INT_BITS` / `MAX_SEQUENCE` (`rule_interpreter.py`; `RuleLimitExceeded`, which
  is no `Exception`, so the checker's own `except Exception` cannot swallow it).
Anything else makes the rule file invalid (`RuleLanguageError`, naming the construct and the line).
Plain functions, no Dagster.
"""

from __future__ import annotations

import ast
import math
import string
from dataclasses import replace as _dataclass_replace
from typing import Any

from pipelines.lib.mlperf.mllog import LogLine


class RuleLanguageError(ValueError):
    """A rule snippet uses a construct outside the rule language: the rule file is not used."""


class RuleLimitExceeded(BaseException):
    """A rule went past a budget while running (a loop, or a value too large). A BaseException on
    purpose: the checker catches `Exception` from rules, and must not take this for a failed check."""


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


class SafeFormat:
    """`'...'.format(...)` with plain field names only."""

    __slots__ = ("template",)

    def __init__(self, template: str):
        self.template = template

    def __call__(self, *args, **kwargs):
        _check_format(self.template)
        return self.template.format(*args, **kwargs)


def callable_allowed(function) -> bool:
    """Whether a rule may call `function`: a builtin of the language, a `math` function, a helper of the
    checker (`allow_callable`), a string's checked `format`, or a method of METHODS on a value of METHOD_TYPES."""
    if id(function) in _SAFE_CALLABLES or isinstance(function, SafeFormat):
        return True
    owner = getattr(function, "__self__", None)
    return (type(function).__name__ == "builtin_function_or_method" and type(owner) in METHOD_TYPES
            and function.__name__ in METHODS and function.__name__ != "format")


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
