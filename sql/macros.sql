-- macros: round_order
-- description: SQL functions every model may call; created in each build before the models run.
-- round_order('v4.1') = 4001: MLPerf rounds compared as version numbers ('v10.0' after 'v9.1').
create or replace macro round_order(r) as
    try_cast(split_part(ltrim(r, 'v'), '.', 1) as integer) * 1000 + try_cast(split_part(ltrim(r, 'v'), '.', 2) as integer);
