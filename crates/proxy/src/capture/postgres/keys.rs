//! Each table's key columns, asked of the catalog the first time the log names the table, so
//! that the decoder can keep a row's last image by its key (decode.rs, images.rs).
//!
//! The key is the table's replica identity: its `REPLICA IDENTITY USING INDEX` index, else
//! its primary key. A table with neither (or one dropped since) has none: its updates get row
//! images only from an old tuple logged whole (`REPLICA IDENTITY FULL`).

use sqlx::PgConnection;

use crate::capture::capture_error;
use crate::capture::postgres::decode::Decoder;

/// A table as the log qualifies it, and its key columns (none: no key).
type TableKey = (String, Option<Vec<String>>);

/// Asks the key columns of `tables` (qualified as the log writes them) and tells `decoder`.
/// On an error the tables are taken to have no key (counted and logged): their updates go on
/// without row images from earlier reads.
pub(crate) async fn learn(conn: &mut PgConnection, decoder: &mut Decoder, tables: Vec<String>) {
    let rows: Result<Vec<TableKey>, sqlx::Error> = sqlx::query_as(
        "SELECT t.name, (SELECT array_agg(a.attname::text ORDER BY k.ord) \
           FROM pg_index i \
           JOIN pg_class c ON c.oid = i.indrelid \
           CROSS JOIN LATERAL unnest(i.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord) \
           JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum \
           WHERE i.indrelid = to_regclass(t.name) \
             AND CASE WHEN c.relreplident = 'i' THEN i.indisreplident ELSE i.indisprimary END) \
         FROM unnest($1::text[]) AS t(name)",
    )
    .bind(&tables)
    .fetch_all(&mut *conn)
    .await;
    match rows {
        Ok(rows) => {
            for (table, key) in rows {
                decoder.learn_key(table, key.filter(|k| !k.is_empty()));
            }
        }
        Err(e) => {
            capture_error(
                "reading tables' key columns (no row images from earlier reads)",
                &e,
            );
            for table in tables {
                decoder.learn_key(table, None);
            }
        }
    }
}
