import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # `support` helpers



@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A fresh warehouse directory for one test."""
    base = tmp_path / "warehouse"
    base.mkdir()
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    return base

