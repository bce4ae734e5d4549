//! The real servers of the stack test, each a child process on loopback with a temporary data
//! directory, stopped when its handle drops: audited bookings replicas, Prometheus with the
//! shipped rules, Alertmanager, and a webhook receiver inside the test.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The Alertmanager binary of Debian's `prometheus-alertmanager` package, or upstream's name.
pub fn alertmanager_bin() -> Option<&'static str> {
    ["prometheus-alertmanager", "alertmanager"]
        .into_iter()
        .find(|b| crate::support::runs(b, &["--version"]))
}

/// A free loopback port (bound, then released: a small race, fine on a test machine).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A child process, killed and reaped on drop.
pub struct Proc {
    name: String,
    child: Child,
}

impl Proc {
    fn spawn(name: &str, cmd: &mut Command) -> Proc {
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name}: {e}"));
        Proc {
            name: name.to_owned(),
            child,
        }
    }

    /// Stops the process and waits for it.
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Panics with the process's name when it has exited.
    pub fn assert_running(&mut self) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited early: {status}", self.name);
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One audited bookings replica: `bookings --http ADDR --audit` serving /mcp and /metrics.
pub struct Replica {
    pub addr: SocketAddr,
    proc: Proc,
}

impl Replica {
    /// Starts a replica on `port` (0 picks one) against `database_url`, and waits until it
    /// says where it serves. Its stderr (findings, logs) is drained on a thread of its own.
    pub fn start(bin: &Path, database_url: &str, port: u16, name: &str) -> Replica {
        let mut cmd = Command::new(bin);
        cmd.args(["--http", &format!("127.0.0.1:{port}"), "--audit"])
            .env("DATABASE_URL", database_url)
            .env("RUST_LOG", "warn")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut proc = Proc::spawn(name, &mut cmd);
        let stderr = proc.child.stderr.take().expect("piped stderr");
        let (tx, rx) = mpsc::channel();
        let label = name.to_owned();
        std::thread::spawn(move || {
            let mut tx = Some(tx);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.split("serving http://").nth(1)
                    && let Some(t) = tx.take()
                {
                    let _ = t.send(rest.trim_end_matches("/mcp").trim().to_owned());
                } else if line.contains("ERROR") && !line.contains("hintaudit") {
                    eprintln!("[{label}] {line}");
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                proc.assert_running();
                panic!("{name} did not say where it serves within 60 s")
            })
            .parse()
            .expect("a socket address");
        Replica { addr, proc }
    }

    /// The MCP endpoint.
    pub fn mcp_url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops the replica (a restart is a new [`Replica::start`] on the same port).
    pub fn stop(mut self) {
        self.proc.stop();
    }
}

/// A Prometheus server scraping `targets` every second, evaluating `rules_file` every second
/// and sending alerts to `alertmanager`.
pub struct Prometheus {
    pub url: String,
    _proc: Proc,
    _dir: tempfile::TempDir,
}

impl Prometheus {
    pub async fn start(
        targets: &[SocketAddr],
        rules_file: &Path,
        alertmanager: &str,
    ) -> Prometheus {
        let dir = tempfile::tempdir().expect("temp dir");
        let targets: Vec<String> = targets.iter().map(|a| format!("'{a}'")).collect();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
             rule_files:\n  - '{rules}'\n\
             alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['{alertmanager}']\n\
             scrape_configs:\n  - job_name: hintaudit\n    metrics_path: /metrics\n    \
             static_configs:\n      - targets: [{targets}]\n",
            rules = rules_file.display(),
            targets = targets.join(", "),
        );
        let config_path = dir.path().join("prometheus.yml");
        std::fs::write(&config_path, config).expect("write prometheus.yml");
        let port = free_port();
        let mut cmd = Command::new("prometheus");
        cmd.arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log_file(dir.path(), "prometheus.log"));
        let proc = Proc::spawn("prometheus", &mut cmd);
        let url = format!("http://127.0.0.1:{port}");
        wait_ready(&format!("{url}/-/ready"), "prometheus", dir.path()).await;
        Prometheus {
            url,
            _proc: proc,
            _dir: dir,
        }
    }
}

/// A real Alertmanager on a loopback port, with a temporary storage directory.
pub struct Alertmanager {
    pub addr: String,
    _proc: Proc,
    _dirs: Vec<tempfile::TempDir>,
}

impl Alertmanager {
    /// Alertmanager routing every alert to `webhook` at once (group_wait 1 s).
    pub async fn start(bin: &str, webhook: &str) -> Alertmanager {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = format!(
            "route:\n  receiver: test\n  group_by: [alertname, tool, rule, stage]\n  \
             group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 1h\n\
             receivers:\n  - name: test\n    webhook_configs:\n      - url: '{webhook}'\n        \
             send_resolved: false\n"
        );
        let config_path = dir.path().join("alertmanager.yml");
        std::fs::write(&config_path, config).expect("write alertmanager.yml");
        let mut am = Alertmanager::with_config(bin, &config_path).await;
        am._dirs.push(dir);
        am
    }

    /// Alertmanager with the config file at `config`, once it answers `/-/ready`.
    pub async fn with_config(bin: &str, config: &Path) -> Alertmanager {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut cmd = Command::new(bin);
        cmd.arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(log_file(dir.path(), "alertmanager.log"));
        let proc = Proc::spawn("alertmanager", &mut cmd);
        let addr = format!("127.0.0.1:{port}");
        wait_ready(
            &format!("http://{addr}/-/ready"),
            "alertmanager",
            dir.path(),
        )
        .await;
        Alertmanager {
            addr,
            _proc: proc,
            _dirs: vec![dir],
        }
    }
}

fn log_file(dir: &Path, name: &str) -> Stdio {
    std::fs::File::create(dir.join(name))
        .map(Stdio::from)
        .unwrap_or_else(|_| Stdio::null())
}

/// Polls `url` until it answers 200, for up to 60 s; panics with the server's log otherwise.
async fn wait_ready(url: &str, what: &str, dir: &Path) {
    let http = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        let answer = http.get(url).timeout(Duration::from_secs(2)).send().await;
        if answer.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let log = std::fs::read_to_string(dir.join(format!("{what}.log"))).unwrap_or_default();
    panic!("{what} not ready at {url} within 60 s; its log:\n{log}");
}

/// An Alertmanager webhook receiver inside the test: every alert of every notification.
#[derive(Clone, Default)]
pub struct Webhook {
    alerts: Arc<Mutex<Vec<Value>>>,
}

impl Webhook {
    /// Serves `POST /alerts` on a loopback port; returns the receiver and its URL.
    pub async fn start() -> (Webhook, String) {
        let hook = Webhook::default();
        let seen = hook.alerts.clone();
        let app = axum::Router::new().route(
            "/alerts",
            axum::routing::post(move |axum::Json(body): axum::Json<Value>| {
                let seen = seen.clone();
                async move {
                    let alerts = body["alerts"].as_array().cloned().unwrap_or_default();
                    seen.lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .extend(alerts);
                    "ok"
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind webhook");
        let url = format!("http://{}/alerts", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (hook, url)
    }

    /// Every alert received so far.
    pub fn alerts(&self) -> Vec<Value> {
        self.alerts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
