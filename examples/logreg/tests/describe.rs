//! The user's runtime binary answers for its app as `yarn-submit` asks it (`describe`): its help,
//! a usage error for bad options, and its locations. (It also makes `cargo test` build the binary
//! that `client/tests/user_app.rs` submits.)

use std::process::Command;

fn describe(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_logreg-runtime")).arg("describe").args(args).output().unwrap()
}

#[test]
fn the_binary_describes_its_app() {
    let help = describe(&["logreg", "--help"]);
    assert!(help.status.success());
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage:"));
    let bad = describe(&["logreg", "--no-such-option"]);
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    let ok = describe(&["logreg", "--input", "train.svm", "--output", "model"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).unwrap();
    assert_eq!(v["app"], "logreg");
    assert_eq!(v["locations"], serde_json::json!([["--input", "train.svm"], ["--output", "model"]]));
    assert_eq!(v["output_policy"], "must_not_exist");
}
