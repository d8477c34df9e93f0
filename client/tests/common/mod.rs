//! Helpers shared by the end-to-end tests: the built binaries, and running a job while reading
//! its log lines.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A binary of this workspace (they are built next to `yarn-submit`).
pub fn bin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_yarn-submit")).with_file_name(name)
}

/// Starts `cmd` and returns it with a channel of its stdout and stderr lines. The channel ends
/// when both streams close.
pub fn spawn_lines(cmd: &mut Command) -> (Child, mpsc::Receiver<String>) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let (tx, rx) = mpsc::channel();
    for stream in
        [Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>, Box::new(child.stderr.take().unwrap())]
    {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(stream).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
    }
    (child, rx)
}

/// Reads lines until one contains `pat` and returns it; every line read is added to `log`.
/// Panics with the log after two minutes.
pub fn wait_for(rx: &mpsc::Receiver<String>, pat: &str, log: &mut Vec<String>) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let l = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("no '{pat}' in log:\n{}", log.join("\n")));
        log.push(l.clone());
        if l.contains(pat) {
            return l;
        }
    }
}
