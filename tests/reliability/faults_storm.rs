//! Case 3 on PostgreSQL, the storm: calls run while a killer terminates one of the pool's
//! backends every 20 ms, on a bare pool and then on an `AuditedPool`. Which call a kill hits
//! is chance, so calls are not compared one by one; instead, on each side: every failure is
//! a kill's (no more failed calls than kills), the audited side's error kinds are kinds the
//! bare side showed too, and every call that succeeded left its row.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hintaudit::core::CallScope;
use sqlx::AssertSqlSafe;

use crate::faults_side::{PgSide, side};
use crate::outcome::{either, kind};
use crate::support::{figure, size};

/// Concurrent callers per side, on a pool of 4.
const WORKERS: usize = 16;

/// One side's storm.
#[derive(Default)]
struct Run {
    calls: usize,
    kills: usize,
    failed: usize,
    kinds: BTreeSet<String>,
    /// Calls that succeeded whose row is missing.
    lost: usize,
}

/// What the storm left on both sides.
pub struct Storm {
    bare: Run,
    audited: Run,
}

impl Storm {
    /// Prints the `FIGURE faults.postgres.storm` line.
    pub fn figure(&self) {
        let kinds = |r: &Run| r.kinds.iter().cloned().collect::<Vec<_>>().join(",");
        figure(
            "faults.postgres.storm",
            &[
                ("calls_each", self.bare.calls.to_string()),
                ("kills_bare", self.bare.kills.to_string()),
                ("failed_bare", self.bare.failed.to_string()),
                ("kills_audited", self.audited.kills.to_string()),
                ("failed_audited", self.audited.failed.to_string()),
                ("error_kinds_bare", kinds(&self.bare)),
                ("error_kinds_audited", kinds(&self.audited)),
                ("foreign_error_kinds", self.foreign().len().to_string()),
                (
                    "ok_writes_lost",
                    (self.bare.lost + self.audited.lost).to_string(),
                ),
            ],
        );
    }

    fn foreign(&self) -> Vec<&String> {
        self.audited.kinds.difference(&self.bare.kinds).collect()
    }

    /// The storm's assertions.
    pub fn check(&self) {
        assert_eq!(
            self.bare.lost + self.audited.lost,
            0,
            "a call that succeeded lost its row"
        );
        assert!(
            self.foreign().is_empty(),
            "audited error kinds not seen bare: {:?}",
            self.foreign()
        );
        for (name, r) in [("bare", &self.bare), ("audited", &self.audited)] {
            assert!(
                r.failed <= r.kills,
                "{name}: {} calls failed, {} kills",
                r.failed,
                r.kills
            );
        }
    }
}

/// Terminates one of `app`'s backends every 20 ms until `stop`; returns the kills.
async fn killer(admin: sqlx::PgPool, app: String, stop: Arc<AtomicBool>) -> usize {
    let mut kills = 0;
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let killed: Option<bool> = sqlx::query_scalar(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE application_name = $1 ORDER BY random() LIMIT 1",
        )
        .bind(&app)
        .fetch_optional(&admin)
        .await
        .expect("kill");
        kills += usize::from(killed == Some(true));
    }
    kills
}

/// One storm call: 0 direct insert, 1 wrapped insert, 2 insert in a transaction, 3 read.
async fn call(pool: &PgSide, v: i32, what: usize) -> Result<(), sqlx::Error> {
    either!(pool.by_ref(), p => match what {
        0 => sqlx::query("INSERT INTO t (n) VALUES ($1)").bind(v).execute(p).await.map(|_| ()),
        1 => sqlx::query("INSERT INTO t (n) SELECT $1 FROM pg_sleep(0.001)")
            .bind(v).execute(p).await.map(|_| ()),
        2 => {
            let mut tx = p.begin().await?;
            sqlx::query("INSERT INTO t (n) VALUES ($1)").bind(v).execute(&mut *tx).await?;
            tx.commit().await
        }
        _ => sqlx::query("SELECT count(*) FROM t").execute(p).await.map(|_| ()),
    })
}

/// One side's storm: [`WORKERS`] callers, each call with its own value.
async fn run(audited: bool) -> Run {
    let per_worker = size(40, 250);
    let (pool, schema) = side("faults_storm", audited, 4, Duration::from_secs(30), None)
        .await
        .expect("PostgreSQL was reachable a moment ago");
    let pool = Arc::new(pool);
    let stop = Arc::new(AtomicBool::new(false));
    let kills = tokio::spawn(killer(
        schema.admin.clone(),
        schema.schema.clone(),
        stop.clone(),
    ));
    let mut workers = Vec::new();
    for w in 0..WORKERS {
        let pool = pool.clone();
        workers.push(tokio::spawn(async move {
            let mut calls = Vec::new();
            for k in 0..per_worker {
                let v = (w * per_worker + k) as i32;
                let r = CallScope::new("storm").run(call(&pool, v, k % 4)).await;
                calls.push((v, k % 4, kind(&r)));
            }
            calls
        }));
    }
    let mut calls = Vec::new();
    for w in workers {
        calls.extend(w.await.expect("worker"));
    }
    stop.store(true, Ordering::Relaxed);
    let mut out = Run {
        kills: kills.await.expect("killer"),
        calls: calls.len(),
        ..Run::default()
    };
    let q = format!("SELECT n FROM {}.t", schema.schema);
    let present: HashSet<i32> = sqlx::query_scalar(AssertSqlSafe(q))
        .fetch_all(&schema.admin)
        .await
        .expect("rows")
        .into_iter()
        .collect();
    for (v, what, k) in calls {
        if k == "ok" {
            out.lost += usize::from(what != 3 && !present.contains(&v));
        } else {
            out.failed += 1;
            out.kinds.insert(k);
        }
    }
    either!(pool.by_ref(), p => p.close().await);
    schema.cleanup().await;
    out
}

/// The storm on a bare pool, then on an audited one.
pub async fn storm() -> Storm {
    Storm {
        bare: run(false).await,
        audited: run(true).await,
    }
}
