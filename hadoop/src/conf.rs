//! Hadoop configuration files (`$HADOOP_CONF_DIR/{core,hdfs,yarn}-site.xml`): the few addresses
//! YARN clients need. Values are expanded as Hadoop's `Configuration.get` does: `${name}` takes a
//! JVM system property (`user.name`, `user.home`, `java.io.tmpdir`: what a JVM on this host would
//! give), else another property; `${env.NAME}`, `${env.NAME:-default}` (unset or empty) and
//! `${env.NAME-default}` (unset) take the environment; an unknown name stays as written; a value
//! that refers to itself is returned unexpanded; more than 20 expansions is an error. A property
//! marked `<final>true</final>` is not overridden by a later file.

use crate::error::{HadoopError, Result};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct HadoopConf {
    props: HashMap<String, String>,
    finals: std::collections::HashSet<String>,
    pub dir: Option<PathBuf>,
}

/// Hadoop's limit on expansions in one value (`Configuration.MAX_SUBST`).
const MAX_SUBST: usize = 20;

impl HadoopConf {
    /// Loads `core-site.xml` and `yarn-site.xml` from `dir` (missing files are fine).
    pub fn load_dir(dir: &Path) -> Result<Self> {
        let mut c = HadoopConf { dir: Some(dir.to_path_buf()), ..HadoopConf::default() };
        for f in ["core-site.xml", "hdfs-site.xml", "yarn-site.xml"] {
            let p = dir.join(f);
            if p.exists() {
                c.add_file(&p)?;
            }
        }
        Ok(c)
    }

    /// From `$HADOOP_CONF_DIR` and `$YARN_CONF_DIR` (empty if neither is set). As Hadoop's `yarn`
    /// command does, `YARN_CONF_DIR`'s files take precedence where both directories set a key.
    pub fn from_env() -> Result<Self> {
        let dir = |k: &str| std::env::var_os(k).filter(|d| !d.is_empty()).map(std::path::PathBuf::from);
        Self::from_dirs(dir("HADOOP_CONF_DIR"), dir("YARN_CONF_DIR"))
    }

