import pytest


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A fresh warehouse directory for one test."""
    base = tmp_path / "warehouse"
    base.mkdir()
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(base))
    return base


@pytest.fixture(autouse=True)
def _package_rules_stand_in(request, monkeypatch):
    """Test archives built from the installed package's rule files (support.logs.package_rules_archive) stand
    in for the real releases without ../shared: in this process their content is accepted beside the
    pinned one. A test marked `pinned_rules_only` sees the pins alone."""
    if request.node.get_closest_marker("pinned_rules_only"):
        return
    from pipelines.lib.mlperf import rules
    from support.logs import package_rules_digest

    pinned = rules.accepted_digests
    monkeypatch.setattr(rules, "accepted_digests", lambda ref: pinned(ref) | {package_rules_digest(ref)})
