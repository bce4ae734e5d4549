//! A fleet: several bookings replicas on one database, each audited by its own layer and
//! judge, sharing the idempotency history on a real `redis-server` of the test's own. A
//! repeat is seen whichever replica it lands on, counted once, and a store that goes down
//! changes no call.

use std::sync::Arc;

use bookings::{Bookings, Db};
use hintaudit::core::{AuditStage, Config, Finding, Judge, Rule, stats};
use hintaudit::rmcp::{HintAuditLayer, SharedHistory};
use hintaudit_cli::demo::{Collector, RunningServer, connect, demo_policy, serve_http};
use hintaudit_test_support::redis::RedisServer;
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};

use crate::support::{self, TestDb};

/// The secret every replica shares (`HINTAUDIT_HISTORY_KEY`).
const SECRET: &str = "fleet-test-secret-0123456789";

struct Replica {
    server: RunningServer<Bookings>,
    collector: Collector,
    shared: SharedHistory,
    client: RunningService<RoleClient, ()>,
}

impl Replica {
    async fn call(&self, tool: &str, args: Value) -> rmcp::model::CallToolResult {
        let params = CallToolRequestParams::new(tool.to_owned())
            .with_arguments(args.as_object().expect("object").clone());
        let result = self
            .client
            .call_tool(params)
            .await
            .expect("the call is served");
        assert_ne!(result.is_error, Some(true), "{tool}: {:?}", result.content);
        // The store's answer lands after the call answered: wait for it before going on,
        // so that the order of the calls is the order the store saw.
        self.shared.flush().await;
        result
    }

    /// `idempotency_broken` findings of this replica: settled after the call (shared
    /// history) and in call verdicts (this process's own, when the store failed).
    fn broken(&self) -> Vec<Finding> {
        let c = self.collector.snapshot();
        c.settled
            .into_iter()
            .chain(c.calls.into_iter().flat_map(|call| call.findings))
            .filter(|f| f.rule == Rule::IdempotencyBroken)
            .collect()
    }
}

/// A database for the fleet: PostgreSQL when reachable (the deploy stack's), else SQLite.
async fn database(test: &str) -> TestDb {
    match support::postgres(test).await {
        Some(db) => db,
        None => support::sqlite(),
    }
}

/// `n` replicas of bookings on `db`, sharing the history on the store at `url`.
async fn fleet(db: &TestDb, url: String, n: usize) -> Vec<Replica> {
    let settings = Config::default()
        .with_history_url(url)
        .with_history_secret(SECRET)
        .shared_history()
        .expect("settings")
        .expect("history_url is set");
    let mut replicas = Vec::new();
    for i in 0..n {
        let pool = Db::connect(&db.url).await.expect("connect");
        let shared = SharedHistory::open_as(&settings, &format!("replica-{i}"), "{hintaudit}")
            .expect("open the shared history");
        let collector = Collector::default();
        let layer = HintAuditLayer::new()
            .with_judge(Arc::new(Judge::new(demo_policy())))
            .with_recorder(collector.clone())
            .with_shared_history(shared.clone());
        let server = serve_http(
            Bookings::new(pool),
            layer,
            "127.0.0.1:0".parse().unwrap(),
            None,
        )
        .await
        .expect("serve");
        let client = connect(&server.url).await.expect("client");
        replicas.push(Replica {
            server,
            collector,
            shared,
            client,
        });
    }
    replicas
}

async fn stop(replicas: Vec<Replica>, db: TestDb) {
    for r in replicas {
        r.server.shutdown().await;
    }
    db.cleanup().await;
}

fn booking(j: usize) -> Value {
    json!({"patient_id": 1, "starts_at": format!("2027-03-{:02}T10:00", 1 + j), "reason": "fleet"})
}

