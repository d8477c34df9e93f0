//! Replays the fuzz targets' seeds (`fuzz/corpus`) and every input a fuzzing run ever failed on
//! (`fuzz/regressions`) through the same entry points the fuzzers drive, on every `cargo test`:
//! a decoder that panics on any of them again fails here without the instrumented build.

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
        ("rendezvous", r::rendezvous_lines),
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
