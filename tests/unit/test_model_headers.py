"""Model headers, declared dependencies against DuckDB's own parse, order, and grain tests."""

from pathlib import Path

import duckdb
import pytest

from pipelines.lib.warehouse.models import (
    ModelError,
    check_dependencies,
    grain_test_sql,
    load_models,
    load_tests,
    model_order,
    relations_read,
    sql_dir,
)


def header(name, *, kind="table", grain="id", deps="raw_training_runs", description="a model") -> str:
    lines = [f"-- model: {name}", f"-- kind: {kind}"]
    if grain is not None:
        lines.append(f"-- grain: {grain}")
    lines += [f"-- depends on: {deps}", f"-- description: {description}"]
    return "\n".join(lines) + "\n-- prose: what the model is for, not a header line.\n"


def write(root: Path, layer: str, name: str, text: str) -> None:
    (root / layer).mkdir(parents=True, exist_ok=True)
    (root / layer / f"{name}.sql").write_text(text)


@pytest.fixture
def sql(tmp_path):
    root = tmp_path / "sql"
    write(root, "staging", "stg_runs", header("stg_runs", kind="view") + "select run_file as id from raw_training_runs")
    write(root, "marts", "fct_runs", header("fct_runs", deps="stg_runs") +
          "with r as (select * from stg_runs) select id from r")
    return root


def test_every_shipped_model_has_a_header_and_reads_exactly_what_it_declares():
    models = load_models()
    # every SQL file is a model, a data test (sql/tests) or an export query (sql/exports): none is skipped
    others = [*(sql_dir() / "tests").glob("*.sql"), *(sql_dir() / "exports").glob("*.sql")]
    assert len(models) == len(list((sql_dir()).glob("*/*_*.sql"))) - len(others)
    for model in models.values():
        assert model.kind in ("table", "view") and model.description and model.depends_on
        assert model.grain or model.grain_note, model.name
    check_dependencies(duckdb.connect(), models)  # every model, against DuckDB's parse
    order = model_order(models)
    for model in models.values():
        assert all(order.index(d) < order.index(model.name) for d in model.depends_on if d in models)
    tests = load_tests(models)
    assert {t.name for t in tests if t.generated} >= {"fct_training_result_unique", "mart_cost_to_train_unique",
                                                       "fct_cloud_price_current_unique", "dim_system_unique"}
    assert all(t.model in models for t in tests)


def test_header_is_parsed_and_prose_is_not(sql):
    models = load_models(sql)
    stg = models["stg_runs"]
    assert (stg.layer, stg.kind, stg.grain, stg.depends_on, stg.description) == (
        "staging", "view", ("id",), ("raw_training_runs",), "a model")
    assert model_order(models) == ["stg_runs", "fct_runs"]


def test_missing_grain_is_an_error(sql):
    write(sql, "marts", "dim_x", header("dim_x", grain=None) + "select 1 as id")
    with pytest.raises(ModelError, match=r"dim_x\.sql: model header lacks 'grain'"):
        load_models(sql)


def test_grain_none_needs_a_reason_and_columns_must_be_names(sql):
    write(sql, "marts", "dim_x", header("dim_x", grain="none", deps="stg_runs") + "select id from stg_runs")
    with pytest.raises(ModelError, match="needs a reason"):
        load_models(sql)
    write(sql, "marts", "dim_x", header("dim_x", grain="id; drop table x", deps="stg_runs") + "select id from stg_runs")
    with pytest.raises(ModelError, match="plain column names"):
        load_models(sql)


def test_wrong_kind_and_misnamed_model_are_errors(sql):
    write(sql, "marts", "dim_x", header("dim_x", kind="materialized view", deps="stg_runs") + "select id from stg_runs")
    with pytest.raises(ModelError, match="kind 'materialized view'"):
        load_models(sql)
    write(sql, "marts", "dim_x", header("dim_y", deps="stg_runs") + "select id from stg_runs")
    with pytest.raises(ModelError, match="names model 'dim_y', but the file is dim_x.sql"):
        load_models(sql)


def test_unknown_dependency_is_an_error(sql):
    write(sql, "marts", "dim_x", header("dim_x", deps="stg_runs, stg_nowhere") + "select id from stg_runs")
    with pytest.raises(ModelError, match=r"unknown relation\(s\) \['stg_nowhere'\]"):
        load_models(sql)


