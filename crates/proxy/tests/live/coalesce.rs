//! Slot reads that calls wake are coalesced (`CaptureOptions::read_gap`): after a read, the
//! next waits out the gap, whatever calls want. The capture through its library API on
//! PostgreSQL, with the timer's read out of the way (an interval of an hour): with a gap of
//! an hour the second writing call cannot be read within `wait`, so it is judged late; with
//! no gap it is judged on time. Neither outcome is a matter of timing: the first holds for an
//! hour, the second only needs one slot read within 10 s.

use std::time::Duration;

use hintaudit_proxy::{CallShare, Capture, CaptureOptions, UpstreamLink};
use sqlx::PgPool;

use crate::support::*;

/// A call on upstream connection 1 that inserts a row (on a connection of the test's own),
/// and its judged share.
async fn writing_call(capture: &Capture, pool: &PgPool, id: i64) -> CallShare {
    let link = UpstreamLink {
        connection: 1,
        child: None,
    };
    let ticket = capture.begin("add_row".into(), link).await;
    sqlx::query("INSERT INTO rows_written (id) VALUES ($1)")
        .bind(id)
        .execute(pool)
        .await
        .expect("insert");
    let mut settling = capture.finish(ticket);
    let share = settling.share().await;
    settling.recorded(&share);
    share
}

/// Two writing calls one after the other under `read_gap`: whether each was judged late.
async fn two_calls(admin: &PgPool, name: &str, read_gap: Duration) -> [bool; 2] {
    let db = fresh_db(admin, name).await;
    let pool = PgPool::connect(&db).await.expect("the test's database");
    sqlx::query("CREATE TABLE rows_written (id bigint PRIMARY KEY)")
        .execute(&pool)
        .await
        .expect("table");
    let options = CaptureOptions {
        interval: Duration::from_secs(3600),
        wait: Duration::from_secs(10),
        read_gap,
        ..CaptureOptions::default()
    };
    let capture = Capture::start(&db, options).await.expect("the capture");
    let first = writing_call(&capture, &pool, 1).await;
    let second = writing_call(&capture, &pool, 2).await;
    let late = capture.stats().late;
    assert_eq!(
        late,
        u64::from(first.late) + u64::from(second.late),
        "calls judged late are the calls with gaps"
    );
    capture.shutdown().await;
    pool.close().await;
    drop_db(admin, name).await;
    [first.late, second.late]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_ending_within_the_gap_waits_for_the_next_read() {
    let Some(admin) = pg_or_skip().await else {
        return;
    };
    let hour = Duration::from_secs(3600);
    let held = two_calls(&admin, "hintaudit_proxy_coalesce_held", hour).await;
    assert_eq!(
        held,
        [false, true],
        "the first read is at once; the second waits out the gap, past `wait`"
    );
    let free = two_calls(&admin, "hintaudit_proxy_coalesce_free", Duration::ZERO).await;
    assert_eq!(
        free,
        [false, false],
        "with no gap each call's read is at once"
    );
}
