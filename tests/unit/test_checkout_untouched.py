"""What the test processes would write on their own stays out of the checkout while tests run (tests/conftest.py):
`test_install` proves a refresh writes nothing there by comparing `git status --ignored` before and after it, so
a file another test process writes meanwhile would fail it."""

import importlib.util
from pathlib import Path

from support.paths import IMPORTED_FOLDERS, PROJECT_ROOT


def test_hypothesis_keeps_its_examples_and_caches_outside_the_checkout():
    from hypothesis.configuration import storage_directory

    for name in ("examples", "constants"):
        path = storage_directory(name, intent_to_write=False).path.resolve()
        assert PROJECT_ROOT.resolve() not in path.parents, path


def test_the_project_s_modules_are_compiled_before_any_test_runs():
    sources = [p for folder in IMPORTED_FOLDERS for p in folder.rglob("*.py")]
    assert len(sources) > 50
    missing = [p for p in sources if not Path(importlib.util.cache_from_source(p)).is_file()]
    assert missing == [], missing[:5]
