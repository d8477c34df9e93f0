//! Hadoop configuration files (`$HADOOP_CONF_DIR/{core,yarn}-site.xml`): the few addresses YARN
//! clients need. Values are read as written (`${var}` substitution is not supported).

use crate::error::{Result, YarnError};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, Default)]
pub struct HadoopConf {
    props: HashMap<String, String>,
    pub dir: Option<PathBuf>,
}

impl HadoopConf {
    /// Loads `core-site.xml` and `yarn-site.xml` from `dir` (missing files are fine).
    pub fn load_dir(dir: &Path) -> Result<Self> {
        let mut c = HadoopConf { props: HashMap::new(), dir: Some(dir.to_path_buf()) };
        for f in ["core-site.xml", "hdfs-site.xml", "yarn-site.xml"] {
            let p = dir.join(f);
            if p.exists() {
                c.add_file(&p)?;
            }
        }
        Ok(c)
    }

    /// From `$HADOOP_CONF_DIR` (empty if unset).
    pub fn from_env() -> Result<Self> {
        match std::env::var_os("HADOOP_CONF_DIR") {
            Some(d) => Self::load_dir(Path::new(&d)),
            None => Ok(HadoopConf::default()),
        }
    }

    pub fn add_file(&mut self, path: &Path) -> Result<()> {
        let text =
            std::fs::read_to_string(path).map_err(|e| YarnError::io(format!("reading {}", path.display()), e))?;
        let doc = roxmltree::Document::parse(&text)
            .map_err(|e| YarnError::Config(format!("{}: not valid XML: {e}", path.display())))?;
        for p in doc.descendants().filter(|n| n.has_tag_name("property")) {
            let child = |name: &str| p.children().find(|c| c.has_tag_name(name)).and_then(|c| c.text());
            if let (Some(k), Some(v)) = (child("name"), child("value")) {
                self.props.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
        Ok(())
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.props.get(key).map(String::as_str)
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.props.insert(key.to_string(), value.to_string());
    }

    /// A required key; the error names it and where it was looked for.
    pub fn require(&self, key: &str) -> Result<&str> {
        self.get(key).ok_or_else(|| {
            let dir = self.dir.as_ref().map_or("(HADOOP_CONF_DIR not set)".into(), |d| d.display().to_string());
            YarnError::Config(format!("{key} is not set in {dir}"))
        })
    }

    /// RM web address (`yarn.resourcemanager.webapp.address`, default `<rm host>:8088`).
    pub fn rm_webapp(&self) -> String {
        self.get("yarn.resourcemanager.webapp.address")
            .map(String::from)
            .unwrap_or_else(|| format!("{}:8088", self.get("yarn.resourcemanager.hostname").unwrap_or("0.0.0.0")))
    }

    /// RM scheduler address (`yarn.resourcemanager.scheduler.address`, default `<rm host>:8030`).
    pub fn rm_scheduler(&self) -> String {
        self.get("yarn.resourcemanager.scheduler.address")
            .map(String::from)
            .unwrap_or_else(|| format!("{}:8030", self.get("yarn.resourcemanager.hostname").unwrap_or("0.0.0.0")))
    }

    /// `fs.defaultFS` (required for staging uploads).
    pub fn default_fs(&self) -> Result<&str> {
        self.require("fs.defaultFS")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(c.rm_webapp(), "rm1:18088");
        assert_eq!(c.rm_scheduler(), "rm1:8030");
        assert_eq!(c.default_fs().unwrap(), "hdfs://nn:8020");
        assert!(c.require("nope").unwrap_err().to_string().contains("nope is not set in"));
        std::fs::write(d.join("hdfs-site.xml"), "<configuration><property>").unwrap();
        assert!(HadoopConf::load_dir(&d).unwrap_err().to_string().contains("hdfs-site.xml"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
