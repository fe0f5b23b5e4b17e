"""The whole suite's order (tests/conftest.py) relies on the `shared_build` marker: a module that reads the
shared build without it would run early and make a worker wait for the build."""

import ast

from support.paths import TESTS_DIR


def _reads_shared_build(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Call) and getattr(node.func, "id", None) == "shared_build"
               for node in ast.walk(tree))


def _marked(tree: ast.Module) -> bool:
    return any(isinstance(node, ast.Attribute) and node.attr == "shared_build"
               and getattr(node.value, "attr", None) == "mark" for node in ast.walk(tree))


def test_every_module_that_reads_the_shared_build_is_marked():
    readers = {path.relative_to(TESTS_DIR).as_posix(): _marked(tree)
               for path in TESTS_DIR.rglob("test_*.py")
               if _reads_shared_build(tree := ast.parse(path.read_text(encoding="utf-8")))}
    assert len(readers) >= 4, readers  # the parity modules and the site's: the check finds them
    assert all(readers.values()), [name for name, marked in readers.items() if not marked]
