//! Reset in place on MariaDB (a server configured by parts; the PostgreSQL case runs end to
//! end in tests/verify/reset.rs): the pristine copy is a dump and restore, the original is
//! restored from it, and the copy is dropped at the end.

use sqlx::{AssertSqlSafe, Connection};

use super::DatabaseCopy;
use crate::client::ServerSpec;

#[tokio::test]
async fn mariadb_in_place_restores_the_original_and_drops_the_copy() {
    let server = std::env::var("HINTAUDIT_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306".into());
    let Ok(mut admin) = sqlx::MySqlConnection::connect(&server).await else {
        let required = hintaudit_test_support::required("HINTAUDIT_REQUIRE_MYSQL");
        assert!(!required, "MariaDB required at {server}");
        eprintln!("skipped: MariaDB unreachable at {server}");
        return;
    };
    let name = format!("hv26_test_{}", std::process::id());
    let script = format!(
        "DROP DATABASE IF EXISTS {name}; CREATE DATABASE {name}; USE {name};
         CREATE TABLE items (id INT PRIMARY KEY, qty INT NOT NULL);
         INSERT INTO items VALUES (1, 3), (2, 0);"
    );
    sqlx::raw_sql(AssertSqlSafe(script))
        .execute(&mut admin)
        .await
        .unwrap();
    let url = format!("{server}/{name}");
    // By parts: the command does not name the database.
    let spec = ServerSpec::Stdio(format!("env DB_NAME={name} server"));
    let copy = DatabaseCopy::make(&spec, &url).await.expect("in place");
    assert_eq!((copy.url.as_str(), &copy.server), (url.as_str(), &spec));
    let pristine = format!("{name}_hintaudit_pristine");
    assert_eq!(copy.pristine, Some(format!("{server}/{pristine}")));
    let write = format!("DELETE FROM {name}.items WHERE id = 1");
    sqlx::raw_sql(AssertSqlSafe(write.clone()))
        .execute(&mut admin)
        .await
        .unwrap();
    assert_eq!(sum(&mut admin, &name).await, 0);
    copy.restore().await.expect("restore");
    assert_eq!(sum(&mut admin, &name).await, 3, "restored");
    sqlx::raw_sql(AssertSqlSafe(write))
        .execute(&mut admin)
        .await
        .unwrap();
    copy.finish().await.expect("finish");
    assert_eq!(sum(&mut admin, &name).await, 3, "restored at the end");
    let left: i64 = sqlx::query_scalar(AssertSqlSafe(format!(
        "SELECT CAST(count(*) AS SIGNED) FROM information_schema.schemata \
         WHERE schema_name = '{pristine}'"
    )))
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(left, 0, "the pristine copy is dropped");
    sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
}

/// The sum of `items.qty` in database `name` (-1 when it has no row).
async fn sum(admin: &mut sqlx::MySqlConnection, name: &str) -> i64 {
    let sql = format!("SELECT CAST(COALESCE(sum(qty), -1) AS SIGNED) FROM {name}.items");
    sqlx::query_scalar(AssertSqlSafe(sql))
        .fetch_one(admin)
        .await
        .unwrap()
}
