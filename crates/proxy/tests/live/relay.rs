//! The relays: the upstream sees the real client (its `initialize` params), server→client
//! requests (sampling, elicitation, roots) reach the client of the session whose upstream
//! asked and its answer returns, `_meta` passes unchanged, notifications (progress, logging,
//! list_changed) reach that session only, and each HTTP session has an upstream connection of
//! its own: stopped when the session ends, started again with the session's own params when
//! lost. The fixture runs on a SQLite file here: these tests need Python, no database.

use std::path::Path;

use rmcp::RoleClient;
use rmcp::model::RequestMetaObject;
use rmcp::service::Peer;
use serde_json::{Value, json};

use crate::clients::*;
use crate::support::*;

/// What a client sees of the relays, exchange by exchange.
async fn relay_transcript(peer: &Peer<RoleClient>) -> Vec<Value> {
    let mut meta = RequestMetaObject::default();
    meta.insert("io.hintaudit/trace".into(), json!({"id": "abc", "n": 1}));
    vec![
        call_on(peer, "whoami", json!({})).await,
        call_with_meta(peer, "echo_meta", json!({}), Some(meta)).await,
        call_on(peer, "ask_sampling", json!({"prompt": "hello"})).await,
        call_on(peer, "ask_elicitation", json!({"message": "your name?"})).await,
        call_on(peer, "ask_roots", json!({})).await,
    ]
}

/// The fixture's arguments and environment in `dir`.
fn fixture_in(dir: &Path) -> (String, String) {
    let db = dir.join("fixture.db").display().to_string();
    (db, dir.display().to_string())
}

