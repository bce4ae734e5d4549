//! `db.system.name` of the MySQL backend's statement spans: `mariadb` or `mysql`, as the
//! server's `VERSION()` says (`HINTAUDIT_MYSQL_URL`, default `mysql://root@127.0.0.1:3306`).
//! A test binary of its own: the subscriber it sets must see every callsite, which tests
//! running statements on other threads without a subscriber would race with.
#![allow(clippy::too_many_lines)] // a test tells its scenario in order: clippy.toml
#![cfg(feature = "mysql")]

use std::sync::{Arc, Mutex};

use hintaudit_core::{CallScope, semconv};
use hintaudit_sqlx::AuditedPool;
use sqlx::MySql;
use tracing_subscriber::layer::SubscriberExt;

#[path = "support/databases.rs"]
mod databases;

/// Collects the `db.system.name` of every span, set at creation or recorded later.
#[derive(Clone, Default)]
struct Systems(Arc<Mutex<Vec<String>>>);

struct Visit<'a>(&'a Systems);

impl tracing::field::Visit for Visit<'_> {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == semconv::DB_SYSTEM_NAME {
            self.0.0.lock().unwrap().push(value.to_owned());
        }
    }
    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Systems {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        attrs.record(&mut Visit(self));
    }
    fn on_record(
        &self,
        _: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        values.record(&mut Visit(self));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_name_is_what_the_server_says() {
    let url = databases::mysql_url();
    let pool = match AuditedPool::<MySql>::connect(&url).await {
        Ok(p) => p,
        Err(e) => {
            databases::skip("MySQL", &url, "HINTAUDIT_REQUIRE_MYSQL", e);
            return;
        }
    };
    let version: String = sqlx::query_scalar("SELECT VERSION()")
        .fetch_one(pool.inner())
        .await
        .unwrap();
    let want = if version.contains("MariaDB") {
        "mariadb"
    } else {
        "mysql"
    };
    let systems = Systems::default();
    let subscriber = tracing_subscriber::registry().with(systems.clone());
    let _guard = tracing::subscriber::set_default(subscriber);
    CallScope::new("ping")
        .run(sqlx::query("SELECT 1").fetch_one(&pool))
        .await
        .unwrap();
    assert_eq!(*systems.0.lock().unwrap(), [want], "one value, once");
    drop(_guard);
    pool.close().await;
}
