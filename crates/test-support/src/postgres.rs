//! A real PostgreSQL server of a test's own: `initdb` into a temporary directory, listening
//! on `127.0.0.1` on a free port (its unix socket in a directory of its own), with
//! `wal_level = logical` and `fsync = off`; restarted for real (`pg_ctl restart -m fast`),
//! stopped, started again on the same port, and killed and removed on drop.
//!
//! A test that restarts the database under a running proxy disturbs nobody else: no other
//! test connects to this server. The binaries are the newest under
//! `/usr/lib/postgresql/*/bin` (Debian's layout), else `initdb` on `PATH`. As root (CI), they
//! run as the `postgres` user (`runuser`), which owns the data directory: PostgreSQL refuses
//! to run as root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::server::{TempDir, as_service_user, free_port, is_root, wait_port};

/// The switch that makes missing PostgreSQL binaries fail a test instead of skipping it.
pub const REQUIRE: &str = "HINTAUDIT_REQUIRE_PG";

/// A private PostgreSQL server: superuser `postgres`, trust authentication, database
/// `postgres`.
#[derive(Debug)]
pub struct PgServer {
    bin: PathBuf,
    dir: TempDir,
    port: u16,
    running: bool,
}

impl PgServer {
    /// Makes a cluster in a new temporary directory and starts it on a free port, or `None`
    /// (with the reason printed) when the binaries are not installed and neither [`REQUIRE`]
    /// nor `HINTAUDIT_REQUIRE_ALL` is set.
    ///
    /// # Panics
    /// When the binaries are required and missing, when `initdb` fails, or when the server
    /// does not accept connections within 30 s.
    pub fn start(test: &str) -> Option<Self> {
        let Some(bin) = bin_dir() else {
            if crate::required(REQUIRE) {
                panic!("{test}: PostgreSQL's initdb is required ({REQUIRE}=1) but not installed");
            }
            eprintln!(
                "skipping {test}: PostgreSQL's binaries are not installed \
                 (/usr/lib/postgresql/*/bin; apt-get install postgresql)"
            );
            return None;
        };
        let dir = TempDir::new("pg");
        std::fs::create_dir_all(dir.path().join("socket")).expect("socket dir");
        if is_root() {
            let owned = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(dir.path())
                .status();
            assert!(
                owned.is_ok_and(|s| s.success()),
                "{test}: chown to the postgres user failed"
            );
        }
        let mut server = PgServer {
            bin,
            dir,
            port: free_port(),
            running: false,
        };
        let out = server
            .command("initdb")
            .arg("-D")
            .arg(server.data())
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .expect("initdb runs");
        assert!(
            out.status.success(),
            "{test}: initdb failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        server.pg_ctl("start");
        Some(server)
    }

    /// `postgres://postgres@127.0.0.1:<port>/<database>`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{database}", self.port)
    }

    /// The TCP port it listens on (the same across restarts).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A real restart (`pg_ctl restart -m fast`): every session is terminated (temporary
    /// replication slots go with theirs), the server shuts down cleanly and starts again on
    /// the same port. Returns once it accepts connections.
    ///
    /// # Panics
    /// When `pg_ctl` fails (the server log is in the message).
    pub fn restart(&mut self) {
        self.pg_ctl("restart");
    }

    /// Stops the server (`pg_ctl stop -m fast`); the port refuses connections after this.
    /// Does nothing when it is stopped.
    ///
    /// # Panics
    /// When `pg_ctl` fails.
    pub fn stop(&mut self) {
        if self.running {
            self.pg_ctl("stop");
        }
    }

    /// Starts a stopped server again on the same port; returns once it accepts connections.
    ///
    /// # Panics
    /// When `pg_ctl` fails.
    pub fn start_again(&mut self) {
        if !self.running {
            self.pg_ctl("start");
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn command(&self, program: &str) -> Command {
        as_service_user(&self.bin.join(program), "postgres")
    }

    fn pg_ctl(&mut self, action: &str) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c wal_level=logical -c fsync=off \
             -c synchronous_commit=on -c full_page_writes=off -c max_replication_slots=20 \
             -c max_wal_senders=20",
            self.port,
            self.dir.path().join("socket").display()
        );
        let log = self.dir.path().join("server.log");
        let mut cmd = self.command("pg_ctl");
        cmd.arg(action)
            .arg("-D")
            .arg(self.data())
            .args(["-w", "-t", "60", "-m", "fast"]);
        if action != "stop" {
            cmd.arg("-o").arg(&options).arg("-l").arg(&log);
        }
        let out = cmd
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .expect("pg_ctl runs");
        if !out.status.success() {
            let server_log = std::fs::read_to_string(&log).unwrap_or_default();
            panic!(
                "pg_ctl {action} failed: {}\n{server_log}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        self.running = action != "stop";
        if self.running {
            wait_port(self.port, Instant::now() + Duration::from_secs(30));
        }
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        if self.running {
            // Immediate: the directory goes next, nothing needs to be written.
            let _ = self
                .command("pg_ctl")
                .arg("stop")
                .arg("-D")
                .arg(self.data())
                .args(["-w", "-m", "immediate"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb`, else the directory of
/// `initdb` on `PATH`.
fn bin_dir() -> Option<PathBuf> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.split('.').next()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((version, bin))
        })
        .collect();
    found.sort();
    if let Some((_, bin)) = found.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .find(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
            .map(|d| Path::new(&d).to_path_buf())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn psql(server: &PgServer, sql: &str) -> String {
        crate::server::stdout_of(Command::new(server.bin.join("psql")).args([
            "-X",
            "-A",
            "-t",
            "-d",
            &server.url("postgres"),
            "-c",
            sql,
        ]))
    }

    #[test]
    fn a_private_server_restarts_stops_and_starts_on_its_port() {
        let Some(mut pg) = PgServer::start("a_private_server_restarts") else {
            return;
        };
        assert_eq!(psql(&pg, "SHOW wal_level"), "logical");
        let before = psql(&pg, "SELECT pg_postmaster_start_time()::text");
        pg.restart();
        assert_ne!(psql(&pg, "SELECT pg_postmaster_start_time()::text"), before);
        pg.stop();
        assert!(std::net::TcpStream::connect(("127.0.0.1", pg.port())).is_err());
        pg.start_again();
        assert_eq!(psql(&pg, "SELECT 1"), "1");
        let dir = pg.dir.path().to_path_buf();
        drop(pg);
        assert!(!dir.exists(), "the data directory is removed");
    }
}
