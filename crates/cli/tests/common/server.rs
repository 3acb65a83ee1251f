//! A running `neardup serve` on a free loopback port, and HTTP to it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A running server; killed when dropped (also when a test panics).
pub struct Server {
    pub child: Child,
    pub base: String,
    pub token: Option<String>,
    pub log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts a server on the store `store` in `dir` that requires the bearer token
    /// `s3cret-token`, read from a token file it writes in `dir`. The client sends no token
    /// until its `token` is set.
    pub fn start_with_token(dir: &Path, store: &str) -> Server {
        let token_file = dir.join("token");
        std::fs::write(&token_file, "s3cret-token\n").unwrap();
        Server::start(
            &dir.join(store),
            &["--token-file", token_file.to_str().unwrap()],
        )
    }

    pub fn start(store: &Path, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_neardup"))
            .arg("serve")
            .arg("--store")
            .arg(store)
            .args(["--listen", "127.0.0.1:0"])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        // The server prints the address it bound (port 0: the kernel picks a free one);
        // the rest of stderr is kept for failure messages.
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        {
            let log = log.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    if let Some(rest) = line.split("listening on http://").nth(1) {
                        let addr = rest.split_whitespace().next().unwrap_or("").to_owned();
                        let _ = tx.send(addr);
                    }
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            });
        }
        let mut server = Server {
            child,
            base: String::new(),
            token: None,
            log,
        };
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(addr) => server.base = format!("http://{addr}"),
            Err(_) => panic!("the server did not start: {}", server.log()),
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok((200, _)) = server.try_call("GET", "/healthz", None) {
                break;
            }
            assert!(Instant::now() < deadline, "no /healthz: {}", server.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        server
    }

    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn try_call(
        &self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> Result<(u16, String), ureq::Error> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(60)))
            .build()
            .into();
        let url = format!("{}{path}", self.base);
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let mut response = match method {
            "GET" | "DELETE" => {
                let mut r = if method == "GET" {
                    agent.get(&url)
                } else {
                    agent.delete(&url)
                };
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()?
            }
            "POST" | "PUT" => {
                let mut r = if method == "POST" {
                    agent.post(&url)
                } else {
                    agent.put(&url)
                }
                .header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(body.unwrap_or(""))?
            }
            other => panic!("method {other}"),
        };
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string()?;
        Ok((status, text))
    }

    /// A request; returns the status and the body parsed as JSON (or as a string).
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string());
        let (status, text) = self
            .try_call(method, path, body.as_deref())
            .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", self.log()));
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    pub fn raw(&self, method: &str, path: &str, body: &str) -> (u16, Value) {
        let (status, text) = self
            .try_call(method, path, Some(body))
            .unwrap_or_else(|e| panic!("{method} {path}: {e}\n{}", self.log()));
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value)
    }

    /// A request written byte for byte (`head` without the request line's end, no
    /// `Content-Length`, no `Connection`): for headers a client library would add or fix.
    pub fn http(&self, head: &str, body: &str) -> (u16, Value) {
        let addr = self.base.trim_start_matches("http://");
        let mut conn = TcpStream::connect(addr).expect("connect");
        write!(
            conn,
            "{head}\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .expect("write");
        conn.set_read_timeout(Some(Duration::from_secs(60)))
            .expect("timeout");
        let mut response = String::new();
        conn.read_to_string(&mut response).expect("read");
        let status = response
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {response:?}"));
        let text = response.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        let value = serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()));
        (status, value)
    }

    /// Posts `record` to /v1/records with the `headers` given, written byte for byte as
    /// [`Server::http`] does, and asserts that it was stored as a new record.
    #[track_caller]
    pub fn assert_posted_record_is_new(&self, headers: &str, record: &str) {
        let (status, answer) =
            self.http(&format!("POST /v1/records HTTP/1.1\r\n{headers}"), record);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["decision"], "new");
    }

    pub fn insert(&self, record: Value) -> Value {
        let (status, answer) = self.call("POST", "/v1/records", Some(&record));
        assert_eq!(status, 200, "{record} -> {answer}");
        answer
    }

    /// Inserts the record `id` of text `text` and asserts that it was stored as new.
    #[track_caller]
    pub fn assert_inserts_new(&self, id: &str, text: &str) {
        let answer = self.insert(json!({"id": id, "text": text}));
        assert_eq!(answer["decision"], "new");
    }

    pub fn query(&self, record: Value) -> Value {
        let (status, answer) = self.call("POST", "/v1/query", Some(&record));
        assert_eq!(status, 200, "{record} -> {answer}");
        answer
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGKILL, as `kill -9`.
    pub fn kill9(mut self) {
        self.child.kill().expect("kill -9");
        self.child.wait().expect("wait");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