    fn from_dirs(hadoop: Option<std::path::PathBuf>, yarn: Option<std::path::PathBuf>) -> Result<Self> {
        match (hadoop, yarn) {
            (Some(h), Some(y)) if h != y => {
                let mut c = Self::load_dir(&h)?;
                for f in ["core-site.xml", "hdfs-site.xml", "yarn-site.xml"] {
                    if y.join(f).exists() {
                        c.add_file(&y.join(f))?;
                    }
                }
                Ok(c)
            }
            (Some(d), _) | (None, Some(d)) => Self::load_dir(&d),
            (None, None) => Ok(HadoopConf::default()),
        }
    }

    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        let text =
            std::fs::read_to_string(path).map_err(|e| HadoopError::io(format!("reading {}", path.display()), e))?;
        let doc = roxmltree::Document::parse(&text)
            .map_err(|e| HadoopError::Config(format!("{}: not valid XML: {e}", path.display())))?;
        for p in doc.descendants().filter(|n| n.has_tag_name("property")) {
            let child = |name: &str| p.children().find(|c| c.has_tag_name(name)).and_then(|c| c.text());
            if let (Some(k), Some(v)) = (child("name"), child("value")) {
                let k = k.trim();
                if self.finals.contains(k) {
                    log::warn!("{}: {k} is final in an earlier site file; keeping that value", path.display());
                    continue;
                }
                self.props.insert(k.to_string(), v.trim().to_string());
                if child("final").is_some_and(|f| f.trim() == "true") {
                    self.finals.insert(k.to_string());
                }
            }
        }
        Ok(())
    }

    /// The value of `key`, expanded (see the module comment).
    pub fn get(&self, key: &str) -> Result<Option<String>> {
        self.props.get(key).map(|v| self.expand(v)).transpose()
    }

    /// Expands `${...}` references in `value`, innermost first, as Hadoop's `substituteVars`.
    fn expand(&self, value: &str) -> Result<String> {
        let mut eval = value.to_string();
        for _ in 0..MAX_SUBST {
            let Some((start, end)) = innermost_reference(&eval) else { return Ok(eval) };
            let name = &eval[start + 2..end];
            let Some(val) = self.lookup(name) else { return Ok(eval) };
            if val.contains(&eval[start..=end]) {
                // Refers to itself: Hadoop returns the expression as written.
                return Ok(value.to_string());
            }
            eval = format!("{}{val}{}", &eval[..start], &eval[end + 1..]);
        }
        Err(HadoopError::Config(format!("variable substitution depth too large: {MAX_SUBST} {value}")))
    }

    /// What `${name}` stands for: the environment for `env.`, a system property, a property.
    fn lookup(&self, name: &str) -> Option<String> {
        let var = |v: &str| std::env::var(v).ok();
        if let Some(env) = name.strip_prefix("env.").filter(|v| !v.is_empty()) {
            return Some(match (env.find(":-"), env.find('-')) {
                (Some(i), Some(j)) if i < j => {
                    var(&env[..i]).filter(|x| !x.is_empty()).unwrap_or_else(|| env[i + 2..].into())
                }
                (_, Some(j)) => var(&env[..j]).unwrap_or_else(|| env[j + 1..].into()),
                _ => var(env)?,
            });
        }
        let system = match name {
            "user.name" => login_name(),
            "user.home" => var("HOME"),
            "java.io.tmpdir" => Some("/tmp".into()),
            _ => None,
        };
        system.or_else(|| self.props.get(name).cloned())
    }

    /// Every property, variables expanded (for clients configured from a map, like hdfs-native).
    pub fn all(&self) -> Result<HashMap<String, String>> {
        self.props.keys().map(|k| Ok((k.clone(), self.get(k)?.unwrap_or_default()))).collect()
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.props.insert(key.to_string(), value.to_string());
    }

    /// A required key; the error names it and where it was looked for.
    pub fn require(&self, key: &str) -> Result<String> {
        self.get(key)?.ok_or_else(|| {
            let dir = self
                .dir
                .as_ref()
                .map_or("(neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set)".into(), |d| d.display().to_string());
            HadoopError::Config(format!("{key} is not set in {dir}"))
        })
    }

    /// RM web address (`yarn.resourcemanager.webapp.address`, default `<rm host>:8088`).
    pub fn rm_webapp(&self) -> Result<String> {
        self.address("yarn.resourcemanager.webapp.address", 8088)
    }

    /// Whether the RM's web services are served over HTTPS only (`yarn.http.policy`:
    /// `HTTP_ONLY`, Hadoop's default, `HTTPS_ONLY`, or `HTTP_AND_HTTPS`, where HTTP is used).
    pub fn https_only(&self) -> Result<bool> {
        const KEY: &str = "yarn.http.policy";
        match self.get(KEY)?.as_deref().map(str::trim) {
            None | Some("HTTP_ONLY") | Some("HTTP_AND_HTTPS") => Ok(false),
            Some("HTTPS_ONLY") => Ok(true),
            Some(v) => {
                Err(HadoopError::Config(format!("{KEY} = {v:?}: expected HTTP_ONLY, HTTPS_ONLY or HTTP_AND_HTTPS")))
            }
        }
    }

    /// The RMs' web base URLs in failover order, as [`Self::rm_addresses`]: with
    /// `yarn.http.policy=HTTPS_ONLY`, `https://` and `yarn.resourcemanager.webapp.https.address`
    /// (default `<rm host>:8090`), else `http://` and `yarn.resourcemanager.webapp.address`
    /// (default `<rm host>:8088`); per RM id with HA.
    pub fn rm_web_urls(&self) -> Result<Vec<String>> {
        let (scheme, key, port) = if self.https_only()? {
            ("https", "yarn.resourcemanager.webapp.https.address", 8090)
        } else {
            ("http", "yarn.resourcemanager.webapp.address", 8088)
        };
        Ok(self.ha_addresses(key, port)?.into_iter().map(|a| format!("{scheme}://{a}")).collect())
    }

    /// RM client address (`yarn.resourcemanager.address`, default `<rm host>:8032`): where
    /// applications are submitted over IPC.
    pub fn rm_address(&self) -> Result<String> {
        self.address("yarn.resourcemanager.address", 8032)
    }

    /// The RM client addresses, in failover order: with ResourceManager HA
    /// (`yarn.resourcemanager.ha.enabled`), one per id of `yarn.resourcemanager.ha.rm-ids`, each
    /// `yarn.resourcemanager.address.<id>` or `yarn.resourcemanager.hostname.<id>:8032`, as
    /// Hadoop's `HAUtil` reads them; without HA, the one address.
    pub fn rm_addresses(&self) -> Result<Vec<String>> {
        self.ha_addresses("yarn.resourcemanager.address", 8032)
    }

    /// The RM scheduler addresses in failover order, as [`Self::rm_addresses`]: without HA
    /// `yarn.resourcemanager.scheduler.address` (default `<rm host>:8030`), with HA one per id
    /// (`yarn.resourcemanager.scheduler.address.<id>` or `hostname.<id>:8030`).
    pub fn rm_schedulers(&self) -> Result<Vec<String>> {
        self.ha_addresses("yarn.resourcemanager.scheduler.address", 8030)
    }

    /// How long an AM keeps trying to reach a ResourceManager before it gives up
    /// (`yarn.resourcemanager.connect.max-wait.ms`, Hadoop's default 15 minutes).
    pub fn rm_connect_max_wait(&self) -> Result<std::time::Duration> {
        self.millis("yarn.resourcemanager.connect.max-wait.ms", 900_000)
    }

    /// The longest wait between two rounds of attempts to reach a ResourceManager
    /// (`yarn.resourcemanager.connect.retry-interval.ms`, Hadoop's default 30 s).
    pub fn rm_connect_retry_interval(&self) -> Result<std::time::Duration> {
        self.millis("yarn.resourcemanager.connect.retry-interval.ms", 30_000)
    }

    fn millis(&self, key: &str, default: u64) -> Result<std::time::Duration> {
        match self.get(key)? {
            None => Ok(std::time::Duration::from_millis(default)),
            Some(v) => v
                .trim()
                .parse::<u64>()
                .map(std::time::Duration::from_millis)
                .map_err(|_| HadoopError::Config(format!("{key} = {v:?} is not a number of milliseconds"))),
        }
    }

    fn ha_addresses(&self, key: &str, port: u16) -> Result<Vec<String>> {
        if self.get("yarn.resourcemanager.ha.enabled")?.as_deref().map(str::trim) != Some("true") {
            return Ok(vec![self.address(key, port)?]);
        }
        let ids = self.require("yarn.resourcemanager.ha.rm-ids")?;
        let ids: Vec<&str> = ids.split(',').map(str::trim).filter(|s| !s.is_empty()).collect();
        if ids.is_empty() {
            return Err(HadoopError::Config("yarn.resourcemanager.ha.rm-ids lists no ResourceManager".into()));
        }
        ids.iter()
            .map(|id| match self.get(&format!("{key}.{id}"))? {
                Some(a) => Ok(a),
                None => {
                    let host = self.require(&format!("yarn.resourcemanager.hostname.{id}")).map_err(|_| {
                        HadoopError::Config(format!(
                            "HA: neither {key}.{id} nor yarn.resourcemanager.hostname.{id} is set"
                        ))
                    })?;
                    Ok(format!("{host}:{port}"))
                }
            })
            .collect()
    }

    /// An RM address: `key`, or `yarn.resourcemanager.hostname` with the default port.
    fn address(&self, key: &str, port: u16) -> Result<String> {
        match self.get(key)? {
            Some(a) => Ok(a),
            None => {
                Ok(format!("{}:{port}", self.get("yarn.resourcemanager.hostname")?.as_deref().unwrap_or("0.0.0.0")))
            }
        }
    }

    /// Whether the cluster is secure (`hadoop.security.authentication=kerberos`).
    pub fn kerberos(&self) -> Result<bool> {
        Ok(self.get("hadoop.security.authentication")?.as_deref().map(str::trim) == Some("kerberos"))
    }

    /// The ResourceManager's Kerberos principal (`yarn.resourcemanager.principal`), with `_HOST`
    /// replaced by the first RM's host name as Hadoop's `SecurityUtil` does: the renewer of the
    /// job's delegation tokens.
    pub fn rm_principal(&self) -> Result<String> {
        let p = self.require("yarn.resourcemanager.principal")?;
        if !p.contains("_HOST") {
            return Ok(p);
        }
        let first = self.rm_addresses()?.into_iter().next().unwrap_or_default();
        let host = first.rsplit_once(':').map_or(first.as_str(), |(h, _)| h).to_lowercase();
        Ok(p.replace("_HOST", &host))
    }

    /// `fs.defaultFS` (required for staging uploads).
    pub fn default_fs(&self) -> Result<String> {
        self.require("fs.defaultFS")
    }
}

