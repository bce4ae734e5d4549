//! Real clients through the egress proxy, each sending the same sequence (a GET with a query,
//! a GraphQL mutation, a DELETE over HTTPS, a webhook POST over plain HTTP): every one is
//! recorded whole, the path templated, nothing else kept.

use std::path::PathBuf;

use hintaudit_egress::Forwarding;

use crate::support::{SECRET, client_sequence, clients, clients_python, python3, rig, tool};

async fn python_client(python: PathBuf, lib: &str) {
    let rig = rig(Forwarding::Listed).await;
    let script = clients().join("client.py");
    client_sequence(&rig, python, &[script.to_str().unwrap(), lib, SECRET]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_urllib() {
    let Some(python) = python3() else { return };
    python_client(python, "urllib").await;
}

/// Older axios's way: HTTPS sent to the proxy in plain text, in absolute form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absolute_form_https_in_plain_text() {
    let Some(python) = python3() else { return };
    python_client(python, "absolute").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_requests() {
    let Some(python) = clients_python() else {
        return;
    };
    python_client(python, "requests").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_httpx() {
    let Some(python) = clients_python() else {
        return;
    };
    python_client(python, "httpx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_aiohttp() {
    let Some(python) = clients_python() else {
        return;
    };
    python_client(python, "aiohttp").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl() {
    // client.sh runs curl from PATH.
    if tool(
        PathBuf::from("curl"),
        &["--version"],
        "HINTAUDIT_REQUIRE_CURL",
    )
    .is_none()
    {
        return;
    }
    let rig = rig(Forwarding::Listed).await;
    let script = clients().join("client.sh");
    client_sequence(&rig, "sh", &[script.to_str().unwrap(), SECRET]).await;
}

/// `node`, and its version as `(major, minor)`; or a printed skip.
fn node() -> Option<(PathBuf, (u32, u32))> {
    let node = tool(
        PathBuf::from("node"),
        &["--version"],
        "HINTAUDIT_REQUIRE_NPM",
    )?;
    let out = std::process::Command::new(&node)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text.trim().trim_start_matches('v').split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((node, (major, minor)))
}

/// Node's own clients follow the proxy variables with `NODE_USE_ENV_PROXY=1` from Node 22.21
/// and 24.5 (fetch from 24.0); an older Node ignores them and is skipped, saying so.
async fn node_builtin(lib: &str) {
    let Some((node, version)) = node() else {
        return;
    };
    let honours = matches!(version, (22, m) if m >= 21)
        || matches!(version, (24, m) if m >= 5)
        || version.0 >= 25;
    if !honours {
        eprintln!(
            "skipped: Node {}.{} does not honour NODE_USE_ENV_PROXY ({lib} needs Node 22.21 or 24.5 and later)",
            version.0, version.1
        );
        return;
    }
    let rig = rig(Forwarding::Listed).await;
    let script = clients().join("client.mjs");
    client_sequence(&rig, node, &[script.to_str().unwrap(), lib, SECRET]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_fetch() {
    node_builtin("fetch").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_https() {
    node_builtin("https").await;
}

/// axios (installed by .ci/run under `HINTAUDIT_NPM_PREFIX`) reads the proxy variables itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_axios() {
    let Some((node, _)) = node() else { return };
    let prefix = std::env::var("HINTAUDIT_NPM_PREFIX").map_or_else(
        |_| PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cache/hintaudit-npm"),
        PathBuf::from,
    );
    let axios = prefix.join("node_modules/axios");
    if !axios.join("package.json").is_file() {
        let why = format!("axios is not installed under {}", prefix.display());
        assert!(
            !hintaudit_test_support::required("HINTAUDIT_REQUIRE_NPM"),
            "{why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let rig = rig(Forwarding::Listed).await;
    let script = clients().join("client.mjs");
    client_sequence(
        &rig,
        node,
        &[
            script.to_str().unwrap(),
            "axios",
            SECRET,
            axios.to_str().unwrap(),
        ],
    )
    .await;
}

/// Go's default transport (net/http): `HTTPS_PROXY` and `SSL_CERT_FILE`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_net_http() {
    let Some(go) = tool(PathBuf::from("go"), &["version"], "HINTAUDIT_REQUIRE_GO") else {
        return;
    };
    let rig = rig(Forwarding::Listed).await;
    let script = clients().join("client.go");
    client_sequence(&rig, go, &["run", script.to_str().unwrap(), SECRET]).await;
}