/// Three replicas, round-robin: every repeat that lands on another replica than its first
/// call is counted, once, by the replica that served it, naming the replica of the first;
/// an honest idempotent tool repeated across replicas is never flagged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_see_every_repeat_whichever_replica_it_lands_on() {
    let Some(redis) = RedisServer::start("fleet three replicas") else {
        return;
    };
    let db = database("fleet_three").await;
    let replicas = fleet(&db, redis.url(), 3).await;
    const PAIRS: usize = 6;
    for j in 0..PAIRS {
        let (first, repeat) = (j % 3, (j + 1) % 3);
        replicas[first].call("create_appointment", booking(j)).await;
        replicas[repeat]
            .call("create_appointment", booking(j))
            .await;
    }
    // The honest idempotent tool: the same reschedule on each replica in turn.
    let reschedule = json!({"id": 1, "starts_at": "2027-04-01T09:00"});
    for r in &replicas {
        r.call("reschedule_appointment", reschedule.clone()).await;
    }
    let mut found = 0;
    for (i, r) in replicas.iter().enumerate() {
        for f in r.broken() {
            assert_eq!(f.tool, "create_appointment", "{f:?}");
            // The first call of the pair whose repeat replica i served ran on replica i - 1.
            let previous = format!("replica replica-{}", (i + 2) % 3);
            assert!(f.evidence.contains(&previous), "{}", f.evidence);
            found += 1;
        }
    }
    assert_eq!(
        found, PAIRS,
        "every cross-replica repeat, summed over replicas"
    );
    stop(replicas, db).await;
}

/// Two replicas judging repeats of the same call at once: each repeat is counted once,
/// by the replica that served it (the store orders them), never twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_judged_at_once_on_two_replicas_count_once() {
    let Some(redis) = RedisServer::start("fleet concurrent repeats") else {
        return;
    };
    let db = database("fleet_concurrent").await;
    let replicas = Arc::new(fleet(&db, redis.url(), 2).await);
    replicas[0].call("create_appointment", booking(20)).await;
    const REPEATS: usize = 6;
    let mut tasks = Vec::new();
    for k in 0..REPEATS {
        let replicas = replicas.clone();
        tasks.push(tokio::spawn(async move {
            let params = CallToolRequestParams::new("create_appointment")
                .with_arguments(booking(20).as_object().unwrap().clone());
            let r = replicas[k % 2]
                .client
                .call_tool(params)
                .await
                .expect("call");
            assert_ne!(r.is_error, Some(true), "{:?}", r.content);
        }));
    }
    for t in tasks {
        t.await.expect("task");
    }
    for r in replicas.iter() {
        r.shared.flush().await;
    }
    let found: usize = replicas.iter().map(|r| r.broken().len()).sum();
    assert_eq!(found, REPEATS, "one finding per repeat, fleet-wide");
    let replicas = Arc::try_unwrap(replicas).ok().expect("tasks are done");
    stop(replicas, db).await;
}

