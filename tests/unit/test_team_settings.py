"""Team mode's settings: each read and checked when the settings are read (a bad one names its variable and
never shows a password), the ones that go together checked together, the S3 ones validated although S3 itself
is only documented (the tests run the data path on a folder)."""

from __future__ import annotations

import pytest

from pipelines.settings import SECRETS, load_settings

URL = "postgresql://owner:pw-Secret-2@db.internal:5432/mlperf_catalog"


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch):
    import os

    for name in list(os.environ):
        if name.startswith("MLPERF_"):
            monkeypatch.delenv(name)


def test_unset_is_the_local_file(tmp_path):
    settings = load_settings(warehouse_dir=str(tmp_path))
    assert settings.team_catalog() is None and settings.bi_mirror_target() is None


def test_a_catalog_with_a_shared_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("MLPERF_CATALOG", URL)
    monkeypatch.setenv("MLPERF_CATALOG_DATA_PATH", str(tmp_path / "lake"))
    monkeypatch.setenv("MLPERF_WAREHOUSE_DIR", str(tmp_path / "wh"))
    catalog = load_settings().team_catalog()
    assert catalog.url == URL and catalog.data_path == str(tmp_path / "lake") + "/" and not catalog.on_s3
    assert catalog.s3 is None and catalog.extensions == (tmp_path / "wh" / "duckdb-extensions")
    assert "pw-Secret-2" not in catalog.shown and "pw-Secret-2" not in repr(catalog)
    assert {"catalog", "bi_mirror", "s3_secret_access_key", "s3_session_token"} <= set(SECRETS)


def test_a_reader_needs_only_the_catalog(monkeypatch):
    monkeypatch.setenv("MLPERF_CATALOG", URL)
    catalog = load_settings().team_catalog()
    assert catalog.data_path is None


def test_a_reader_of_a_lake_on_s3_gives_the_s3_settings_without_a_data_path(monkeypatch):
    monkeypatch.setenv("MLPERF_CATALOG", URL)
    monkeypatch.setenv("MLPERF_S3_REGION", "eu-west-1")
    catalog = load_settings().team_catalog()
    assert catalog.data_path is None and catalog.s3.region == "eu-west-1"


def test_s3_settings_are_read_together(monkeypatch):
    monkeypatch.setenv("MLPERF_CATALOG", URL)
    monkeypatch.setenv("MLPERF_CATALOG_DATA_PATH", "s3://team-bucket/mlperf/")
    monkeypatch.setenv("MLPERF_S3_ACCESS_KEY_ID", "AKIAEXAMPLE")
    monkeypatch.setenv("MLPERF_S3_SECRET_ACCESS_KEY", "s3-Secret-8")
    monkeypatch.setenv("MLPERF_S3_REGION", "eu-west-1")
    monkeypatch.setenv("MLPERF_S3_ENDPOINT", "minio.internal:9000")
    monkeypatch.setenv("MLPERF_S3_URL_STYLE", "PATH")
    monkeypatch.setenv("MLPERF_S3_USE_SSL", "false")
    catalog = load_settings().team_catalog()
    assert catalog.on_s3 and catalog.data_path == "s3://team-bucket/mlperf/"
    assert (catalog.s3.key_id, catalog.s3.secret, catalog.s3.region, catalog.s3.endpoint, catalog.s3.url_style,
            catalog.s3.use_ssl) == ("AKIAEXAMPLE", "s3-Secret-8", "eu-west-1", "minio.internal:9000", "path", False)
    assert "s3-Secret-8" not in repr(catalog)


