-- name: _views
-- description: Views over the Parquet tables for the duckdb command; `.read` this first.
-- inputs: data/*.parquet (or the directory in variable data_dir)
-- param: data_dir text default data
-- usage: duckdb -c "set variable variant = 'classic'" -c ".read queries/_views.sql" -c ".read queries/best_opening_roll.sql"
create or replace view states as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/states.parquet');
create or replace view edges as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/edges.parquet');
create or replace view policy as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/policy.parquet');
create or replace view moves as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/moves.parquet');
create or replace view summary as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/summary.parquet');
create or replace view benchmarks as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/benchmarks.parquet');
create or replace view reach as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/reach.parquet');
create or replace view node_reach as select * from read_parquet(coalesce(getvariable('data_dir'), 'data') || '/node_reach.parquet');
create or replace view rules as with meta as (select decode(value) as rules_by_variant from parquet_kv_metadata(coalesce(getvariable('data_dir'), 'data') || '/states.parquet') where decode(key) = 'stb.rules') select j.key as variant, j.value ->> 'game' as game, j.value as rules from meta, json_each(json(meta.rules_by_variant)) as j;