/// The store stopped mid-run and started again: no call fails or changes, the failures are
/// counted at stage `history`, repeats on one replica are still found by its own history,
/// and sharing resumes once the store is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_goes_down_changes_no_call_and_sharing_resumes() {
    let Some(mut redis) = RedisServer::start("fleet store down") else {
        return;
    };
    let db = database("fleet_down").await;
    let replicas = fleet(&db, redis.url(), 2).await;
    replicas[0].call("create_appointment", booking(40)).await;
    replicas[1].call("create_appointment", booking(40)).await;
    assert_eq!(
        replicas[1].broken().len(),
        1,
        "shared while the store is up"
    );

    redis.stop();
    let errors = stats().audit_errors(AuditStage::History);
    // A cross-replica pair, then a same-replica pair: every call is served as usual.
    replicas[0].call("create_appointment", booking(41)).await;
    replicas[1].call("create_appointment", booking(41)).await;
    replicas[1].call("create_appointment", booking(42)).await;
    replicas[1].call("create_appointment", booking(42)).await;
    let listed = replicas[0]
        .client
        .list_all_tools()
        .await
        .expect("tools/list");
    assert!(listed.iter().any(|t| t.name == "create_appointment"));
    assert!(
        stats().audit_errors(AuditStage::History) >= errors + 4,
        "every failed request is counted"
    );
    // Replica 1's own history saw its own repeat (booking 42), and only that: the repeat of
    // booking 41 came from replica 0, which the down store could not tell.
    let own: Vec<_> = replicas[1].broken();
    assert_eq!(own.len(), 2, "{own:?}");

    redis.restart();
    // The connection comes back by itself; requests until then fail and are counted.
    let mut resumed = false;
    for _ in 0..100 {
        let before = stats().audit_errors(AuditStage::History);
        replicas[0]
            .call(
                "reschedule_appointment",
                json!({"id": 2, "starts_at": "2027-05-01T09:00"}),
            )
            .await;
        if stats().audit_errors(AuditStage::History) == before {
            resumed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(resumed, "the shared history never answered again");
    replicas[0].call("create_appointment", booking(43)).await;
    replicas[1].call("create_appointment", booking(43)).await;
    assert_eq!(replicas[1].broken().len(), 3, "sharing resumed");
    stop(replicas, db).await;
}

/// What the store keeps: no arguments in clear, entries bounded by `history_size`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_store_keeps_no_arguments_and_stays_bounded() {
    let Some(redis) = RedisServer::start("fleet store contents") else {
        return;
    };
    let db = support::sqlite();
    let settings = Config::default()
        .with_history_url(redis.url())
        .with_history_secret(SECRET)
        .with_history_size(std::num::NonZeroUsize::new(5).unwrap())
        .shared_history()
        .unwrap()
        .unwrap();
    let pool = Db::connect(&db.url).await.expect("connect");
    let shared = SharedHistory::open_as(&settings, "replica-0", "{hintaudit}").unwrap();
    let layer = HintAuditLayer::new()
        .with_judge(Arc::new(Judge::new(demo_policy())))
        .with_shared_history(shared.clone());
    let server = serve_http(
        Bookings::new(pool),
        layer,
        "127.0.0.1:0".parse().unwrap(),
        None,
    )
    .await
    .unwrap();
    let client = ()
        .serve(rmcp::transport::StreamableHttpClientTransport::from_uri(
            server.url.clone(),
        ))
        .await
        .unwrap();
    for j in 0..12 {
        let params = CallToolRequestParams::new("create_appointment").with_arguments(
            json!({"patient_id": 2, "starts_at": format!("2027-06-{:02}T10:00", 1 + j), "reason": "secret-reason-text"})
                .as_object()
                .unwrap()
                .clone(),
        );
        client.call_tool(params).await.unwrap();
    }
    shared.flush().await;
    let mut conn = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .expect("connect to the store");
    let calls: usize = redis::cmd("ZCARD")
        .arg("{hintaudit}:calls")
        .query(&mut conn)
        .unwrap();
    let entries: Vec<String> = redis::cmd("HGETALL")
        .arg("{hintaudit}:entries")
        .query(&mut conn)
        .unwrap();
    assert_eq!(
        (calls, entries.len()),
        (5, 10),
        "history_size bounds the entries"
    );
    for text in &entries {
        assert!(
            !text.contains("secret-reason-text") && !text.contains("2027-06"),
            "{text}"
        );
    }
    // The entry id is the tool and the arguments' keyed hash: 32 hex digits.
    let id = &entries[0];
    let (tool, hash) = id.split_once(':').expect("tool:hash");
    assert_eq!(tool, "create_appointment");
    assert!(
        hash.len() == 32 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{id}"
    );
    // The store keeps nothing past the TTL: every key has one.
    let ttl: i64 = redis::cmd("PTTL")
        .arg("{hintaudit}:entries")
        .query(&mut conn)
        .unwrap();
    assert!(ttl > 0, "{ttl}");
    server.shutdown().await;
}

/// A server in a half-done rollout: its one tool's readOnlyHint is what this replica runs.
#[derive(Clone)]
struct Rollout {
    read_only: bool,
}