@pytest.mark.parametrize("environment, says", [
    ({"MLPERF_CATALOG": "mysql://u:pw-Secret-2@h/db"}, "MLPERF_CATALOG: must be a postgresql:// URL"),
    ({"MLPERF_CATALOG": "postgresql://u:pw-Secret-2@h:5432/"}, "MLPERF_CATALOG: names no database"),
    ({"MLPERF_CATALOG": "postgresql://u:pw-Secret-2@h:99999/db"}, "MLPERF_CATALOG: not a URL"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "relative/lake"}, "must be an absolute folder"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "gs://bucket/x"}, "must be a folder or s3://bucket/prefix"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "s3:///prefix"}, "names no bucket"),
    ({"MLPERF_CATALOG_DATA_PATH": "/srv/lake"}, "need MLPERF_CATALOG"),
    ({"MLPERF_S3_REGION": "eu-west-1"}, "need MLPERF_CATALOG"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "/srv/lake", "MLPERF_S3_REGION": "eu-west-1"},
     "apply to an s3:// MLPERF_CATALOG_DATA_PATH only"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "s3://b/p", "MLPERF_S3_ACCESS_KEY_ID": "AKIA"},
     "go together: set both or neither"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "s3://b/p", "MLPERF_S3_SESSION_TOKEN": "t"},
     "MLPERF_S3_SESSION_TOKEN needs"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "s3://b/p", "MLPERF_S3_ENDPOINT": "https://minio:9000"},
     "MLPERF_S3_ENDPOINT: must be host[:port]"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "s3://b/p", "MLPERF_S3_URL_STYLE": "virtual"},
     "MLPERF_S3_URL_STYLE: must be vhost or path"),
    ({"MLPERF_CATALOG": URL, "MLPERF_CATALOG_DATA_PATH": "s3://b/p", "MLPERF_S3_REGION": "EU WEST"},
     "MLPERF_S3_REGION: not an S3 region"),
    ({"MLPERF_BI_MIRROR": "postgresql://u:pw-Secret-2@h/bi", "MLPERF_BI_MIRROR_SCHEMA": "BI; drop"},
     "MLPERF_BI_MIRROR_SCHEMA: must be a lower-case PostgreSQL name"),
    ({"MLPERF_BI_READER_ROLE": "reader-role"}, "MLPERF_BI_READER_ROLE: must be a lower-case PostgreSQL name"),
])
def test_a_bad_team_setting_is_refused_naming_it_without_its_password(monkeypatch, environment, says):
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="invalid setting") as raised:
        load_settings()
    assert says in str(raised.value)
    assert "pw-Secret-2" not in str(raised.value)


def test_the_sqlalchemy_urls_carry_no_password(tmp_path):
    import sqlalchemy as sa

    from pipelines.lib.warehouse.team import TeamCatalog, local_sqlalchemy_url, team_sqlalchemy_url

    url = team_sqlalchemy_url(TeamCatalog(URL + "?sslmode=require", "/srv/lake/"), tmp_path / "duckdb-extensions")
    parsed = sa.make_url(url)  # the catalog's own parameters stay in the database part, not in SQLAlchemy's query
    assert parsed.database == ("ducklake:postgres:dbname=mlperf_catalog host=db.internal port=5432 user=owner "
                               "sslmode=require")
    assert dict(parsed.query) == {"access_mode": "read_only", "autoinstall_known_extensions": "false",
                                  "extension_directory": str((tmp_path / "duckdb-extensions").resolve())}
    assert "pw-Secret-2" not in url and "access_mode=read_only" in url and "autoinstall_known_extensions=false" in url
    assert local_sqlalchemy_url(tmp_path / "mlperf.duckdb").endswith("mlperf.duckdb?access_mode=read_only")


def test_a_catalog_url_without_a_password_masks_no_word_of_a_message(monkeypatch, settings_from_env):
    """A database URL's user name is a role, not a token: a catalog reached as `postgres` without a password
    (a local socket's trust) leaves `postgresql://` readable, while a password is masked wherever it goes."""
    from pipelines.lib.io.redaction import redact

    monkeypatch.setenv("MLPERF_CATALOG", "postgresql://postgres@127.0.0.1:5432/team_catalog")
    monkeypatch.setenv("MLPERF_BI_MIRROR", "postgresql://mirror_owner:pw-Secret-2@db.internal/bi")
    settings_from_env()

    line = "team catalog postgresql://postgres@127.0.0.1:5432/team_catalog; connected as postgres"
    assert redact(line) == "team catalog postgresql://REDACTED@127.0.0.1:5432/team_catalog; connected as postgres"
    assert redact("mirror login failed: pw-Secret-2") == "mirror login failed: [REDACTED]"
