//! What the catalog says of a relation a proved read-only text reads: whether reading it can
//! write, cached per pool like the written tables' facts (see `catalog`).
//!
//! A text proved read-only ([`crate::Classification::proved_read_only`]) can still write
//! through what it reads: a view's definition can call any function, and a row-security
//! policy's expression too. A relation is *read-only to read* when it is an ordinary or
//! partitioned table, a materialized view or a sequence, without row security, or a view
//! whose definition (`pg_get_viewdef`) is itself proved read-only and reads only such
//! relations (views in views, up to [`MAX_DEPTH`] deep). Anything else (a foreign table, a
//! table with row security, a view calling a user function or `nextval`, a name that does
//! not resolve) is not, and the statement gets the oracle.

use std::time::Instant;

use futures_core::future::BoxFuture;
use futures_util::FutureExt;
use sqlx::postgres::PgConnection;
use sqlx::{Executor, Row};

use super::catalog::{Catalog, TTL};
use crate::classify::{SqlDialect, classify};

/// Views in views followed this deep; deeper is not proved.
const MAX_DEPTH: usize = 8;

/// One query (one round trip, prepared): the relation's kind, whether row security is on,
/// and a view's definition. No row when the name does not resolve.
/// Catalog names in `pg_catalog`, the name `$1` in the session's `search_path` (see the
/// module docs of `postgres`, on catalog names).
const LOOKUP: &str = "SELECT c.relkind::pg_catalog.text AS kind, c.relrowsecurity AS rls, \
  CASE WHEN c.relkind OPERATOR(pg_catalog.=) 'v' THEN pg_catalog.pg_get_viewdef(c.oid) END AS def \
  FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)";

impl Catalog {
    /// Whether reading `name` can write nothing (see the module docs), from the cache or
    /// from the catalog (one round trip per relation, views in views included). `Ok(false)`
    /// when the lookup fails; the error when the connection is lost (see `lost`).
    pub(crate) async fn read_only(
        &self,
        conn: &mut PgConnection,
        name: &str,
    ) -> Result<bool, sqlx::Error> {
        self.read_only_at(conn, name, 0).await
    }

    fn read_only_at<'a>(
        &'a self,
        conn: &'a mut PgConnection,
        name: &'a str,
        depth: usize,
    ) -> BoxFuture<'a, Result<bool, sqlx::Error>> {
        async move {
            if let Some(ok) = self.cached_read(name) {
                return Ok(ok);
            }
            let row = match conn.fetch_optional(sqlx::query(LOOKUP).bind(name)).await {
                Ok(row) => row,
                Err(e) if super::lost::connection_lost(&e) => return Err(e),
                Err(_) => return Ok(false),
            };
            let Some(row) = row else {
                return Ok(false);
            };
            let kind: String = row.try_get("kind").unwrap_or_default();
            let rls: bool = row.try_get("rls").unwrap_or(true);
            let def: Option<String> = row.try_get("def").unwrap_or(None);
            let ok = match (kind.as_str(), def) {
                ("r" | "p" | "m" | "S", _) => !rls,
                ("v", Some(def)) if depth < MAX_DEPTH && !rls => {
                    let class = classify(&def, SqlDialect::Postgres);
                    let mut ok = class.proved_read_only();
                    for t in class.effect.read_tables.iter() {
                        if !ok {
                            break;
                        }
                        ok = super::catalog::simple_name(t)
                            && self.read_only_at(conn, t, depth + 1).await?;
                    }
                    ok
                }
                _ => false,
            };
            self.store_read(name, ok);
            Ok(ok)
        }
        .boxed()
    }

    fn cached_read(&self, name: &str) -> Option<bool> {
        let reads = self.reads.lock();
        let (ok, at) = reads.get(name)?;
        (at.elapsed() < TTL).then_some(*ok)
    }

    fn store_read(&self, name: &str, ok: bool) {
        let mut reads = self.reads.lock();
        if reads.len() >= super::catalog::CAPACITY {
            reads.clear();
        }
        reads.insert(name.into(), (ok, Instant::now()));
    }
}