/// Checks what a capable client's transcript holds: its own identity upstream, its `_meta`,
/// and its answers to the server's requests.
fn assert_capable(t: &[Value], name: &str) {
    let whoami = text(&t[0]);
    assert!(
        whoami.contains(&format!("\"client\": \"{name}\"")),
        "{whoami}"
    );
    assert!(whoami.contains("\"sampling\""), "{whoami}");
    assert!(
        whoami.contains("io.hintaudit/client"),
        "initialize _meta: {whoami}"
    );
    assert!(text(&t[1]).contains("io.hintaudit/trace"), "{}", t[1]);
    assert!(text(&t[2]).contains(&format!("{name} sampled")), "{}", t[2]);
    assert!(
        text(&t[3]).contains(&format!("\"name\": \"{name}\"")),
        "{}",
        t[3]
    );
    assert!(text(&t[4]).contains(&format!("file:///{name}")), "{}", t[4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_and_proxied_relay_transcripts_are_the_same_over_stdio() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = scratch("t-stdio");
    let (db, marks) = fixture_in(&dir);
    let server = sql_server();
    let server = server.to_str().expect("utf-8 path");
    let env = [("FIXTURE_RELAY", marks.as_str())];
    let bare_args = [server, "--db", &db];
    let upstream = fixture(py, &db, &format!("FIXTURE_RELAY={marks}"));
    let proxied_args = ["proxy", "--stdio", &upstream];

    // A client that declares sampling, elicitation and roots.
    let bare = stdio_with(
        Recorder::new("relay-client"),
        Path::new(py),
        &bare_args,
        &env,
    )
    .await;
    let bare_t = relay_transcript(bare.peer()).await;
    let bare_asked = bare.service().seen().asked;
    bare.cancel().await.ok();
    let proxied = stdio_with(
        Recorder::new("relay-client"),
        &hintaudit(),
        &proxied_args,
        &[],
    )
    .await;
    let proxied_t = relay_transcript(proxied.peer()).await;
    let proxied_asked = proxied.service().seen().asked;
    proxied.cancel().await.ok();
    assert_eq!(bare_t, proxied_t, "bare and proxied answers differ");
    assert_capable(&proxied_t, "relay-client");
    assert_eq!(proxied_asked, ["sampling", "elicitation", "roots"]);
    assert_eq!(bare_asked, proxied_asked);

    // A client that declares none of them gets what it gets from the bare server.
    let bare = stdio_with((), Path::new(py), &bare_args, &env).await;
    let bare_t = relay_transcript(bare.peer()).await;
    bare.cancel().await.ok();
    let proxied = stdio_with((), &hintaudit(), &proxied_args, &[]).await;
    let proxied_t = relay_transcript(proxied.peer()).await;
    proxied.cancel().await.ok();
    assert_eq!(bare_t, proxied_t, "bare and proxied answers differ");
    assert!(text(&proxied_t[2]).starts_with("error"), "{}", proxied_t[2]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare_and_proxied_relay_transcripts_are_the_same_over_streamable_http() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = scratch("t-http");
    let (db, marks) = fixture_in(&dir);
    let env = [("FIXTURE_RELAY", marks.as_str())];
    let (_bare_server, bare_url) = fixture_http(py, &db, &env).await;
    let bare = http_with(Recorder::new("relay-client"), &bare_url).await;
    let bare_t = relay_transcript(bare.peer()).await;
    bare.cancel().await.ok();

    let (_upstream, upstream) = fixture_http(py, &db, &env).await;
    let (proxy, addr) = proxy_http(&["--upstream", &upstream]).await;
    let url = format!("http://{addr}/mcp");
    let proxied = http_with(Recorder::new("relay-client"), &url).await;
    let proxied_t = relay_transcript(proxied.peer()).await;
    proxied.cancel().await.ok();
    assert_eq!(bare_t, proxied_t, "bare and proxied answers differ");
    assert_capable(&proxied_t, "relay-client");

    let bare = http_with((), &bare_url).await;
    let bare_t = relay_transcript(bare.peer()).await;
    bare.cancel().await.ok();
    let proxied = http_with((), &url).await;
    let proxied_t = relay_transcript(proxied.peer()).await;
    proxied.cancel().await.ok();
    assert_eq!(bare_t, proxied_t, "bare and proxied answers differ");
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notifications_reach_the_session_whose_upstream_sent_them_and_no_other() {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = scratch("notify");
    let (db, marks) = fixture_in(&dir);
    let upstream = fixture(py, &db, &format!("FIXTURE_RELAY={marks}"));
    let (proxy, addr) = proxy_http(&["--stdio", &upstream]).await;
    let url = format!("http://{addr}/mcp");
    let alpha = http_with(Recorder::new("alpha"), &url).await;
    let beta = http_with(Recorder::new("beta"), &url).await;

    // Progress: both count at once; each sees its own count, with its own request's token.
    let (a, b) = tokio::join!(
        call_tracked(alpha.peer(), "count_to", json!({"n": 5})),
        call_tracked(beta.peer(), "count_to", json!({"n": 3})),
    );
    let seen_a = alpha.service().until(|s| s.progress.len() >= 5).await;
    let seen_b = beta.service().until(|s| s.progress.len() >= 3).await;
    assert_eq!(text(&a.0), "counted to 5");
    assert_eq!(text(&b.0), "counted to 3");
    assert_eq!(seen_a.progress.len(), 5, "{seen_a:?}");
    assert_eq!(seen_b.progress.len(), 3, "{seen_b:?}");
    for (token, _, message) in &seen_a.progress {
        assert_eq!(*token, a.1, "alpha's own token");
        assert!(
            message.as_deref().is_some_and(|m| m.ends_with("of 5")),
            "{seen_a:?}"
        );
    }
    for (token, _, message) in &seen_b.progress {
        assert_eq!(*token, b.1, "beta's own token");
        assert!(
            message.as_deref().is_some_and(|m| m.ends_with("of 3")),
            "{seen_b:?}"
        );
    }

    // Logging and list_changed: alpha's upstream speaks, alpha hears it.
    let shouted = call_on(alpha.peer(), "shout", json!({"text": "from alpha"})).await;
    assert_eq!(text(&shouted), "shouted");
    let seen_a = alpha
        .service()
        .until(|s| !s.logs.is_empty() && s.tools_changed >= 1)
        .await;
    assert_eq!(seen_a.logs, ["from alpha"]);
    assert_eq!(seen_a.tools_changed, 1);
    // Then beta's: beta hears its own, and never alpha's.
    let shouted = call_on(beta.peer(), "shout", json!({"text": "from beta"})).await;
    assert_eq!(text(&shouted), "shouted");
    let seen_b = beta
        .service()
        .until(|s| !s.logs.is_empty() && s.tools_changed >= 1)
        .await;
    assert_eq!(seen_b.logs, ["from beta"]);
    assert_eq!(seen_b.tools_changed, 1);
    let seen_a = alpha.service().seen();
    assert_eq!(
        seen_a.logs,
        ["from alpha"],
        "nothing of beta's reached alpha"
    );
    assert_eq!(seen_a.tools_changed, 1);

    // The other way: alpha's roots/list_changed reaches alpha's upstream, not beta's.
    let pid_a = text(&call_on(alpha.peer(), "pid", json!({})).await);
    let pid_b = text(&call_on(beta.peer(), "pid", json!({})).await);
    #[allow(deprecated)] // roots: deprecated (SEP-2577), still spoken
    let notified = alpha.peer().notify_roots_list_changed().await;
    notified.expect("notified");
    let to_a = dir.join(format!("roots-changed-{pid_a}"));
    assert!(
        eventually(|| to_a.exists()).await,
        "alpha's upstream heard it"
    );
    // Then beta's reaches beta's upstream: one mark each, none of alpha's at beta's.
    #[allow(deprecated)]
    let notified = beta.peer().notify_roots_list_changed().await;
    notified.expect("notified");
    let to_b = dir.join(format!("roots-changed-{pid_b}"));
    assert!(
        eventually(|| to_b.exists()).await,
        "beta's upstream heard it"
    );
    let heard: Vec<String> = std::fs::read_dir(&dir)
        .expect("marks")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("roots-changed-"))
        .collect();
    assert_eq!(heard.len(), 2, "one each: {heard:?}");

    alpha.cancel().await.ok();
    beta.cancel().await.ok();
    drop(proxy);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_http_session_has_its_own_upstream_child_started_again_with_its_params_and_stopped_with_it()
 {
    let Some(py) = python_or_skip() else {
        return;
    };
    let dir = scratch("children");
    let (db, marks) = fixture_in(&dir);
    let env = format!("FIXTURE_RELAY={marks} FIXTURE_EXIT_TOOL=list_tables");
    let upstream = fixture(py, &db, &env);
    let (proxy, addr) = proxy_http(&["--stdio", &upstream]).await;
    let url = format!("http://{addr}/mcp");
    let alpha = http_with(Recorder::new("alpha"), &url).await;
    let beta = http_with(Recorder::new("beta"), &url).await;
    let pid_of = |answer: Value| -> u32 { text(&answer).parse().expect("a pid") };

    // Two sessions, two children, each introduced with its own client's params.
    let pid_a = pid_of(call_on(alpha.peer(), "pid", json!({})).await);
    let pid_b = pid_of(call_on(beta.peer(), "pid", json!({})).await);
    assert_ne!(pid_a, pid_b);
    assert!(alive(pid_a) && alive(pid_b));
    let who = text(&call_on(alpha.peer(), "whoami", json!({})).await);
    assert!(who.contains("\"client\": \"alpha\""), "{who}");
    let who = text(&call_on(beta.peer(), "whoami", json!({})).await);
    assert!(who.contains("\"client\": \"beta\""), "{who}");
    // The start-up child (it checked the upstream and learnt its tools) was stopped when
    // the first session opened its own.
    let startup: Vec<u32> = pids(&dir)
        .into_iter()
        .filter(|p| *p != pid_a && *p != pid_b)
        .collect();
    assert_eq!(startup.len(), 1, "{:?}", pids(&dir));
    assert!(
        eventually(|| !alive(startup[0])).await,
        "the start-up child stopped"
    );

    // Beta's child exits in the middle of a call: that call fails, saying so; beta's next
    // request starts a new child, introduced with beta's params again. Alpha's is untouched.
    let crashed = call_on(beta.peer(), "list_tables", json!({})).await;
    assert!(
        crashed["error"]
            .as_str()
            .is_some_and(|e| e.contains("upstream")),
        "{crashed}"
    );
    let mut again = None;
    for _ in 0..50 {
        let answer = call_on(beta.peer(), "whoami", json!({})).await;
        if answer.get("error").is_none() {
            again = Some(text(&answer));
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let again = again.expect("beta is served again after its child's exit");
    assert!(again.contains("\"client\": \"beta\""), "{again}");
    assert!(again.contains("\"sampling\""), "{again}");
    let pid_b2 = pid_of(call_on(beta.peer(), "pid", json!({})).await);
    assert_ne!(pid_b2, pid_b);
    assert_eq!(pid_of(call_on(alpha.peer(), "pid", json!({})).await), pid_a);

    // A session that ends (the client's DELETE) stops its child; the other keeps its own.
    alpha.cancel().await.ok();
    assert!(eventually(|| !alive(pid_a)).await, "alpha's child stopped");
    assert!(alive(pid_b2));
    assert_eq!(pid_of(call_on(beta.peer(), "pid", json!({})).await), pid_b2);

    beta.cancel().await.ok();
    assert!(eventually(|| !alive(pid_b2)).await, "beta's child stopped");

    // The proxy stopped (SIGTERM, as a container runtime sends) while a session is open:
    // it stops that session's child as it exits.
    let gamma = http_with(Recorder::new("gamma"), &url).await;
    let pid_c = pid_of(call_on(gamma.peer(), "pid", json!({})).await);
    let mut proxy = proxy;
    let proxy_pid = proxy.0.id().expect("the proxy runs").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &proxy_pid])
        .status()
        .expect("kill runs");
    assert!(sent.success());
    let exited = tokio::time::timeout(std::time::Duration::from_secs(60), proxy.0.wait()).await;
    assert!(exited.is_ok(), "the proxy exits on SIGTERM");
    assert!(eventually(|| !alive(pid_c)).await, "gamma's child stopped");
    drop(gamma);
    let _ = std::fs::remove_dir_all(&dir);
}
