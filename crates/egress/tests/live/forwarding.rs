//! What is forwarded where: routes keep the Host and the path, verify's forwarding refuses
//! what is neither routed nor allowed, the proxy's forwards everything, and upstream TLS is
//! never left unverified.

use hintaudit_core::{OutboundAnswer, OutboundReach};
use hintaudit_egress::{Egress, Forwarding};
use hintaudit_test_support::fake_api::FakeApi;

use crate::support::{SECRET, clients, python3, rig, routed, run};

/// One request with Python's urllib (through the listener's proxy): what it printed.
async fn one(rig_listener: &hintaudit_egress::EgressListener, method: &str, url: &str) -> String {
    let python = python3().expect("checked by the caller");
    let script = clients().join("client.py");
    let out = run(
        rig_listener,
        python,
        &[script.to_str().unwrap(), "urllib", SECRET, method, url],
    )
    .await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// verify's forwarding: a host neither routed nor allowed gets 502 from the proxy, recorded
/// as not forwarded; nothing reaches the fake.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_neither_routed_nor_allowed_are_refused() {
    if python3().is_none() {
        return;
    }
    let rig = rig(Forwarding::Listed).await;
    let call = rig.listener.begin("t");
    let printed = one(&rig.listener, "POST", "https://api.other.test/v1/pages").await;
    let share = rig.listener.end(call);
    assert_eq!(printed, "POST 502\n");
    assert_eq!(
        share.requests,
        [OutboundReach::new("POST", "api.other.test", Some(443))
            .with_path("/v1/pages")
            .with_answer(OutboundAnswer::NotForwarded)]
    );
    assert!(rig.fake.seen().is_empty());
}

/// The proxy's forwarding: a request with no route goes to its real destination (here the
/// fake's own address, its TLS verified against the extra CA).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_is_forwarded_to_its_real_destination() {
    if python3().is_none() {
        return;
    }
    let rig = rig(Forwarding::All).await;
    let call = rig.listener.begin("t");
    let https = format!("{}/v1/items/7", rig.fake.https_url());
    let http = format!("{}/v1/comments", rig.fake.http_url());
    let mut printed = one(&rig.listener, "GET", &https).await;
    printed += &one(&rig.listener, "POST", &http).await;
    let share = rig.listener.end(call);
    assert_eq!(printed, "GET 200\nPOST 201\n");
    let port = |url: &str| url.rsplit(':').next().unwrap().parse::<u16>().unwrap();
    assert_eq!(
        share.requests,
        [
            OutboundReach::new("GET", "localhost", Some(port(&rig.fake.https_url())))
                .with_path("/v1/items/{id}")
                .with_answer(OutboundAnswer::Status(200)),
            OutboundReach::new("POST", "127.0.0.1", Some(port(&rig.fake.http_url())))
                .with_path("/v1/comments")
                .with_answer(OutboundAnswer::Status(201)),
        ]
    );
    assert_eq!(rig.fake.seen().len(), 2);
}

/// An upstream whose certificate the proxy cannot verify (the fake's CA not given) is not
/// reached: 502, recorded as not delivered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_tls_is_never_left_unverified() {
    if python3().is_none() {
        return;
    }
    let fake = FakeApi::start().await;
    let egress = routed(Egress::builder(Forwarding::Listed), &fake)
        .build()
        .unwrap();
    let listener = egress.listen().await.unwrap();
    let call = listener.begin("t");
    let printed = one(&listener, "DELETE", "https://api.fake.test/v1/items/7").await;
    let share = listener.end(call);
    assert_eq!(printed, "DELETE 502\n");
    assert_eq!(
        share.requests,
        [OutboundReach::new("DELETE", "api.fake.test", Some(443))
            .with_path("/v1/items/{id}")
            .with_answer(OutboundAnswer::Failed)]
    );
    assert!(
        fake.seen().is_empty(),
        "nothing reached an unverified upstream"
    );
}

/// One listener per child: what one child sends is never another listener's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listeners_keep_their_own_requests() {
    if python3().is_none() {
        return;
    }
    let rig = rig(Forwarding::Listed).await;
    let other = rig.egress.listen().await.unwrap();
    let (a, b) = (rig.listener.begin("t"), other.begin("t"));
    one(&rig.listener, "GET", "https://api.fake.test/v1/items/7").await;
    assert_eq!(rig.listener.end(a).requests.len(), 1);
    assert_eq!(other.end(b), Default::default());
}
