//! A real MariaDB server of a test's own: `mariadb-install-db` (or `mysql_install_db`) into a
//! temporary directory, `mariadbd` (or `mysqld`) on `127.0.0.1` on a free port with a socket
//! of its own, its binary log on in ROW format (`--log-bin`, `--binlog-format=ROW`,
//! `--server-id=1`, `--log-bin-trust-function-creators=1`); restarted for real (a clean
//! shutdown on `SIGTERM`, then the same data directory and port again), run with no TCP
//! clients for maintenance ([`MariaDbServer::offline_sql`]), and killed and removed on drop.
//!
//! The binary log is a file in the data directory, so it survives a restart: the server
//! starts a new file and keeps the old ones. As root (CI) the server runs with `--user=root`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{TempDir, free_port, is_root};

/// The switch that makes a missing MariaDB fail a test instead of skipping it.
pub const REQUIRE: &str = "HINTAUDIT_REQUIRE_MYSQL";

/// A private MariaDB server: user `root` without a password, over TCP from `127.0.0.1`.
#[derive(Debug)]
pub struct MariaDbServer {
    server: PathBuf,
    dir: TempDir,
    port: u16,
    child: Option<Child>,
}

impl MariaDbServer {
    /// Installs a data directory in a new temporary directory and starts the server on a free
    /// port, or `None` (with the reason printed) when `mariadbd` or its installer is missing
    /// and neither [`REQUIRE`] nor `HINTAUDIT_REQUIRE_ALL` is set.
    ///
    /// # Panics
    /// When the binaries are required and missing, when the installer fails, or when the
    /// server does not accept connections within 60 s.
    pub fn start(test: &str) -> Option<Self> {
        let found = (
            find(&["mariadbd", "mysqld"]),
            find(&["mariadb-install-db", "mysql_install_db"]),
        );
        let (Some(server), Some(install)) = found else {
            if crate::required(REQUIRE) {
                panic!("{test}: mariadbd and mariadb-install-db are required ({REQUIRE}=1)");
            }
            eprintln!(
                "skipping {test}: mariadbd or mariadb-install-db is not installed \
                 (apt-get install mariadb-server)"
            );
            return None;
        };
        let dir = TempDir::new("mariadb");
        let mut me = MariaDbServer {
            server,
            dir,
            port: free_port(),
            child: None,
        };
        let mut cmd = Command::new(install);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", me.data().display()))
            .args([
                "--auth-root-authentication-method=normal",
                "--skip-test-db",
                "--innodb-buffer-pool-size=32M",
            ]);
        if is_root() {
            cmd.arg("--user=root");
        }
        let out = cmd.output().expect("mariadb-install-db runs");
        assert!(
            out.status.success(),
            "{test}: mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        me.start_again();
        Some(me)
    }

    /// `mysql://root@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{database}", self.port)
    }

