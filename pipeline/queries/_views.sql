-- name: _views
-- description: Views over the Parquet tables for the duckdb command; `.read` this first.
-- inputs: data/*.parquet and data/variants/*/*.parquet (or the directory in variable data_dir)
-- param: data_dir text default data
-- usage: duckdb -c "set variable variant = 'classic'" -c ".read queries/_views.sql" -c ".read queries/best_opening_roll.sql"
--
-- One view per table, as `stb-pipeline query` makes them: a table's rows are its shared file
-- (data/states.parquet) and the files of the variants stored on their own
-- (data/variants/<name>/states.parquet: the big boards, the N-player games but two-player, the
-- full Knucklebones game's lean tables), read as one table by column name (a lean file's
-- missing columns read as nulls). A table that is not built still gets a view, one that fails
-- when read with an error naming it, so that this file runs on any build (`build --variant
-- classic` writes no summary, only the full game's build writes decisions). Unlike `stb-pipeline
-- query`, these views leave null the policy columns that a big box (13 tiles or more) leaves to
-- its readers (next_state_id, stuck, kind: data/README.md).
create or replace macro stb_table_files(t) as (
    -- the table's files: the shared one first, then each variant's own, by name
    select list(file order by own, file)
    from (
        select 0 as own, file
        from glob(coalesce(getvariable('data_dir'), 'data') || '/' || t || '.parquet')
        union all
        select 1 as own, file
        from glob(coalesce(getvariable('data_dir'), 'data') || '/variants/*/' || t || '.parquet')
    )
);
create or replace macro stb_table_source(t) as
    -- the SQL of a table's view: its files, or an error naming it when it has none
    case
        when getvariable('stb_files_' || t) is null
            then 'select null::integer as ' || t || '_not_built where error(''table ' || t
                || ' is not built in this data directory: run stb-pipeline build (the built by '
                || 'line of a query header names the build it needs)'') is null'
        else 'from read_parquet(getvariable(''stb_files_' || t || '''), union_by_name = true)'
    end;
set variable stb_files_states = stb_table_files('states');
set variable stb_files_edges = stb_table_files('edges');
set variable stb_files_policy = stb_table_files('policy');
set variable stb_files_moves = stb_table_files('moves');
set variable stb_files_summary = stb_table_files('summary');
set variable stb_files_benchmarks = stb_table_files('benchmarks');
set variable stb_files_reach = stb_table_files('reach');
set variable stb_files_node_reach = stb_table_files('node_reach');
set variable stb_files_decisions = stb_table_files('decisions');
create or replace view states as from query(stb_table_source('states'));
create or replace view edges as from query(stb_table_source('edges'));
create or replace view policy as from query(stb_table_source('policy'));
create or replace view moves as from query(stb_table_source('moves'));
create or replace view summary as from query(stb_table_source('summary'));
create or replace view benchmarks as from query(stb_table_source('benchmarks'));
create or replace view reach as from query(stb_table_source('reach'));
create or replace view node_reach as from query(stb_table_source('node_reach'));
create or replace view decisions as from query(stb_table_source('decisions'));
-- rules (variant, game, rules JSON): the rule sets in the states files' `stb.rules` metadata
create or replace view rules as from query(
    case
        when getvariable('stb_files_states') is null then stb_table_source('states')
        else 'with meta as (
            select decode(value) as rules_by_variant
            from parquet_kv_metadata(getvariable(''stb_files_states''))
            where decode(key) = ''stb.rules''
        )
        select j.key as variant, j.value ->> ''game'' as game, j.value as rules
        from meta, json_each(json(meta.rules_by_variant)) as j'
    end
);
