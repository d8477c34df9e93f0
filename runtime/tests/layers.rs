//! The module map of ARCHITECTURE.md, checked: every top-level module of `ps-runtime` may import
//! (`crate::...`) only modules of a lower layer, so there are no import cycles and the diagram
//! cannot drift from the code. The other crates of the workspace are checked for cycles.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Layers of `ps-runtime`, lowest first; ARCHITECTURE.md draws them, and a test checks it does.
const LAYERS: &[&[&str]] = &[
    &["error", "clock", "hash", "huge_pages", "logging", "stats", "report"],
    &["secret", "hostfile", "ports", "gen", "row", "storage", "mailbox", "wan", "live"],
    &["wire", "geo"],
    &["config"],
    &["consistency", "oplog", "state", "input"],
    &["net", "snapshot"],
    &["server", "client"],
    &["registry"],
    &["process"],
    &["local_cluster", "fuzzing"],
];

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Top-level items of a `{a::b, c, d::{e, f}}` group: `a`, `c`, `d`.
fn group_heads(s: &str) -> Vec<String> {
    let (mut depth, mut cur, mut heads) = (0, String::new(), Vec::new());
    for ch in s.chars() {
        match ch {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                heads.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        if depth == 0 {
            cur.push(ch);
        }
    }
    heads.push(cur);
    heads
        .iter()
        .map(|h| h.trim().split("::").next().unwrap_or("").trim().to_string())
        .filter(|h| !h.is_empty() && h != "self")
        .collect()
}

/// Every first path segment after `crate::` in `src` (comments included: a doc link to a module
/// is a dependency of the reader, too).
fn crate_refs(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (i, _) in src.match_indices("crate::") {
        if i > 0 && src[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `ps_crate::`
        }
        let rest = &src[i + "crate::".len()..];
        if let Some(g) = rest.strip_prefix('{') {
            out.extend(group_heads(g));
        } else {
            let id: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            if !id.is_empty() {
                out.insert(id);
            }
        }
    }
    out
}

/// Module of each file under `src` (its first path component), and names re-exported by the
/// crate root (`pub use m::{A, B}` in lib.rs) mapped to the module they come from.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    // A binary crate has no lib.rs and so no re-exports.
    let lib = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let mut reexports: BTreeMap<String, String> = BTreeMap::new();
    // Whole statements, so that a group spread over several lines counts every name in it.
    for line in lib.split(';').filter_map(|s| s.trim().strip_prefix("pub use ")) {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        let (m, rest) = line.split_once("::").unwrap();
        let names = rest.trim_end_matches(';').trim_start_matches('{').trim_end_matches('}');
        for n in names.split(',') {
            let n = n.trim().rsplit("::").next().unwrap().to_string();
            reexports.insert(n, m.to_string());
        }
    }
    let mut files = Vec::new();
    rs_files(src, &mut files);
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel.components().next().unwrap().as_os_str().to_string_lossy().to_string();
        let module = first.trim_end_matches(".rs").to_string();
        if ["lib", "main", "bin"].contains(&module.as_str()) {
            continue; // the crate root and the binaries sit above everything
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let deps = graph.entry(module.clone()).or_default();
        for r in crate_refs(&text) {
            let target = reexports.get(&r).cloned().unwrap_or(r);
            if target != module {
                deps.insert(target);
            }
        }
    }
    graph
}

fn assert_acyclic(name: &str, graph: &BTreeMap<String, BTreeSet<String>>) {
    // Depth-first search with colours; reports the first cycle found.
    fn visit(
        n: &str,
        g: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match state.get(n) {
            Some(2) => return None,
            Some(1) => {
                let from = path.iter().position(|p| p == n).unwrap();
                let mut cycle = path[from..].to_vec();
                cycle.push(n.to_string());
                return Some(cycle);
            }
            _ => {}
        }
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for d in g.get(n).into_iter().flatten() {
            if let Some(c) = visit(d, g, state, path) {
                return Some(c);
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
            panic!("{name}: import cycle {}", c.join(" -> "));
        }
    }
}

#[test]
fn runtime_modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = module_graph(&src);
    let layer_of: BTreeMap<&str, usize> =
        LAYERS.iter().enumerate().flat_map(|(i, l)| l.iter().map(move |m| (*m, i))).collect();
    let mut errors = Vec::new();
    for (m, deps) in &graph {
        let Some(&lm) = layer_of.get(m.as_str()) else {
            errors.push(format!("module {m} is not in LAYERS (add it, and to ARCHITECTURE.md)"));
            continue;
        };
        for d in deps {
            match layer_of.get(d.as_str()) {
                Some(&ld) if ld < lm => {}
                Some(&ld) => errors.push(format!("{m} (layer {lm}) imports {d} (layer {ld})")),
                None => errors.push(format!("{m} imports unknown module {d}")),
            }
        }
    }
    for l in LAYERS.iter().flat_map(|l| l.iter()) {
        if !graph.contains_key(*l) {
            errors.push(format!("LAYERS lists {l}, which is not a module any more"));
        }
    }
    assert!(errors.is_empty(), "module layering broken:\n  {}", errors.join("\n  "));
    assert_acyclic("ps-runtime", &graph);
}

