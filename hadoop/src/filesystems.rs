//! Which NameNodes stand behind a file system URL, as Hadoop's HDFS client resolves them from the
//! configuration: what a job on a secure cluster needs a delegation token from for each file
//! system it names. `hdfs://host:port` is one NameNode (port 8020 when left out); `hdfs://ns`
//! where `dfs.ha.namenodes.ns` is set is an HA nameservice (one token, service `ha-hdfs:ns`,
//! that any of its NameNodes accepts); `hdfs:///` is the default file system; a `viewfs://`
//! mount table stands for every file system its links point at (`fs.viewfs.mounttable.<name>.link.*`
//! and `.linkFallback`), as `ViewFileSystem` collects its children's tokens. Other schemes
//! (`file:`, object stores) need no HDFS token.

use crate::conf::HadoopConf;
use crate::error::{HadoopError, Result};
use std::collections::BTreeSet;

/// Hadoop's default NameNode RPC port.
pub const DEFAULT_NAMENODE_PORT: u16 = 8020;

/// Where a delegation token for one HDFS comes from.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TokenSource {
    /// A single NameNode at `host:port` (token service `ip:port`).
    NameNode(String),
    /// An HA nameservice and its NameNodes' RPC addresses, in configuration order.
    NameService { name: String, namenodes: Vec<String> },
}

impl TokenSource {
    /// The `hdfs://` authority it was named by, for messages.
    pub fn authority(&self) -> &str {
        match self {
            TokenSource::NameNode(a) => a,
            TokenSource::NameService { name, .. } => name,
        }
    }
}

/// The HDFS instances behind `urls` (duplicates once), in a stable order.
pub fn token_sources<'a>(conf: &HadoopConf, urls: impl IntoIterator<Item = &'a str>) -> Result<Vec<TokenSource>> {
    let mut out = BTreeSet::new();
    for url in urls {
        resolve(conf, url, &mut out, 0)?;
    }
    Ok(out.into_iter().collect())
}

/// Mount tables may point into other mount tables; a loop is a configuration error.
const MAX_DEPTH: usize = 8;

