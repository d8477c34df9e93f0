//! Paths under `--master yarn`, qualified as Hadoop's `FileSystem` and `spark-submit` qualify
//! them: a path without a scheme is on `fs.defaultFS`, a relative one under `/user/<user>`. An
//! explicit `file:` path would name a different disk in every container, so it is refused.

use crate::error::{ClientError, Result};

/// Refuses explicit local paths for the job's inputs, outputs and checkpoints (before anything
/// is contacted: a usage error).
pub fn refuse_local(locations: &[(String, String)]) -> Result<()> {
    match locations.iter().find(|(_, p)| p.starts_with("file:")) {
        Some((flag, path)) => Err(ClientError::LocalPathOnYarn { flag: flag.clone(), path: path.clone() }),
        None => Ok(()),
    }
}

/// `path` as every container sees it: URLs with a scheme stay as they are (`hdfs://`,
/// `viewfs://`, `hdfs:///x` on the default name service); `/x` is `<fs>/x`; `x` is
/// `<fs>/user/<user>/x`. `fs` is `fs.defaultFS` without a trailing slash.
pub fn qualify(path: &str, fs: &str, user: &str) -> String {
    if path.contains("://") {
        path.to_string()
    } else if path.starts_with('/') {
        format!("{fs}{path}")
    } else {
        format!("{fs}/user/{user}/{}", path.trim_start_matches("./"))
    }
}

/// Replaces the value of `flag` in `args` (`--flag value` or `--flag=value`) by `value`.
pub fn replace_flag_value(args: &mut [String], flag: &str, value: &str) {
    let with_eq = format!("{flag}=");
    let mut i = 0;
    while i < args.len() {
        if args[i] == flag && i + 1 < args.len() {
            args[i + 1] = value.to_string();
            i += 1;
        } else if args[i].starts_with(&with_eq) {
            args[i] = format!("{with_eq}{value}");
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_less_paths_are_on_the_default_fs_and_relative_ones_under_the_home_directory() {
        let fs = "hdfs://nn:8020";
        assert_eq!(qualify("/data/r.tsv", fs, "ann"), "hdfs://nn:8020/data/r.tsv");
        assert_eq!(qualify("data/r*", fs, "ann"), "hdfs://nn:8020/user/ann/data/r*");
        assert_eq!(qualify("./out", fs, "ann"), "hdfs://nn:8020/user/ann/out");
        for url in ["hdfs://other/x", "viewfs://cluster/x", "hdfs:///x"] {
            assert_eq!(qualify(url, fs, "ann"), url);
        }
        let loc = |f: &str, p: &str| (f.to_string(), p.to_string());
        assert!(refuse_local(&[loc("--input", "hdfs:///x"), loc("--output", "y")]).is_ok());
        let e = refuse_local(&[loc("--output", "file:///tmp/o")]).unwrap_err().to_string();
        assert!(e.starts_with("--output file:///tmp/o: "), "{e}");
    }

    #[test]
    fn flag_values_are_replaced_in_both_spellings() {
        let mut a: Vec<String> = ["--input", "r", "--rank", "4", "--output=o"].map(String::from).into();
        replace_flag_value(&mut a, "--input", "hdfs://nn/r");
        replace_flag_value(&mut a, "--output", "hdfs://nn/o");
        assert_eq!(a, ["--input", "hdfs://nn/r", "--rank", "4", "--output=hdfs://nn/o"]);
    }
}