def test_cycle_is_an_error(sql):
    write(sql, "marts", "dim_a", header("dim_a", deps="dim_b") + "select id from dim_b")
    write(sql, "marts", "dim_b", header("dim_b", deps="dim_a") + "select id from dim_a")
    with pytest.raises(ModelError, match="cycle: dim_a -> dim_b -> dim_a"):
        load_models(sql)


def test_no_models_at_all_fails_loudly(tmp_path):
    (tmp_path / "sql" / "marts").mkdir(parents=True)
    with pytest.raises(ModelError, match=r"no SQL models found in .*sql: is the package installed with its data\?"):
        load_models(tmp_path / "sql")


def test_undeclared_read_and_unread_declaration_name_both(sql):
    # reads raw_training_runs in a subquery without declaring it; declares stg_runs, which it reads
    write(sql, "marts", "dim_x", header("dim_x", deps="stg_runs") +
          "select id from stg_runs where id in (select run_file from raw_training_runs)")
    # declares raw_quarantine but never reads it; a CTE named like a table is not a read
    write(sql, "marts", "dim_y", header("dim_y", deps="stg_runs, raw_quarantine") +
          "with raw_training_systems as (select id from stg_runs) select * from raw_training_systems")
    models = load_models(sql)
    with pytest.raises(ModelError) as err:
        check_dependencies(duckdb.connect(), models)
    message = str(err.value)
    assert "dim_x reads ['raw_training_runs'] but does not declare it" in message
    assert "dim_y declares ['raw_quarantine'] in '-- depends on:' but does not read it" in message
    assert "fct_runs" not in message  # the CTE in fct_runs hides nothing


def test_relations_read_ignores_comments_and_ctes():
    con = duckdb.connect()
    sql = "-- mentions fct_training_result only in a comment\nwith a as (select 1 as x) select * from a join dim_system using (x)"
    assert relations_read(con, sql) == {"dim_system"}
    with pytest.raises(ModelError, match="does not parse"):
        relations_read(con, "select from where")


def test_sql_tests_need_a_known_model(sql):
    (sql / "tests").mkdir()
    (sql / "tests" / "orphan.sql").write_text("-- tests: fct_nothing\n-- severity: structural\n-- description: x\n"
                                              "select 1 where false")
    with pytest.raises(ModelError, match="tests unknown model 'fct_nothing'"):
        load_tests(load_models(sql), sql)
    (sql / "tests" / "orphan.sql").write_text("select 1 where false")
    with pytest.raises(ModelError, match="starts with '-- tests: <model>'"):
        load_tests(load_models(sql), sql)
    # every test states what its failure does
    (sql / "tests" / "orphan.sql").write_text("-- tests: stg_runs\n-- severity: fatal\n-- description: x\nselect 1")
    with pytest.raises(ModelError, match="severity 'fatal' is not one of"):
        load_tests(load_models(sql), sql)


def test_generated_grain_test_catches_a_duplicate(sql):
    (sql / "tests").mkdir()
    tests = {t.name: t for t in load_tests(load_models(sql), sql)}
    unique = tests["fct_runs_unique"]
    assert unique.generated and unique.grain == ("id",)
    con = duckdb.connect()
    con.execute("create table fct_runs as select * from (values ('a'), ('b')) as t(id)")
    query = grain_test_sql("fct_runs", unique.grain, ["id"])
    assert con.execute(query).fetchall() == []
    con.execute("insert into fct_runs values ('a')")
    assert con.execute(query).fetchall() == [("a", 2)]
    with pytest.raises(ModelError, match=r"grain of fct_runs names column\(s\) \['run'\] the model does not have"):
        grain_test_sql("fct_runs", ("run",), ["id"])


def test_a_verified_model_is_not_reparsed_but_a_changed_one_is(sql):
    from pipelines.lib.warehouse.models import dependency_digest

    models = load_models(sql)
    verified = check_dependencies(duckdb.connect(), models)
    assert verified == {dependency_digest(m) for m in models.values()}
    # The same files again: nothing to parse (a connection that cannot run anything proves it).
    closed = duckdb.connect()
    closed.close()
    assert check_dependencies(closed, models, frozenset(verified)) == verified
    # fct_runs now reads a table its header does not name: its digest changed, so it is checked.
    write(sql, "marts", "fct_runs", header("fct_runs", deps="stg_runs") +
          "select id from stg_runs join raw_quarantine on true")
    with pytest.raises(ModelError, match=r"fct_runs reads \['raw_quarantine'\] but does not declare it"):
        check_dependencies(duckdb.connect(), load_models(sql), frozenset(verified))