/// The layer table in ARCHITECTURE.md ("Inside `ps_runtime`") names every module of each layer on
/// that layer's line (a line starts with its number; `row/` and `row` are the same module), so a
/// module moved to another layer must be moved there too.
#[test]
fn architecture_md_draws_these_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let text = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let lines: BTreeMap<usize, BTreeSet<String>> = text
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let n: usize = words.next()?.parse().ok()?;
            let names = words.map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '_').to_string());
            Some((n, names.collect()))
        })
        .collect();
    let mut errors = Vec::new();
    for (i, layer) in LAYERS.iter().enumerate() {
        match lines.get(&i) {
            None => errors.push(format!("no line for layer {i}")),
            Some(words) => errors.extend(
                layer.iter().filter(|m| !words.contains(**m)).map(|m| format!("layer {i}'s line does not name {m}")),
            ),
        }
    }
    assert!(lines.len() == LAYERS.len(), "ARCHITECTURE.md has {} layer lines, LAYERS {}", lines.len(), LAYERS.len());
    assert!(errors.is_empty(), "ARCHITECTURE.md's layer table drifted:\n  {}", errors.join("\n  "));
}

#[test]
fn other_crates_have_no_import_cycles() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for krate in ["hadoop", "yarn", "apps", "job", "client", "app-master", "bench"] {
        let graph = module_graph(&root.join(krate).join("src"));
        assert_acyclic(krate, &graph);
    }
}

/// The workspace crates each crate's library and binaries depend on (its
/// `[dependencies]`; tests may use more). The PS library links `ps-hadoop` (site files, token
/// files) and not `ps-yarn`, so a user's app does not pull in an HTTP/TLS stack or the GSSAPI
/// loader; the apps link the PS library alone, so the compiler holds them to its public API; the
/// job machinery sits above both. ARCHITECTURE.md's "What may depend on what" says the same.
const CRATE_DEPS: &[(&str, &[&str])] = &[
    ("hadoop", &[]),
    ("testkit", &[]),
    ("runtime", &["ps-hadoop"]),
    ("apps", &["ps-runtime"]),
    ("job", &["ps-runtime", "ps-apps", "ps-hadoop"]),
    ("yarn", &["ps-hadoop"]),
    ("client", &["ps-runtime", "ps-apps", "ps-job", "ps-yarn", "ps-hadoop"]),
    ("app-master", &["ps-runtime", "ps-job", "ps-yarn", "ps-hadoop"]),
    ("bench", &["ps-runtime", "ps-apps"]),
    ("examples/logreg", &["ps-runtime", "ps-apps", "ps-job"]),
];

#[test]
fn crates_depend_only_on_what_they_may() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let ours: Vec<&str> = vec![
        "ps-hadoop",
        "ps-testkit",
        "ps-runtime",
        "ps-apps",
        "ps-job",
        "ps-yarn",
        "ps-client",
        "ps-app-master",
        "ps-bench",
    ];
    let mut errors = Vec::new();
    for (dir, allowed) in CRATE_DEPS {
        let toml = std::fs::read_to_string(root.join(dir).join("Cargo.toml")).unwrap();
        // The `[dependencies]` section: up to the next table header.
        let deps = toml.split("\n[dependencies]\n").nth(1).unwrap_or("");
        let deps = deps.split("\n[").next().unwrap_or("");
        let found: Vec<&str> = deps
            .lines()
            .map(|l| l.split(['=', ' ', '.']).next().unwrap_or("").trim())
            .filter(|n| ours.contains(n))
            .collect();
        errors.extend(found.iter().filter(|n| !allowed.contains(n)).map(|n| format!("{dir} depends on {n}")));
        // Exact, so that the table (and ARCHITECTURE.md) cannot claim a dependency that is gone.
        errors.extend(allowed.iter().filter(|n| !found.contains(n)).map(|n| format!("{dir} no longer uses {n}")));
    }
    let members = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    for m in members.split("members = [").nth(1).unwrap().split(']').next().unwrap().split(',') {
        let m = m.trim().trim_matches('"');
        if !m.is_empty() && !CRATE_DEPS.iter().any(|(d, _)| *d == m) {
            errors.push(format!("workspace member {m} has no line in CRATE_DEPS"));
        }
    }
    assert!(errors.is_empty(), "crate dependencies break the rule:\n  {}", errors.join("\n  "));
}

#[test]
fn the_checker_sees_cycles_and_groups() {
    assert_eq!(group_heads("a::b, c, d::{e, f}};"), vec!["a", "c", "d"]);
    let refs = crate_refs("use crate::{x::Y, z}; use crate::w::V; fn f() { crate::q::r() }");
    assert_eq!(refs.into_iter().collect::<Vec<_>>(), vec!["q", "w", "x", "z"]);
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["a".to_string()]));
    let r = std::panic::catch_unwind(|| assert_acyclic("t", &g));
    assert!(r.is_err(), "a two-module cycle must be reported");
}