/// The name of the user this process runs as, as a JVM's `user.name` gives it.
fn login_name() -> Option<String> {
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: getpwuid_r writes the entry's strings into `buf` (length passed) and points
    // `pw.pw_name` there; `found` is null unless `pw` was filled. Both outlive the read below.
    unsafe {
        let mut pw: libc::passwd = std::mem::zeroed();
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        let rc = libc::getpwuid_r(libc::geteuid(), &mut pw, buf.as_mut_ptr(), buf.len(), &mut found);
        if rc != 0 || found.is_null() || pw.pw_name.is_null() {
            return std::env::var("USER").ok();
        }
        Some(std::ffi::CStr::from_ptr(pw.pw_name).to_string_lossy().into_owned())
    }
}

/// Byte range of the first `${name}` with a non-empty name free of `}`, `$` and spaces (so nested
/// references expand from the inside out), as Hadoop's `findSubVariable`: (index of `$`, index
/// of `}`).
fn innermost_reference(s: &str) -> Option<(usize, usize)> {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(i) = s[from..].find("${").map(|i| i + from) {
        let rest = &s[i + 2..];
        match rest.find(['}', '$', ' ']) {
            Some(j) if b[i + 2 + j] == b'}' && j > 0 => return Some((i, i + 2 + j)),
            _ => from = i + 2,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Either directory alone is the configuration; with both, YARN_CONF_DIR's keys win.
    #[test]
    fn hadoop_and_yarn_conf_dirs() {
        let base = std::env::temp_dir().join(format!("ps-yarn-dirs-{}", std::process::id()));
        let site = |d: &str, kv: &[(&str, &str)]| {
            let p = base.join(d);
            std::fs::create_dir_all(&p).unwrap();
            let props: String =
                kv.iter().map(|(k, v)| format!("<property><name>{k}</name><value>{v}</value></property>")).collect();
            std::fs::write(p.join("yarn-site.xml"), format!("<configuration>{props}</configuration>")).unwrap();
            p
        };
        let h = site("h", &[("yarn.resourcemanager.hostname", "rm-h"), ("a", "1")]);
        let y = site("y", &[("yarn.resourcemanager.hostname", "rm-y")]);
        let host = |c: HadoopConf| c.get("yarn.resourcemanager.hostname").unwrap();
        assert_eq!(host(HadoopConf::from_dirs(Some(h.clone()), None).unwrap()).as_deref(), Some("rm-h"));
        assert_eq!(host(HadoopConf::from_dirs(None, Some(y.clone())).unwrap()).as_deref(), Some("rm-y"));
        let both = HadoopConf::from_dirs(Some(h), Some(y)).unwrap();
        assert_eq!(both.get("a").unwrap().as_deref(), Some("1"));
        assert_eq!(host(both).as_deref(), Some("rm-y"));
        assert!(HadoopConf::from_dirs(None, None).unwrap().all().unwrap().is_empty());
        let _ = std::fs::remove_dir_all(&base);
    }

    #[test]
    fn reads_site_files_and_defaults() {
        let d = std::env::temp_dir().join(format!("ps-yarn-conf-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("yarn-site.xml"),
            "<configuration><property><name>yarn.resourcemanager.hostname</name><value> rm1 </value></property>\
             <property><name>yarn.resourcemanager.webapp.address</name><value>rm1:18088</value></property></configuration>",
        )
        .unwrap();
        std::fs::write(d.join("core-site.xml"), "<configuration><property><name>fs.defaultFS</name><value>hdfs://nn:8020</value></property></configuration>").unwrap();
        let c = HadoopConf::load_dir(&d).unwrap();
        assert_eq!(c.rm_webapp().unwrap(), "rm1:18088");
        assert_eq!(c.rm_schedulers().unwrap(), vec!["rm1:8030".to_string()]);
        assert_eq!(c.rm_address().unwrap(), "rm1:8032");
        assert_eq!(c.rm_addresses().unwrap(), vec!["rm1:8032".to_string()]);
        let mut ha = c.clone();
        ha.set("yarn.resourcemanager.ha.enabled", "true");
        assert!(ha.rm_addresses().unwrap_err().to_string().contains("yarn.resourcemanager.ha.rm-ids"));
        ha.set("yarn.resourcemanager.ha.rm-ids", "a, b");
        ha.set("yarn.resourcemanager.address.a", "h1:1");
        assert!(ha.rm_addresses().unwrap_err().to_string().contains("yarn.resourcemanager.hostname.b"));
        ha.set("yarn.resourcemanager.hostname.b", "h2");
        assert_eq!(ha.rm_addresses().unwrap(), vec!["h1:1".to_string(), "h2:8032".to_string()]);
        ha.set("yarn.resourcemanager.scheduler.address.a", "h1:2");
        assert_eq!(ha.rm_schedulers().unwrap(), vec!["h1:2".to_string(), "h2:8030".to_string()]);
        assert_eq!(ha.rm_connect_max_wait().unwrap().as_secs(), 900);
        assert_eq!(ha.rm_connect_retry_interval().unwrap().as_secs(), 30);
        ha.set("yarn.resourcemanager.connect.retry-interval.ms", "500");
        assert_eq!(ha.rm_connect_retry_interval().unwrap().as_millis(), 500);
        ha.set("yarn.resourcemanager.connect.retry-interval.ms", "1s");
        assert!(ha.rm_connect_retry_interval().unwrap_err().to_string().contains("retry-interval.ms"));
        assert!(ha.rm_web_urls().unwrap_err().to_string().contains("yarn.resourcemanager.hostname.a"));
        ha.set("yarn.resourcemanager.hostname.a", "h1");
        assert_eq!(ha.rm_web_urls().unwrap(), vec!["http://h1:8088".to_string(), "http://h2:8088".to_string()]);
        ha.set("yarn.http.policy", "HTTPS_ONLY");
        ha.set("yarn.resourcemanager.webapp.https.address.b", "h2:9443");
        assert_eq!(ha.rm_web_urls().unwrap(), vec!["https://h1:8090".to_string(), "https://h2:9443".to_string()]);
        ha.set("yarn.http.policy", "HTTPS");
        assert!(ha.rm_web_urls().unwrap_err().to_string().contains("yarn.http.policy"));
        assert_eq!(c.rm_web_urls().unwrap(), vec!["http://rm1:18088".to_string()]);
        assert!(!ha.kerberos().unwrap());
        ha.set("hadoop.security.authentication", "kerberos");
        assert!(ha.kerberos().unwrap());
        assert!(ha.rm_principal().unwrap_err().to_string().contains("yarn.resourcemanager.principal"));
        ha.set("yarn.resourcemanager.principal", "rm/_HOST@EXAMPLE.COM");
        assert_eq!(ha.rm_principal().unwrap(), "rm/h1@EXAMPLE.COM");
        ha.set("yarn.resourcemanager.connect.max-wait.ms", "15s");
        assert!(ha.rm_connect_max_wait().unwrap_err().to_string().contains("connect.max-wait.ms"));
        assert_eq!(c.default_fs().unwrap(), "hdfs://nn:8020");
        assert!(c.require("nope").unwrap_err().to_string().contains("nope is not set in"));
        assert_eq!(c.get("fs.defaultFS").unwrap().as_deref(), Some("hdfs://nn:8020"));
        std::fs::write(d.join("hdfs-site.xml"), "<configuration><property>").unwrap();
        assert!(HadoopConf::load_dir(&d).unwrap_err().to_string().contains("hdfs-site.xml"));
        std::fs::remove_dir_all(&d).unwrap();
    }

    fn conf_of(props: &[(&str, &str)]) -> HadoopConf {
        let mut c = HadoopConf::default();
        props.iter().for_each(|(k, v)| c.set(k, v));
        c
    }

    #[test]
    fn values_expand_as_hadoop_expands_them() {
        let c = conf_of(&[
            ("yarn.resourcemanager.hostname", "rm1"),
            ("yarn.resourcemanager.webapp.address", "${yarn.resourcemanager.hostname}:18088"),
            ("a", "x${b}y"),
            ("b", "${c}"),
            ("c", "C"),
            ("unknown", "${no.such.key}/z"),
            ("self", "<${self}>"),
            ("nested", "${${c}}"),
            ("home", "${env.HOME}"),
            ("unset", "${env.PS_SURELY_UNSET_VAR:-fallback}|${env.PS_SURELY_UNSET_VAR-other}"),
            ("user", "/tmp/hadoop-${user.name}"),
            ("spaced", "${not a name}"),
        ]);
        let get = |k: &str| c.get(k).unwrap().unwrap();
        assert_eq!(c.rm_webapp().unwrap(), "rm1:18088");
        assert_eq!(c.rm_schedulers().unwrap(), vec!["rm1:8030".to_string()]);
        assert_eq!(get("a"), "xCy");
        assert_eq!(get("unknown"), "${no.such.key}/z");
        assert_eq!(get("self"), "<${self}>");
        // The inner reference expands first; `${C}` is then unknown and stays.
        assert_eq!(get("nested"), "${C}");
        assert_eq!(get("home"), std::env::var("HOME").unwrap());
        assert_eq!(get("unset"), "fallback|other");
        assert_eq!(get("user"), format!("/tmp/hadoop-{}", login_name().unwrap()));
        assert!(!get("user").contains('$'));
        assert_eq!(get("spaced"), "${not a name}");
        // A chain longer than Hadoop's 20 expansions is refused, naming the value.
        let mut long = HadoopConf::default();
        for i in 0..25 {
            long.set(&format!("k{i}"), &format!("${{k{}}}", i + 1));
        }
        long.set("k25", "end");
        let e = long.get("k0").unwrap_err().to_string();
        assert!(e.contains("depth too large") && e.contains("${k1}"), "{e}");
        assert_eq!(long.get("k10").unwrap().as_deref(), Some("end"));
    }

    #[test]
    fn final_properties_are_not_overridden_by_later_files() {
        let d = std::env::temp_dir().join(format!("ps-yarn-final-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let prop = |k: &str, v: &str, fin: bool| {
            let f = if fin { "<final>true</final>" } else { "" };
            format!("<property><name>{k}</name><value>{v}</value>{f}</property>")
        };
        let core = format!(
            "<configuration>{}{}</configuration>",
            prop("fs.defaultFS", "hdfs://a:8020", true),
            prop("x", "1", false)
        );
        std::fs::write(d.join("core-site.xml"), core).unwrap();
        let yarn = format!(
            "<configuration>{}{}</configuration>",
            prop("fs.defaultFS", "hdfs://b:8020", false),
            prop("x", "2", false)
        );
        std::fs::write(d.join("yarn-site.xml"), yarn).unwrap();
        let c = HadoopConf::load_dir(&d).unwrap();
        assert_eq!(c.default_fs().unwrap(), "hdfs://a:8020");
        assert_eq!(c.get("x").unwrap().as_deref(), Some("2"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
