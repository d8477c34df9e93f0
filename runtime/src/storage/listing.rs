//! The files of an input as Hadoop and Spark resolve it: a file; a directory, walked into its
//! subdirectories (nested partitions such as `dt=2026-01-01/part-00000`); or a glob pattern
//! (`/data/ratings/part-*`, `/logs/dt=2026-*`, `{a,b}`, `?`, `[0-9]`) matched one path component
//! at a time. Names starting with `_` or `.` are not data (`_SUCCESS`, `.crc`, `_temporary/`).

use super::{Entry, Storage};
use crate::error::{PsError, Result};

/// Characters that make a path component a pattern (as in Hadoop's `GlobPattern`).
const GLOB: &[char] = &['*', '?', '[', '{'];

fn hidden(name: &str) -> bool {
    name.starts_with('_') || name.starts_with('.')
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() || dir.ends_with('/') {
        format!("{dir}{name}")
    } else {
        format!("{dir}/{name}")
    }
}

/// Every data file of `url` with its length, sorted by URL.
pub fn input_files<S: Storage + ?Sized>(st: &S, url: &str) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    let roots = if url.contains(GLOB) { expand(st, url)? } else { vec![url.to_string()] };
    for root in &roots {
        walk(st, root, &mut out)?;
    }
    if out.is_empty() {
        let what = if roots.len() == 1 && roots[0] == url { "directory" } else { "pattern" };
        return Err(PsError::Config(format!(
            "input {url}: {what} has no data files (names starting with _ or . are skipped)"
        )));
    }
    out.sort();
    out.dedup();
    Ok(out)
}

/// The file itself, or the visible files under a directory, at any depth.
fn walk<S: Storage + ?Sized>(st: &S, url: &str, out: &mut Vec<(String, u64)>) -> Result<()> {
    match st.entry(url)? {
        Entry::File(len) => out.push((url.to_string(), len)),
        Entry::Dir(children) => {
            for c in children.into_iter().filter(|c| !hidden(&c.name)) {
                let path = join(url, &c.name);
                match c.len {
                    Some(len) => out.push((path, len)),
                    None => walk(st, &path, out)?,
                }
            }
        }
    }
    Ok(())
}

/// The paths matching a pattern. The part before the first component with a pattern character
/// is taken as it is (so a scheme and authority never count as a pattern).
fn expand<S: Storage + ?Sized>(st: &S, url: &str) -> Result<Vec<String>> {
    let first = url.find(GLOB).unwrap_or(url.len());
    let (base, rest) = match url[..first].rfind('/') {
        // A root keeps its slash: `/x*`, `hdfs:///x*`, `file:///x*`.
        Some(i) if i == 0 || url[..i].ends_with('/') => (&url[..i + 1], &url[i + 1..]),
        Some(i) => (&url[..i], &url[i + 1..]),
        None => ("", url),
    };
    let mut dirs = vec![base.to_string()];
    for part in rest.split('/').filter(|p| !p.is_empty()) {
        let mut next = Vec::new();
        if !part.contains(GLOB) {
            for d in &dirs {
                let p = join(d, part);
                if exists(st, &p)? {
                    next.push(p);
                }
            }
        } else {
            let m = globset::GlobBuilder::new(part)
                .literal_separator(true)
                .build()
                .map_err(|e| PsError::Config(format!("input {url}: bad pattern '{part}': {e}")))?
                .compile_matcher();
            for d in &dirs {
                let listing = if d.is_empty() { "." } else { d.as_str() };
                if let Entry::Dir(children) = st.entry(listing)? {
                    let matched = children.into_iter().filter(|c| m.is_match(&c.name) && !hidden(&c.name));
                    next.extend(matched.map(|c| join(d, &c.name)));
                }
            }
        }
        dirs = next;
    }
    if dirs.is_empty() {
        return Err(PsError::Config(format!("input {url}: no file or directory matches the pattern")));
    }
    Ok(dirs)
}

fn exists<S: Storage + ?Sized>(st: &S, url: &str) -> Result<bool> {
    st.exists(if url.is_empty() { "." } else { url })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::LocalFs;

    fn touch(p: &std::path::Path, body: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }

    #[test]
    fn globs_and_nested_partitions_resolve_as_hadoop_does() {
        let d = std::env::temp_dir().join(format!("ps-listing-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for f in ["dt=2026-01/part-0", "dt=2026-01/part-1", "dt=2026-02/h=1/part-0", "dt=2025-12/part-0"] {
            touch(&d.join(f), "1\n");
        }
        touch(&d.join("dt=2026-01/_SUCCESS"), "");
        touch(&d.join("dt=2026-02/.part-0.crc"), "xx");
        touch(&d.join("_temporary/0/part-0"), "1\n");
        let root = d.to_string_lossy().to_string();
        let names = |url: &str| -> Vec<String> {
            input_files(&LocalFs, url).unwrap().into_iter().map(|(p, _)| p[root.len() + 1..].to_string()).collect()
        };
        // A directory: every visible file at any depth, none under hidden directories.
        assert_eq!(
            names(&root),
            ["dt=2025-12/part-0", "dt=2026-01/part-0", "dt=2026-01/part-1", "dt=2026-02/h=1/part-0"]
        );
        assert_eq!(
            names(&format!("{root}/dt=2026-*")),
            ["dt=2026-01/part-0", "dt=2026-01/part-1", "dt=2026-02/h=1/part-0"]
        );
        assert_eq!(names(&format!("{root}/dt=*/part-[1-9]")), ["dt=2026-01/part-1"]);
        assert_eq!(
            names(&format!("{root}/{{dt=2025-12,dt=2026-01}}/part-0")),
            ["dt=2025-12/part-0", "dt=2026-01/part-0"]
        );
        let urls = input_files(&LocalFs, &format!("file://{root}/dt=2026-0?/part-0")).unwrap();
        assert_eq!(urls, [(format!("file://{root}/dt=2026-01/part-0"), 2)]);
        let e = input_files(&LocalFs, &format!("{root}/dt=2027-*")).unwrap_err().to_string();
        assert!(e.contains("no file or directory matches"), "{e}");
        // Named explicitly, a hidden directory is read; a directory of only hidden files is empty.
        assert_eq!(names(&format!("{root}/_temporary")), ["_temporary/0/part-0"]);
        touch(&d.join("only-marker/_SUCCESS"), "");
        let e = input_files(&LocalFs, &format!("{root}/only-marker")).unwrap_err().to_string();
        assert!(e.contains("has no data files"), "{e}");
        let e = input_files(&LocalFs, &format!("{root}/dt=[")).unwrap_err().to_string();
        assert!(e.contains("bad pattern"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
