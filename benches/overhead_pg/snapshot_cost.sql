-- The oracle's snapshot queries, timed and counted by EXPLAIN ANALYZE in one transaction that
-- wrote one row: the old one (the pg_stat_xact_user_tables view), the in-transaction one
-- (pg_stat_get_xact_tuples_* over every user relation) and the autocommit one (over the
-- relations the transaction locked). Copies of the queries in
-- crates/sqlx/src/postgres/oracle.rs (and of the view the old code read). Needs a table
-- `items (id serial PRIMARY KEY, name text)`; add filler tables to see the schema's weight:
--   psql -d DB -f benches/overhead_pg/snapshot_cost.sql | grep -E 'Execution Time|rows='
BEGIN;
INSERT INTO items (name) VALUES ('x');
-- old: the view
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON, COSTS OFF) SELECT pg_current_xact_id_if_assigned()::text AS xid, s.relid::int8, s.relname::text, s.n_tup_ins::int8, s.n_tup_upd::int8, s.n_tup_del::int8 FROM (SELECT 1) AS one LEFT JOIN pg_stat_xact_user_tables AS s ON s.n_tup_ins + s.n_tup_upd + s.n_tup_del > 0 AND s.schemaname NOT LIKE 'pg\_temp\_%';
-- new, every relation
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON, COSTS OFF) SELECT pg_current_xact_id_if_assigned()::text AS xid, w.relid, w.relname, w.ins, w.upd, w.del FROM (SELECT 1) AS one LEFT JOIN (SELECT c.oid::int8 AS relid, c.relname::text AS relname, pg_stat_get_xact_tuples_inserted(c.oid) AS ins, pg_stat_get_xact_tuples_updated(c.oid) AS upd, pg_stat_get_xact_tuples_deleted(c.oid) AS del FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 't', 'm', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_toast' AND n.nspname !~ '^pg_temp_') AS w ON w.ins + w.upd + w.del > 0;
-- new, locked relations
EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON, COSTS OFF) SELECT pg_current_xact_id_if_assigned()::text AS xid, w.relid, w.relname, w.ins, w.upd, w.del FROM (SELECT 1) AS one LEFT JOIN (SELECT c.oid::int8 AS relid, c.relname::text AS relname, pg_stat_get_xact_tuples_inserted(c.oid) AS ins, pg_stat_get_xact_tuples_updated(c.oid) AS upd, pg_stat_get_xact_tuples_deleted(c.oid) AS del FROM (SELECT DISTINCT l.relation FROM pg_locks AS l WHERE l.locktype = 'relation' AND l.pid = pg_backend_pid() AND l.database = (SELECT d.oid FROM pg_database AS d WHERE d.datname = current_database())) AS l CROSS JOIN LATERAL (SELECT c.oid, c.relname, c.relkind, c.relnamespace FROM pg_class AS c WHERE c.oid = l.relation OFFSET 0) AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE c.relkind IN ('r', 't', 'm', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_toast' AND n.nspname !~ '^pg_temp_') AS w ON w.ins + w.upd + w.del > 0;
ROLLBACK;