impl rmcp::ServerHandler for Rollout {
    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::new(
            rmcp::model::ServerCapabilities::builder()
                .enable_tools()
                .build(),
        )
    }

    async fn list_tools(
        &self,
        _request: Option<rmcp::model::PaginatedRequestParams>,
        _context: rmcp::service::RequestContext<rmcp::RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, rmcp::ErrorData> {
        let tool = rmcp::model::Tool::new(
            "archive_booking",
            "archives a booking",
            Arc::new(rmcp::model::JsonObject::new()),
        )
        .with_annotations(
            rmcp::model::ToolAnnotations::new()
                .read_only(self.read_only)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        );
        Ok(rmcp::model::ListToolsResult::with_all_items(vec![tool]))
    }
}

/// Replicas serving different hints for one tool (old and new version during a rollout):
/// `hints_changed` once for the fleet, by the first replica to serve the new hints, however
/// often clients list on either side; each replica's listing events carry no
/// `hints_changed` of their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_done_rollout_is_one_hints_change_for_the_fleet() {
    let Some(redis) = RedisServer::start("fleet rollout") else {
        return;
    };
    let settings = Config::default()
        .with_history_url(redis.url())
        .with_history_secret(SECRET)
        .shared_history()
        .unwrap()
        .unwrap();
    let mut replicas = Vec::new();
    for (i, read_only) in [(0, true), (1, false)] {
        let shared =
            SharedHistory::open_as(&settings, &format!("replica-{i}"), "{hintaudit}").unwrap();
        let collector = Collector::default();
        let layer = HintAuditLayer::new()
            .with_recorder(collector.clone())
            .with_shared_history(shared.clone());
        let server = serve_http(
            Rollout { read_only },
            layer,
            "127.0.0.1:0".parse().unwrap(),
            None,
        )
        .await
        .unwrap();
        let client = connect(&server.url).await.unwrap();
        replicas.push((server, collector, shared, client));
    }
    // Old, new, old, new, ...: clients list on whichever replica they reach.
    for round in 0..6 {
        let (_, _, shared, client) = &replicas[round % 2];
        client.list_all_tools().await.expect("tools/list");
        shared.flush().await;
    }
    let changes: Vec<Vec<Finding>> = replicas
        .iter()
        .map(|(_, c, _, _)| c.snapshot().settled)
        .collect();
    assert!(changes[0].is_empty(), "{:?}", changes[0]);
    assert_eq!(changes[1].len(), 1, "{:?}", changes[1]);
    assert_eq!(changes[1][0].rule, Rule::HintsChanged);
    assert!(
        changes[1][0].evidence.contains("across the fleet"),
        "{}",
        changes[1][0].evidence
    );
    for (_, collector, _, _) in &replicas {
        let listings = collector.snapshot().listings;
        assert_eq!(listings.len(), 1, "the listing was recorded");
        assert!(listings[0].2.iter().all(|f| f.rule != Rule::HintsChanged));
    }
    for (server, _, _, _) in replicas {
        server.shutdown().await;
    }
}

/// `rediss://`: the replicas share the history over TLS (a redis-server serving TLS with a
/// self-signed certificate, whose verification the URL's `#insecure` skips).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_history_is_shared_over_tls_too() {
    let Some(redis) = RedisServer::start_tls("fleet over TLS") else {
        return;
    };
    let db = support::sqlite();
    let replicas = fleet(&db, redis.tls_url().expect("TLS is on"), 2).await;
    replicas[0].call("create_appointment", booking(60)).await;
    replicas[1].call("create_appointment", booking(60)).await;
    // Only the store could tell replica 1 of replica 0's call.
    let found = replicas[1].broken();
    assert_eq!(found.len(), 1, "the repeat seen across replicas, over TLS");
    assert!(
        found[0].evidence.contains("replica replica-0"),
        "{}",
        found[0].evidence
    );
    stop(replicas, db).await;
}
