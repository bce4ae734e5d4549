//! No secret reaches what the egress proxy records or logs: a bearer token, a cookie, a
//! `?api_key=` value, a webhook path's key, a JSON body and GraphQL variables all carry the
//! planted secret, which the fake API gets (it passed through unchanged) and which appears
//! in no share, no request's evidence text, no log line at any level, no answer of the
//! proxy's own and no CA file.
#![allow(clippy::too_many_lines)]

use std::time::Duration;

use hintaudit_egress::Forwarding;
use hintaudit_test_support::logs::LogBuffer;

#[allow(
    dead_code,
    reason = "the live suite's rig; this binary uses part of it"
)]
#[path = "live/support.rs"]
mod support;

use support::{SECRET, clients, python3, rig, run};

/// On one thread, so that the subscriber set here sees every task of the proxy.
#[tokio::test(flavor = "current_thread")]
async fn a_planted_secret_appears_nowhere() {
    let Some(python) = python3() else { return };
    let logs = LogBuffer::default();
    let guard = logs.capture(tracing::Level::TRACE);

    let rig = rig(Forwarding::All).await;
    let script = clients().join("client.py");
    let script = script.to_str().unwrap();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let failing = [
        format!("https://api.unreachable.test/v1/x?api_key={SECRET}"),
        format!("http://{closed}/hooks/{SECRET}?token={SECRET}"),
    ];
    let mut printed = String::new();
    let mut shares = Vec::new();
    let call = rig.listener.begin("sequence");
    let out = run(&rig.listener, &python, &[script, "urllib", SECRET]).await;
    printed += &String::from_utf8_lossy(&out.stdout);
    for url in &failing {
        let out = run(
            &rig.listener,
            &python,
            &[script, "urllib", SECRET, "POST", url],
        )
        .await;
        printed += &String::from_utf8_lossy(&out.stdout);
        printed += &String::from_utf8_lossy(&out.stderr);
    }
    let pinned = format!(
        "import ssl, urllib.request\nctx = ssl.create_default_context(cafile={:?})\n\
         try:\n    urllib.request.urlopen('https://api.fake.test/v1/x?api_key={SECRET}', context=ctx)\n\
         except Exception as e:\n    print('refused')\n",
        rig.fake.ca_file()
    );
    let out = run(&rig.listener, &python, &["-c", &pinned]).await;
    printed += &String::from_utf8_lossy(&out.stdout);
    tokio::time::timeout(Duration::from_secs(60), rig.listener.settled())
        .await
        .expect("settled");
    shares.push(rig.listener.end(call));
    // And a request between calls.
    run(
        &rig.listener,
        &python,
        &[
            script,
            "urllib",
            SECRET,
            "GET",
            &format!("https://api.fake.test/x?k={SECRET}"),
        ],
    )
    .await;
    let unattributed = rig.listener.take_unattributed();
    drop(guard);

    let logs = logs.text();
    assert!(
        printed.contains("POST 502"),
        "the failed forwards answered: {printed}"
    );
    assert!(
        logs.contains("api.unreachable.test") && logs.contains("api.fake.test"),
        "the failures were logged:\n{logs}"
    );
    let mut recorded = format!("{shares:?}\n{unattributed:?}\n");
    for share in &shares {
        for r in &share.requests {
            recorded += &r.describe();
        }
        for g in &share.gaps {
            recorded += &g.to_string();
        }
    }
    assert_eq!(shares[0].requests.len(), 6, "{shares:?}");
    assert_eq!(unattributed.len(), 1);
    let files: String = std::fs::read_dir(rig.egress.ca_files().dir())
        .unwrap()
        .map(|f| std::fs::read_to_string(f.unwrap().path()).unwrap())
        .collect();
    assert!(!files.contains("PRIVATE"), "no key is written");
    for (what, text) in [
        ("logs", &logs),
        ("shares", &recorded),
        ("answers", &printed),
        ("CA files", &files),
    ] {
        assert!(
            !text.contains(SECRET),
            "the secret is in the {what}:\n{text}"
        );
    }
    let seen = format!("{:?}", rig.fake.seen());
    assert!(
        seen.contains(SECRET),
        "the secret passed through to the API"
    );
}
