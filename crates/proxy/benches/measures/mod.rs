//! Measures both benches take: CPU time from `/proc`, and the capture's PostgreSQL sessions
//! and slots.

use sqlx::PgPool;

/// CPU seconds (user + system) of processes `pids` so far, from `/proc/<pid>/stat` (the
/// kernel's count, in ticks: it repeats on a noisy machine where wall-clock latency does not);
/// a process gone counts 0.
pub fn cpu_seconds(pids: &[i32]) -> f64 {
    let ticks = procfs::ticks_per_second() as f64;
    pids.iter()
        .filter_map(|&pid| procfs::process::Process::new(pid).ok()?.stat().ok())
        .map(|s| (s.utime + s.stime) as f64 / ticks)
        .sum()
}

/// The PostgreSQL server processes of the captures' sessions on database `db` (their slots'
/// and their position reads'): logical decoding through the SQL interface runs in the
/// backend that calls `pg_logical_slot_get_changes`, so this is the server's CPU they cost.
/// PostgreSQL must run on this machine.
pub async fn capture_backends(admin: &PgPool, db: &str) -> Vec<i32> {
    sqlx::query_scalar(
        "SELECT pid FROM pg_stat_activity WHERE application_name = 'hintaudit-proxy' \
         AND datname = $1",
    )
    .bind(db)
    .fetch_all(admin)
    .await
    .expect("pg_stat_activity")
}

/// CPU seconds so far of the captures' PostgreSQL sessions on `db`.
#[allow(dead_code, reason = "the decoders bench counts its pids once")]
pub async fn backends_cpu(admin: &PgPool, db: &str) -> f64 {
    cpu_seconds(&capture_backends(admin, db).await)
}

/// How far behind the WAL's end (bytes) the furthest-behind slot on `db` restarts decoding:
/// every read of a slot through the SQL interface decodes again from its `restart_lsn`, which
/// moves only when the server logs its running transactions (every 15 s of activity, and at
/// checkpoints).
#[allow(dead_code, reason = "the decoders bench prints no restart distance")]
pub async fn restart_distance(admin: &PgPool, db: &str) -> i64 {
    sqlx::query_scalar::<_, Option<i64>>(
        "SELECT max(pg_current_wal_lsn() - restart_lsn)::bigint FROM pg_replication_slots \
         WHERE database = $1",
    )
    .bind(db)
    .fetch_one(admin)
    .await
    .expect("pg_replication_slots")
    .unwrap_or(0)
}
