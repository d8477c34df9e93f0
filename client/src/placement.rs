//! Data centers of a geo-distributed job on YARN: which node is in which data center, from the
//! ResourceManager's racks (`--dc-by rack`) or a file (`--dc-hosts FILE`). yarn-submit writes the
//! map to the staging directory; the application master looks up each container's node in it and
//! writes the data center into the hostfile.

use crate::error::{ClientError, Result};
use crate::Cli;
use ps_runtime::PsError;
use ps_yarn::submit::ResourceManager;
use std::collections::BTreeMap;
use std::path::Path;

/// The map as the application master reads it (`--dc-map`), if the job places by node.
pub fn dc_map(cli: &Cli, rm: &dyn ResourceManager) -> Result<Option<serde_json::Value>> {
    let (by, nodes) = match (&cli.dc_by, &cli.dc_hosts) {
        (Some(_), _) => {
            let racks = rm.node_racks().map_err(ClientError::Rm)?;
            let nodes: BTreeMap<String, String> =
                racks.into_iter().map(|n| (format!("{}:{}", n.host, n.port), n.rack)).collect();
            ("--dc-by rack".to_string(), nodes)
        }
        (None, Some(file)) => (format!("--dc-hosts {}", file.display()), read_dc_hosts(file)?),
        (None, None) => return Ok(None),
    };
    let mut dcs: BTreeMap<&str, usize> = BTreeMap::new();
    for dc in nodes.values() {
        *dcs.entry(dc).or_default() += 1;
    }
    log::info!(
        "data centers ({by}): {}",
        dcs.iter()
            .map(|(d, n)| format!("{d} ({n} node{})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if dcs.len() < 2 {
        log::warn!("{by}: every node is in one data center, so the job runs in one");
    }
    Ok(Some(serde_json::json!({"by": by, "nodes": nodes})))
}

/// `--dc-hosts FILE`: lines `node datacenter` (node: a host name or `host:port`), `#` comments.
pub fn read_dc_hosts(path: &Path) -> Result<BTreeMap<String, String>> {
    let text =
        std::fs::read_to_string(path).map_err(|source| ClientError::ReadFile { path: path.to_path_buf(), source })?;
    parse_dc_hosts(&text, &path.display().to_string()).map_err(ClientError::Config)
}

fn parse_dc_hosts(text: &str, source: &str) -> ps_runtime::Result<BTreeMap<String, String>> {
    let mut nodes = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let bad = |why: String| PsError::Config(format!("--dc-hosts {source}:{}: {why}: '{line}'", i + 1));
        let f: Vec<&str> = line.split_whitespace().collect();
        let [node, dc] = f[..] else { return Err(bad("expected 'node datacenter'".into())) };
        if let Some(old) = nodes.insert(node.to_string(), dc.to_string()).filter(|old| old != dc) {
            return Err(bad(format!("{node} is also listed in {old}")));
        }
    }
    if nodes.is_empty() {
        return Err(PsError::Config(format!("--dc-hosts {source}: lists no nodes")));
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dc_hosts_files_map_nodes_and_name_the_bad_line() {
        let m = parse_dc_hosts("# east\nnode1 east\nnode2:8041 west # a port\n\n", "f").unwrap();
        assert_eq!(m["node1"], "east");
        assert_eq!(m["node2:8041"], "west");
        let e = parse_dc_hosts("a east\nb\n", "f").unwrap_err().to_string();
        assert!(e.contains("--dc-hosts f:2") && e.contains("expected 'node datacenter'"), "{e}");
        let e = parse_dc_hosts("a east\na west\n", "f").unwrap_err().to_string();
        assert!(e.contains("f:2") && e.contains("also listed in east"), "{e}");
        assert!(parse_dc_hosts("# nothing\n", "f").unwrap_err().to_string().contains("lists no nodes"));
    }
}
