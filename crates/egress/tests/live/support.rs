//! The rig of the egress tests: a fake API (test-support's, over HTTPS and plain HTTP), an
//! egress proxy routing `api.fake.test` to its HTTPS side and `hooks.fake.test` to its plain
//! side (names that are not loopback: Go never proxies loopback), and real clients run as
//! children with the listener's environment.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use hintaudit_core::{GraphqlKind, GraphqlOperation, OutboundAnswer, OutboundReach};
use hintaudit_egress::{Egress, EgressListener, Forwarding};
use hintaudit_test_support::fake_api::FakeApi;

/// The secret every client sends everywhere a secret goes (24 mixed characters: a path
/// segment like it is a `{token}`).
pub const SECRET: &str = "Zx9Kq2Lm7Pw4Rt8Vb3Nc6Hd1";

/// The fake API, the egress proxy, one listener.
pub struct Rig {
    pub fake: FakeApi,
    pub egress: Egress,
    pub listener: EgressListener,
}

/// The rig, forwarding as `forwarding` says, trusting the fake's CA upstream.
pub async fn rig(forwarding: Forwarding) -> Rig {
    let fake = FakeApi::start().await;
    let egress = routed(Egress::builder(forwarding), &fake)
        .with_extra_ca(fake.ca_file())
        .build()
        .expect("the egress proxy");
    let listener = egress.listen().await.expect("a listener");
    Rig {
        fake,
        egress,
        listener,
    }
}

/// `builder` with `api.fake.test` routed to the fake's HTTPS side and `hooks.fake.test` to
/// its plain side.
pub fn routed(
    builder: hintaudit_egress::EgressBuilder,
    fake: &FakeApi,
) -> hintaudit_egress::EgressBuilder {
    builder
        .with_route(format!("api.fake.test={}", fake.https_url()))
        .with_route(format!("hooks.fake.test={}", fake.http_url()))
}

/// Runs `program` with `args` and the listener's environment to its end; panics when it
/// cannot start, or has not ended after 120 s (a guard against a hang, not a measure).
pub async fn run(listener: &EgressListener, program: impl AsRef<OsStr>, args: &[&str]) -> Output {
    let mut std = std::process::Command::new(program);
    std.args(args);
    listener.environment().apply(&mut std);
    let mut cmd = tokio::process::Command::from(std);
    cmd.kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("the client ends within 120 s")
        .expect("the client starts")
}

/// The directory of the client scripts.
pub fn clients() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/live/clients")
}

/// What every client prints for the sequence.
pub const PRINTED: &str = "GET 200\nPOST 200\nDELETE 204\nPOST 201\n";

/// What the egress proxy records of the sequence.
pub fn sequence() -> Vec<OutboundReach> {
    let api = |method: &str, path: &str, status| {
        OutboundReach::new(method, "api.fake.test", Some(443))
            .with_path(path)
            .with_answer(OutboundAnswer::Status(status))
    };
    vec![
        api("GET", "/v1/items/{id}", 200),
        api("POST", "/graphql", 200).with_graphql(GraphqlOperation::new(
            GraphqlKind::Mutation,
            Some("AddComment"),
        )),
        api("DELETE", "/v1/items/{id}", 204),
        OutboundReach::new("POST", "hooks.fake.test", Some(80))
            .with_path("/services/{id}/{id}/{token}")
            .with_answer(OutboundAnswer::Status(201)),
    ]
}

/// Runs a client's sequence in one call: it printed every answer, the call's share is the
/// sequence (nothing ambiguous, no gap), and the fake got every request whole, under its own
/// `Host` and with the secret where the client put it.
pub async fn client_sequence(rig: &Rig, program: impl AsRef<OsStr>, args: &[&str]) {
    let call = rig.listener.begin("client");
    let out = run(&rig.listener, program, args).await;
    let share = rig.listener.end(call);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert_eq!(stdout, PRINTED, "{stderr}");
    assert_eq!(share.requests, sequence(), "{stderr}");
    assert!(
        share.ambiguous.is_empty() && share.gaps.is_empty(),
        "{share:?}"
    );
    let seen = rig.fake.seen();
    let hosts: Vec<Option<&str>> = seen.iter().map(|s| s.host.as_deref()).collect();
    assert_eq!(
        hosts,
        [
            Some("api.fake.test"),
            Some("api.fake.test"),
            Some("api.fake.test"),
            Some("hooks.fake.test")
        ]
    );
    assert_eq!(seen[0].target, format!("/v1/items/42?api_key={SECRET}"));
    assert_eq!(
        seen[3].target,
        format!("/services/T0123ABCD/B0123ABCD/{SECRET}")
    );
    let bearer = format!("Bearer {SECRET}");
    assert!(
        seen.iter().all(|s| s
            .headers
            .iter()
            .any(|(k, v)| k == "authorization" && *v == bearer)),
        "every request forwarded with its own headers"
    );
    assert!(
        String::from_utf8_lossy(&seen[1].body).contains(SECRET),
        "bodies forwarded as sent"
    );
    assert!(rig.listener.take_unattributed().is_empty());
}

/// `python3`, or a printed skip.
pub fn python3() -> Option<PathBuf> {
    tool(
        PathBuf::from("python3"),
        &["--version"],
        "HINTAUDIT_REQUIRE_PYTHON",
    )
}

/// The Python of the egress clients' venv (`HINTAUDIT_EGRESS_VENV`, default
/// `~/.cache/hintaudit/egress-clients`, made by .ci/run with requests, httpx and aiohttp
/// pinned), or a printed skip (a panic under `HINTAUDIT_REQUIRE_EGRESS_CLIENTS`).
pub fn clients_python() -> Option<PathBuf> {
    let venv = std::env::var_os("HINTAUDIT_EGRESS_VENV").map_or_else(
        || {
            PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/hintaudit/egress-clients")
        },
        PathBuf::from,
    );
    tool(
        venv.join("bin/python"),
        &["-c", "import requests, httpx, aiohttp"],
        "HINTAUDIT_REQUIRE_EGRESS_CLIENTS",
    )
}

/// `program`, when `program args` succeeds; else a printed skip, or a panic when `require`
/// (or `HINTAUDIT_REQUIRE_ALL`) says it must be there.
pub fn tool(program: PathBuf, args: &[&str], require: &str) -> Option<PathBuf> {
    let ok = std::process::Command::new(&program)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some(program);
    }
    let why = format!("{} {} does not run", program.display(), args.join(" "));
    assert!(
        !hintaudit_test_support::required(require),
        "{why} ({require} is set)"
    );
    eprintln!("skipped: {why}");
    None
}