    /// The TCP port it listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A real restart: a clean shutdown ([`MariaDbServer::stop`]), then the server starts
    /// again on the same data directory and port (a new binary log file; the old ones stay).
    /// Returns once it accepts connections.
    ///
    /// # Panics
    /// As [`MariaDbServer::stop`] and [`MariaDbServer::start_again`].
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Shuts the server down cleanly (`SIGTERM`, then waits for it to exit): every
    /// connection is closed and the port refuses connections after this. Does nothing when
    /// it is stopped.
    ///
    /// # Panics
    /// When `kill` cannot be run.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let sent = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status()
                .expect("kill runs");
            if !sent.success() {
                let _ = child.kill();
            }
            let _ = child.wait();
        }
    }

    /// Starts the server (stopped, or not yet started) on the same data directory and port;
    /// returns once it accepts connections.
    ///
    /// # Panics
    /// When it cannot be spawned, or exits or does not listen within 60 s (its error log is
    /// in the message).
    pub fn start_again(&mut self) {
        self.spawn(true);
    }

    /// Runs `sql` (statements separated by `;`) while the server is up but unreachable over
    /// TCP: it starts with `--skip-networking`, the `mariadb` client runs `sql` over its
    /// socket, and it shuts down cleanly. What an operator does while no client can connect
    /// (say `PURGE BINARY LOGS`). Stops the server first if it runs; leaves it stopped.
    ///
    /// # Panics
    /// When the server does not start, or the client is missing or `sql` fails.
    pub fn offline_sql(&mut self, sql: &str) {
        self.stop();
        self.spawn(false);
        let client = find(&["mariadb", "mysql"]).expect("the mariadb client");
        let out = Command::new(client)
            .arg("--no-defaults")
            .arg(format!("--socket={}", self.socket().display()))
            .args(["-u", "root", "-e", sql])
            .output()
            .expect("the mariadb client runs");
        self.stop();
        assert!(
            out.status.success(),
            "{sql}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Starts the server; returns once it accepts connections, over TCP when `network`, else
    /// on its socket (started with `--skip-networking`).
    fn spawn(&mut self, network: bool) {
        if self.child.is_some() {
            return;
        }
        let path = |name: &str| self.dir.path().join(name).display().to_string();
        let mut cmd = Command::new(&self.server);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", self.data().display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", path("mysqld.pid")))
            .arg(format!("--log-error={}", path("error.log")))
            .arg(format!(
                "--log-bin={}",
                self.data().join("binlog").display()
            ))
            .arg(format!("--port={}", self.port))
            .args([
                "--bind-address=127.0.0.1",
                "--binlog-format=ROW",
                "--server-id=1",
                "--log-bin-trust-function-creators=1",
                "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=2",
            ]);
        if is_root() {
            cmd.arg("--user=root");
        }
        if !network {
            cmd.arg("--skip-networking");
        }
        let child = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("mariadbd starts");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(60);
        let up = |me: &Self| {
            if network {
                std::net::TcpStream::connect(("127.0.0.1", me.port)).is_ok()
            } else {
                std::os::unix::net::UnixStream::connect(me.socket()).is_ok()
            }
        };
        while !up(self) {
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            if exited.is_some() || Instant::now() > deadline {
                let log = std::fs::read_to_string(path("error.log")).unwrap_or_default();
                panic!(
                    "mariadbd did not listen on {} ({exited:?}):\n{log}",
                    self.port
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("mysqld.sock")
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for MariaDbServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The first of `names` found on `PATH`, `/usr/sbin` or `/usr/bin`.
fn find(names: &[&str]) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin".into(), "/usr/bin".into()]);
    names
        .iter()
        .find_map(|n| dirs.iter().map(|d| d.join(n)).find(|p| p.is_file()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(server: &MariaDbServer, sql: &str) -> String {
        let client = find(&["mariadb", "mysql"]).expect("the mariadb client");
        crate::server::stdout_of(
            Command::new(client)
                .args(["--no-defaults", "-h", "127.0.0.1", "-u", "root", "-N", "-B"])
                .arg(format!("-P{}", server.port()))
                .args(["-e", sql]),
        )
    }

    #[test]
    fn a_private_server_keeps_its_binary_log_across_a_restart() {
        let Some(mut my) = MariaDbServer::start("a_private_server_keeps_its_binary_log") else {
            return;
        };
        assert_eq!(sql(&my, "SELECT @@log_bin, @@binlog_format"), "1\tROW");
        let first = sql(&my, "SHOW MASTER STATUS");
        my.restart();
        let logs = sql(&my, "SHOW BINARY LOGS");
        let file = first.split('\t').next().unwrap_or_default();
        assert!(logs.contains(file), "{file} kept: {logs}");
        assert!(
            logs.lines().count() >= 2,
            "a new file after the restart: {logs}"
        );
        let dir = my.dir.path().to_path_buf();
        drop(my);
        assert!(!dir.exists(), "the data directory is removed");
    }
}
