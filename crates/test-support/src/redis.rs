//! A real `redis-server` of a test's own, on a free loopback port: started, stopped and
//! started again on the same port (a store that goes down and comes back), killed on drop.
//!
//! Each test gets its own server, so tests run in parallel without sharing keys, and none
//! touches a Redis the machine runs for something else.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The switch that makes a missing `redis-server` fail a test instead of skipping it.
pub const REQUIRE: &str = "HINTAUDIT_REQUIRE_REDIS";

/// A `redis-server` child process on `127.0.0.1:port`, nothing saved to disk.
#[derive(Debug)]
pub struct RedisServer {
    port: u16,
    child: Option<Child>,
    /// The TLS port and the directory of its self-signed certificate, when TLS is on.
    tls: Option<(u16, std::path::PathBuf)>,
}

impl RedisServer {
    /// Starts a server on a free port, or `None` (with the reason printed) when
    /// `redis-server` is not installed and neither [`REQUIRE`] nor `HINTAUDIT_REQUIRE_ALL` is
    /// set. Panics when it is required and missing, or does not answer `PING` within 20 s.
    pub fn start(test: &str) -> Option<Self> {
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            if crate::required(REQUIRE) {
                panic!("{test}: redis-server is required ({REQUIRE}=1) but not installed");
            }
            eprintln!(
                "skipping {test}: redis-server is not installed (apt-get install redis-server)"
            );
            return None;
        }
        let mut server = RedisServer {
            port: free_port(),
            child: None,
            tls: None,
        };
        server.restart();
        Some(server)
    }

    /// [`RedisServer::start`], also serving TLS on a second port with a self-signed
    /// certificate made by `openssl` for `127.0.0.1` (clients skip its verification:
    /// `rediss://…/0#insecure`). `None` as `start`, or when `openssl` is missing.
    pub fn start_tls(test: &str) -> Option<Self> {
        let mut server = RedisServer::start(test)?;
        let dir = std::env::temp_dir().join(format!("hintaudit-redis-tls-{}", server.port));
        std::fs::create_dir_all(&dir).expect("certificate dir");
        let made = Command::new("openssl")
            .args([
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            ])
            .args([
                "-subj",
                "/CN=127.0.0.1",
                "-keyout",
                "key.pem",
                "-out",
                "cert.pem",
            ])
            .current_dir(&dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if !made.is_ok_and(|s| s.success()) {
            if crate::required(REQUIRE) {
                panic!("{test}: openssl could not make a certificate");
            }
            eprintln!("skipping {test}: openssl is not installed");
            return None;
        }
        server.tls = Some((free_port(), dir));
        server.restart();
        Some(server)
    }

    /// `rediss://127.0.0.1:<tls port>/0#insecure`, when started with TLS.
    pub fn tls_url(&self) -> Option<String> {
        let (port, _) = self.tls.as_ref()?;
        Some(format!("rediss://127.0.0.1:{port}/0#insecure"))
    }

    /// `redis://127.0.0.1:<port>/0`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills the server and waits for it to exit: the port refuses connections after this.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same port, empty, and waits until it answers `PING`.
    pub fn restart(&mut self) {
        self.stop();
        let mut command = Command::new("redis-server");
        command
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ]);
        if let Some((port, dir)) = &self.tls {
            let file = |f: &str| dir.join(f).display().to_string();
            command
                .args(["--tls-port", &port.to_string()])
                .args(["--tls-cert-file", &file("cert.pem")])
                .args(["--tls-key-file", &file("key.pem")])
                .args(["--tls-ca-cert-file", &file("cert.pem")])
                .args(["--tls-auth-clients", "no"]);
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn redis-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !self.pong() {
            assert!(
                Instant::now() < deadline,
                "redis-server on port {} did not answer PING",
                self.port
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pong(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return false;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
        let mut buf = [0u8; 7];
        stream.write_all(b"PING\r\n").is_ok()
            && stream.read_exact(&mut buf).is_ok()
            && &buf == b"+PONG\r\n"
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
        if let Some((_, dir)) = &self.tls {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free loopback port")
        .port()
}
