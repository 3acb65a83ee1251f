//! What the CLI's integration tests share: running the built `neardup` in a directory as a
//! user would, reading what it wrote, finding the fixtures.

// Each test binary uses the part it needs.
#![allow(dead_code)]

pub mod server;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// What a run of the binary gave back.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Asserts that the run exited with `code` and said `needle` on stderr.
    #[track_caller]
    pub fn assert_fails(&self, code: i32, needle: &str) {
        assert_eq!(self.code, code, "{}", self.stderr);
        assert!(self.stderr.contains(needle), "{}", self.stderr);
    }

    /// Asserts that the run exited 0, showing its stderr when it did not.
    #[track_caller]
    pub fn assert_ok(&self) {
        assert_eq!(self.code, 0, "{}", self.stderr);
    }

    /// What the run printed on stdout, parsed as one JSON value.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).expect("JSON on stdout")
    }

    /// Asserts that the run exited with `code` and printed `needle` on stdout.
    #[track_caller]
    pub fn assert_prints(&self, code: i32, needle: &str) {
        assert_eq!(self.code, code, "{}", self.stderr);
        assert!(self.stdout.contains(needle), "{}", self.stdout);
    }
}

/// Runs the binary in `dir` with `args`, an empty stdin and the environment given.
pub fn neardup_env(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    spawn(dir, args, None, env)
}

/// Runs the binary in `dir` with `args` and an empty stdin.
pub fn neardup(dir: &Path, args: &[&str]) -> Run {
    spawn(dir, args, None, &[])
}

/// Runs the binary in `dir` with `args`, `stdin` written to its standard input.
pub fn neardup_stdin(dir: &Path, args: &[&str], stdin: &[u8]) -> Run {
    spawn(dir, args, Some(stdin), &[])
}

/// Starts the binary in `dir` with `args` and leaves it running, its stdout and stderr
/// going where given.
pub fn start(dir: &Path, args: &[&str], stdout: Stdio, stderr: Stdio) -> Child {
    Command::new(env!("CARGO_BIN_EXE_neardup"))
        .args(args)
        .current_dir(dir)
        .stdout(stdout)
        .stderr(stderr)
        .spawn()
        .expect("the binary runs")
}

fn spawn(dir: &Path, args: &[&str], stdin: Option<&[u8]>, env: &[(&str, &str)]) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_neardup"));
    cmd.args(args).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    {
        let mut pipe = child.stdin.take().expect("stdin");
        // A command that fails on its arguments exits without reading: a broken pipe here
        // is part of what the test observes, not a failure of the harness.
        if let Err(e) = pipe.write_all(stdin.unwrap_or_default()) {
            assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "write stdin: {e}");
        }
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("wait");
    Run {
        code: status.code().unwrap_or(-1),
        stdout: String::from_utf8(stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(stderr).expect("utf-8 stderr"),
    }
}

/// A file or folder under `crates/neardup/tests/data`.
pub fn data(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../neardup/tests/data")
        .join(rel)
}

/// Writes `contents` to the file `name` in `dir`.
#[track_caller]
pub fn write(dir: &Path, name: &str, contents: impl AsRef<[u8]>) {
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A JSON Lines file, one value a line.
pub fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect()
}

/// The `report.json` in `dir`.
pub fn report(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("a JSON report")
}

/// A command line's words, split at white space: `argv("dedup in.jsonl --out o")`.
pub fn argv(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// Runs the binary in `dir` with the words of `line` as its arguments.
pub fn cmd(dir: &Path, line: &str) -> Run {
    neardup(dir, &argv(line))
}

/// Asserts that `text` contains `needle`, showing `text` when it does not.
#[track_caller]
pub fn assert_contains(text: &str, needle: &str) {
    assert!(text.contains(needle), "{text}");
}

/// Asserts that `text` contains every one of `needles`, naming the one missing.
#[track_caller]
pub fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}