fn resolve(conf: &HadoopConf, url: &str, out: &mut BTreeSet<TokenSource>, depth: usize) -> Result<()> {
    if depth > MAX_DEPTH {
        return Err(HadoopError::Config(format!("{url}: viewfs mount tables nested more than {MAX_DEPTH} deep")));
    }
    let Some((scheme, rest)) = url.split_once("://") else { return Ok(()) };
    let authority = rest.split('/').next().unwrap_or("");
    match scheme {
        "hdfs" | "viewfs" if authority.is_empty() => {
            let default = conf.default_fs()?;
            if default.trim_end_matches('/').split_once("://").map(|(_, r)| r.split('/').next().unwrap_or(""))
                == Some("")
            {
                return Err(HadoopError::Config(format!("{url}: fs.defaultFS ({default}) names no authority")));
            }
            if !default.starts_with(&format!("{scheme}://")) {
                return Err(HadoopError::Config(format!(
                    "{url}: fs.defaultFS is {default}, not a {scheme}:// file system"
                )));
            }
            resolve(conf, &default, out, depth + 1)
        }
        "hdfs" => {
            out.insert(hdfs(conf, authority)?);
            Ok(())
        }
        "viewfs" => {
            let targets = mount_targets(conf, authority)?;
            if targets.is_empty() {
                return Err(HadoopError::Config(format!(
                    "{url}: no fs.viewfs.mounttable.{authority}.link.* in the Hadoop configuration"
                )));
            }
            for t in targets {
                resolve(conf, &t, out, depth + 1)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn hdfs(conf: &HadoopConf, authority: &str) -> Result<TokenSource> {
    let Some(ids) = conf.get(&format!("dfs.ha.namenodes.{authority}"))? else {
        let addr = if authority.contains(':') {
            authority.to_string()
        } else {
            format!("{authority}:{DEFAULT_NAMENODE_PORT}")
        };
        return Ok(TokenSource::NameNode(addr));
    };
    let namenodes = ids
        .split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(|id| conf.require(&format!("dfs.namenode.rpc-address.{authority}.{id}")))
        .collect::<Result<Vec<_>>>()?;
    if namenodes.is_empty() {
        return Err(HadoopError::Config(format!("dfs.ha.namenodes.{authority} lists no NameNode")));
    }
    Ok(TokenSource::NameService { name: authority.to_string(), namenodes })
}

/// The targets of mount table `name` (`default` when Hadoop's `fs.viewfs.mounttable.default.name.key`
/// is not set is only reached through `viewfs:///`).
fn mount_targets(conf: &HadoopConf, name: &str) -> Result<Vec<String>> {
    let prefix = format!("fs.viewfs.mounttable.{name}.");
    let all = conf.all()?;
    let mut targets: Vec<String> = all
        .iter()
        .filter(|(k, _)| k.strip_prefix(&prefix).is_some_and(|r| r.starts_with("link.") || r == "linkFallback"))
        .flat_map(|(_, v)| v.split(',').map(|t| t.trim().to_string()).collect::<Vec<_>>())
        .filter(|t| !t.is_empty())
        .collect();
    targets.sort();
    targets.dedup();
    Ok(targets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(props: &[(&str, &str)]) -> HadoopConf {
        let mut c = HadoopConf::default();
        for (k, v) in props {
            c.set(k, v);
        }
        c
    }

    fn ha() -> Vec<(&'static str, &'static str)> {
        vec![
            ("fs.defaultFS", "hdfs://ns1"),
            ("dfs.ha.namenodes.ns1", "nn1, nn2"),
            ("dfs.namenode.rpc-address.ns1.nn1", "a:8020"),
            ("dfs.namenode.rpc-address.ns1.nn2", "b:8020"),
        ]
    }

    #[test]
    fn nameservices_namenodes_and_the_default_fs() {
        let c = conf(&ha());
        let ns = TokenSource::NameService { name: "ns1".into(), namenodes: vec!["a:8020".into(), "b:8020".into()] };
        let got =
            token_sources(&c, ["hdfs:///user/x", "hdfs://ns1/in", "hdfs://other/out", "hdfs://c:9000/ck"]).unwrap();
        assert_eq!(
            got,
            vec![TokenSource::NameNode("c:9000".into()), TokenSource::NameNode("other:8020".into()), ns.clone()]
        );
        assert_eq!(token_sources(&c, ["file:///tmp/x", "/local", "s3a://b/k"]).unwrap(), vec![]);
        let mut bad = ha();
        bad.pop();
        let e = token_sources(&conf(&bad), ["hdfs://ns1/x"]).unwrap_err().to_string();
        assert!(e.contains("dfs.namenode.rpc-address.ns1.nn2"), "{e}");
    }

    #[test]
    fn a_viewfs_mount_table_stands_for_every_target() {
        let mut p = ha();
        p.extend([
            ("fs.viewfs.mounttable.cl.link./data", "hdfs://ns1/data"),
            ("fs.viewfs.mounttable.cl.link./logs", "hdfs://logs-nn:8020/logs"),
            ("fs.viewfs.mounttable.cl.linkFallback", "hdfs://ns1/"),
            ("fs.viewfs.mounttable.loop.link./x", "viewfs://loop/x"),
        ]);
        let c = conf(&p);
        let got = token_sources(&c, ["viewfs://cl/data/in"]).unwrap();
        assert_eq!(got.iter().map(TokenSource::authority).collect::<Vec<_>>(), ["logs-nn:8020", "ns1"]);
        let e = token_sources(&c, ["viewfs://none/x"]).unwrap_err().to_string();
        assert!(e.contains("fs.viewfs.mounttable.none.link"), "{e}");
        assert!(token_sources(&c, ["viewfs://loop/x"]).unwrap_err().to_string().contains("nested"));
        let e = token_sources(&c, ["viewfs:///x"]).unwrap_err().to_string();
        assert!(e.contains("not a viewfs://"), "{e}");
    }
}
