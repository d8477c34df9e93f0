//! Entry points for the fuzz targets (`fuzz/`) over this crate's decoders (the rendezvous lines
//! and the tracker's HTTP requests), beside `ps_runtime::fuzzing`'s; and the replay of every fuzz
//! target's seeds and regressions on each `cargo test`. Built with the `fuzzing` feature.

use crate::rendezvous;

/// Lines a rendezvous peer may send: a hello (to the AM), reports (into the job's view, which
/// is then rendered as its page), an HTTP request line, and the AM's hostfile answer (to a process).
pub fn rendezvous_lines(data: &[u8]) {
    let mut r = std::io::Cursor::new(data);
    let mut view = crate::tracking::JobView::new("fuzz", 3);
    while let Ok(Some(line)) = rendezvous::read_line_bounded(&mut r, rendezvous::MAX_LINE) {
        if let Ok(h) = rendezvous::Hello::parse(&line) {
            let _ = h.verify(&[1; 32], "application_1_0001");
        }
        if let Some(report) = rendezvous::Report::parse(&line) {
            view.apply(line.len() % 4, report);
        }
        if let Some((method, target)) = rendezvous::http_request(&line) {
            let _ = crate::tracking::serve::respond(method, target, || view.status_json());
        }
    }
    let _ = crate::tracking::page::render(&view.status_json(), true);
    let _ = rendezvous::parse_hosts_reply(data, "application_1_0001", &[1; 32], &[2; 16]);
}

#[cfg(test)]
mod tests {
    //! Replays the fuzz targets' seeds (`fuzz/corpus`) and every input a fuzzing run ever failed
    //! on (`fuzz/regressions`) through the same entry points the fuzzers drive: a decoder that
    //! panics on any of them again fails here without the instrumented build.
    use std::path::Path;

    fn replay(target: &str, f: fn(&[u8])) -> usize {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz");
        let mut n = 0;
        for dir in ["corpus", "regressions"] {
            let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else { continue };
            for e in entries.flatten() {
                f(&std::fs::read(e.path()).unwrap());
                n += 1;
            }
        }
        n
    }

    type Target = (&'static str, fn(&[u8]));

    #[test]
    fn every_fuzz_target_survives_its_seeds_and_regressions() {
        use ps_runtime::fuzzing as r;
        use ps_yarn::fuzzing as y;
        let targets: [Target; 11] = [
            ("wire_message", r::wire_message),
            ("wire_stream", r::wire_stream),
            ("handshake", r::handshake),
            ("rendezvous", super::rendezvous_lines),
            ("hostfile", r::hostfile),
            ("job_config", r::job_config),
            ("snapshot", r::snapshot_files),
            ("input", r::input_file),
            ("sasl", y::sasl_challenge),
            ("credentials", y::credentials),
            ("ipc_response", y::ipc_response),
        ];
        for (t, f) in targets {
            assert!(replay(t, f) > 0, "no seeds for fuzz target {t}");
        }
        // The target list here and in fuzz/Cargo.toml must agree.
        let toml = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/Cargo.toml")).unwrap();
        assert_eq!(toml.matches("[[bin]]").count(), targets.len());
    }
}
