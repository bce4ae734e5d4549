//! The child's environment: the proxy variables name its listener, `NO_PROXY` is gone, and
//! the CA files hold what each runtime needs: the test CA alone, and the system roots
//! followed by it (Python's `ssl` loads both whole).

use hintaudit_egress::{NO_PROXY_VARIABLES, PROXY_VARIABLES};

use crate::support::{python3, rig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_child_gets_the_proxy_and_the_ca_files() {
    let Some(python) = python3() else { return };
    let rig = rig(hintaudit_egress::Forwarding::Listed).await;
    let files = rig.egress.ca_files();
    let code = "import json, os, ssl\n\
        def count(path):\n    c = ssl.create_default_context(cafile=path)\n    return c.cert_store_stats()['x509_ca']\n\
        print(json.dumps({'env': dict(os.environ), 'ca': count(os.environ['NODE_EXTRA_CA_CERTS']),\n\
                          'bundle': count(os.environ['SSL_CERT_FILE'])}))\n";
    let mut cmd = std::process::Command::new(python);
    cmd.args(["-c", code])
        .env("NO_PROXY", "api.fake.test")
        .env("no_proxy", "*");
    rig.listener.environment().apply(&mut cmd);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let env = &seen["env"];
    for name in PROXY_VARIABLES {
        assert_eq!(env[name], rig.listener.url(), "{name}");
    }
    for name in NO_PROXY_VARIABLES {
        assert!(env.get(name).is_none(), "{name} removed");
    }
    assert_eq!(env["NODE_USE_ENV_PROXY"], "1");
    let bundle = files.bundle().to_str().unwrap();
    for name in ["SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"] {
        assert_eq!(env[name], bundle, "{name}");
    }
    assert_eq!(env["NODE_EXTRA_CA_CERTS"], files.ca().to_str().unwrap());
    assert_eq!(seen["ca"], 1, "ca.pem holds the test CA alone");
    // Distinct system roots as OpenSSL counts them, and the test CA.
    let bundle_count = seen["bundle"].as_u64().unwrap() as usize;
    assert!(bundle_count >= 2 || files.system_roots() == 0, "{seen}");
    assert!(bundle_count <= files.system_roots() + 1, "{seen}");
    let ca = std::fs::read_to_string(files.ca()).unwrap();
    assert!(
        std::fs::read_to_string(files.bundle())
            .unwrap()
            .ends_with(&ca),
        "the CA last"
    );
}
