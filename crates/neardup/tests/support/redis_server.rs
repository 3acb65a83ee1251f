//! Real Redis servers for tests: [`RedisServer`] (one `redis-server` on a free loopback port)
//! and [`RedisCluster`] (three masters joined with `redis-cli --cluster create`), stopped on
//! drop. A missing `redis-server` fails the test with advice: these tests never skip.
//!
//! Shared by the library's unit tests (the store conformance suite) and the `redis`
//! integration test.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const MISSING: &str = "redis-server is not installed (or not on PATH): install the Debian \
    package redis-server (`apt-get install redis-server`; .ci/run does) — the Redis tests \
    never skip";

/// A port, and its cluster bus port (+10000), that nothing listens on now.
fn free_port() -> u16 {
    // Each process starts at its own offset so parallel test binaries rarely collide.
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let base = std::process::id() % 1000 * 30;
    loop {
        let i = NEXT.fetch_add(1, Ordering::SeqCst);
        let p = 20_000 + ((base + i) % 35_000) as u16;
        let free = |p: u16| TcpListener::bind(("127.0.0.1", p)).is_ok();
        if free(p) && free(p + 10_000) {
            return p;
        }
    }
}

fn temp_dir(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        // Shared servers live until their test process ends, so nothing removes their
        // directories then: remove those of processes that are gone.
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pid = name
                .strip_prefix("neardup-redis-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok());
            if let Some(pid) = pid {
                if !Path::new(&format!("/proc/{pid}")).exists() {
                    let _ = std::fs::remove_dir_all(e.path());
                }
            }
        }
    });
    let dir = std::env::temp_dir().join(format!(
        "neardup-redis-{}-{}-{tag}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Sends one inline command and returns the first reply line.
fn ask(port: u16, command: &str) -> Option<String> {
    let mut s =
        TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_millis(200))
            .ok()?;
    s.set_read_timeout(Some(Duration::from_millis(500))).ok()?;
    s.write_all(format!("{command}\r\n").as_bytes()).ok()?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = s.read(&mut buf).ok()?;
    Some(String::from_utf8_lossy(&buf[..n]).into_owned())
}

fn wait_ready(port: u16, child: &mut Child, log: &Path) -> Result<(), String> {
    let start = Instant::now();
    loop {
        if let Some(r) = ask(port, "PING") {
            if r.starts_with("+PONG") {
                return Ok(());
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            return Err(format!(
                "redis-server on port {port} exited ({status}) while starting:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            ));
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "redis-server on port {port} did not answer PING within 20 s:\n{}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// One `redis-server` process on 127.0.0.1.
#[derive(Debug)]
pub struct RedisServer {
    child: Option<Child>,
    /// Its port.
    pub port: u16,
    dir: PathBuf,
    extra: Vec<String>,
}

impl RedisServer {
    /// A server without persistence.
    pub fn start() -> RedisServer {
        Self::start_with(&["--save", "", "--appendonly", "no"])
    }

    /// A server whose acknowledged writes survive a crash: AOF with `appendfsync always`.
    pub fn start_persistent() -> RedisServer {
        Self::start_with(&[
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ])
    }

    fn start_with(extra: &[&str]) -> RedisServer {
        let mut s = RedisServer {
            child: None,
            port: free_port(),
            dir: temp_dir("server"),
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        };
        s.spawn_on_a_free_port();
        s
    }

    /// Starts the server, on another free port when it exits while starting: a port found
    /// free can be taken before the server binds it (by another test's server, or its
    /// cluster bus port, the port + 10,000).
    fn spawn_on_a_free_port(&mut self) {
        for attempt in 1.. {
            match self.try_spawn() {
                Ok(()) => return,
                Err(why) if attempt < 5 => {
                    eprintln!("{why}\n(trying another port)");
                    self.port = free_port();
                }
                Err(why) => panic!("{why}"),
            }
        }
    }

    fn spawn(&mut self) {
        if let Err(why) = self.try_spawn() {
            panic!("{why}");
        }
    }

    fn try_spawn(&mut self) -> Result<(), String> {
        let log = self.dir.join("redis.log");
        let mut cmd = Command::new("redis-server");
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args([
                "--bind",
                "127.0.0.1",
                "--protected-mode",
                "no",
                "--daemonize",
                "no",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&log)
            .args(&self.extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the server
        // when the thread that started it ends, so a crashed test leaves no server behind.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => panic!("{MISSING}"),
            Err(e) => panic!("starting redis-server: {e}"),
        };
        let ready = wait_ready(self.port, &mut child, &log);
        if ready.is_err() {
            let _ = child.kill();
            let _ = child.wait();
        } else {
            self.child = Some(child);
        }
        ready
    }

    /// `redis://127.0.0.1:PORT/0?prefix=PREFIX`.
    pub fn url(&self, prefix: &str) -> String {
        format!("redis://127.0.0.1:{}/0?prefix={prefix}", self.port)
    }

    /// Kills the server at once (SIGKILL: a crash, not a shutdown).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and directory (its AOF, if any, is replayed).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Runs `redis-cli` against it and returns its output.
    pub fn cli(&self, args: &[&str]) -> String {
        redis_cli(self.port, args)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Runs `redis-cli -p PORT ARGS…`.
pub fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("redis-cli: {e}: {MISSING}"));
    String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
}

/// Three masters on loopback, slots spread by `redis-cli --cluster create`.
#[derive(Debug)]
pub struct RedisCluster {
    /// The nodes.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts three cluster-enabled servers and joins them.
    pub fn start() -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                let mut s = RedisServer {
                    child: None,
                    port: free_port(),
                    dir: temp_dir("cluster"),
                    extra: Vec::new(),
                };
                s.extra = [
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--cluster-enabled",
                    "yes",
                    "--cluster-node-timeout",
                    "5000",
                    "--cluster-config-file",
                ]
                .iter()
                .map(|s| (*s).to_owned())
                .chain([s.dir.join("nodes.conf").display().to_string()])
                .collect();
                s.spawn_on_a_free_port();
                s
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = redis_cli(nodes[0].port, &args);
        assert!(
            out.contains("All 16384 slots covered"),
            "redis-cli --cluster create failed:\n{out}"
        );
        let start = Instant::now();
        for n in &nodes {
            loop {
                let info = ask(n.port, "CLUSTER INFO").unwrap_or_default();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    start.elapsed() < Duration::from_secs(30),
                    "cluster node {} not ready: {info}",
                    n.port
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        RedisCluster { nodes }
    }

    /// `redis+cluster://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/?prefix=PREFIX`.
    pub fn url(&self, prefix: &str) -> String {
        let hosts: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        format!("redis+cluster://{}/?prefix={prefix}", hosts.join(","))
    }
}

/// Starts `make` on a thread that lives as long as the test process, so the servers'
/// parent-death signal fires when the process ends, not when one test's thread does.
fn shared<T: Send + Sync + 'static>(make: fn() -> T) -> &'static T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let value: &'static T = Box::leak(Box::new(make()));
        tx.send(value).expect("receiver waits");
        loop {
            std::thread::park();
        }
    });
    rx.recv()
        .expect("server thread panicked: see its message above")
}

/// One server for every test of this process that only needs its own prefix.
pub fn shared_server() -> &'static RedisServer {
    static S: OnceLock<&'static RedisServer> = OnceLock::new();
    S.get_or_init(|| shared(RedisServer::start))
}

/// One cluster for every test of this process that only needs its own prefix.
pub fn shared_cluster() -> &'static RedisCluster {
    static S: OnceLock<&'static RedisCluster> = OnceLock::new();
    S.get_or_init(|| shared(RedisCluster::start))
}

/// A prefix no other test of any process uses.
pub fn unique_prefix(name: &str) -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!(
        "t{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    )
}
