"""A test module's pytest marks, read from its source without importing it."""

from __future__ import annotations

import ast
from pathlib import Path


def names_mark(node: ast.AST, mark: str) -> bool:
    """Whether `node` (a module, or a statement of it) names `pytest.mark.<mark>` anywhere within it."""
    return any(isinstance(found, ast.Attribute) and found.attr == mark and getattr(found.value, "attr", None) == "mark"
               for found in ast.walk(node))


def every_test_marked(path: Path, mark: str) -> bool:
    """Whether the module's own `pytestmark`, which marks every test in it, names `pytest.mark.<mark>`."""
    return any(isinstance(statement, ast.Assign) and any(getattr(target, "id", None) == "pytestmark"
                                                         for target in statement.targets)
               and names_mark(statement.value, mark)
               for statement in ast.parse(path.read_bytes()).body)
