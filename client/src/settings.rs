//! The job's runtime configuration from yarn-submit's command line: the defaults, then
//! `--properties-file` (JSON, or Spark's `key value` lines), then `--conf KEY=VALUE`, then the
//! flags. Every key is checked against `RuntimeConfig`, so a bad one is named.

use crate::error::{ClientError, Result};
use crate::Cli;
use ps_runtime::{Consistency, RuntimeConfig};
use std::path::{Path, PathBuf};

impl Cli {
    /// Whether the user chose the threads per process: `--threads`, `--executor-cores`, `--conf
    /// threads=N` or a `threads` key in `--properties-file`.
    pub fn threads_chosen(&self) -> Result<bool> {
        if self.threads.is_some() || self.executor_cores.is_some() {
            return Ok(true);
        }
        if self.conf.iter().any(|c| c.split_once('=').is_some_and(|(k, _)| k.trim() == "threads")) {
            return Ok(true);
        }
        let Some(p) = self.properties_path() else { return Ok(false) };
        let known = serde_json::to_value(RuntimeConfig::default()).unwrap_or_default();
        Ok(properties(&p, &known)?.get("threads").is_some())
    }

    /// `--properties-file`, or the file `--conf FILE` named before --conf took settings.
    fn properties_path(&self) -> Option<PathBuf> {
        let legacy = self.conf.iter().find(|c| !c.contains('=')).map(PathBuf::from);
        self.properties_file.clone().or(legacy)
    }

    /// YARN: a container of `--worker-vcores V` runs V worker threads unless the user chose the
    /// threads: they share one copy of the model, which scales better than more containers of
    /// fewer threads (docs/SCALE-OUT.md).
    pub fn container_threads(&self, runtime: &mut RuntimeConfig) -> Result<()> {
        if let Some(v) = self.worker_vcores.filter(|&v| v > 0) {
            if !self.threads_chosen()? {
                runtime.threads = v as usize;
            }
        }
        Ok(())
    }

    /// The runtime configuration: defaults, then `--properties-file`, then `--conf`, then flags.
    pub fn runtime_config(&self) -> Result<RuntimeConfig> {
        let bad = |m: String| ClientError::Config(ps_runtime::PsError::Config(m));
        // `--conf FILE` named the JSON file before --conf took settings; still accepted.
        if let Some(p) = self.conf.iter().find(|c| !c.contains('=')) {
            log::warn!("--conf {p}: a file goes to --properties-file now (--conf takes KEY=VALUE)");
        }
        let known = serde_json::to_value(RuntimeConfig::default()).unwrap_or_default();
        let (mut v, mut source) = match self.properties_path() {
            Some(p) => (properties(&p, &known)?, p.display().to_string()),
            None => (serde_json::json!({}), "--conf".to_string()),
        };
        let settings: Vec<&String> = self.conf.iter().filter(|c| c.contains('=')).collect();
        for kv in &settings {
            let (key, value) = kv.split_once('=').unwrap_or((kv, ""));
            set_key(&mut v, &known, key.trim(), value).map_err(|e| bad(format!("--conf {key}: {e}")))?;
            // Alone, so that a value of the wrong type is reported with its key.
            let mut alone = serde_json::json!({});
            set_key(&mut alone, &known, key.trim(), value).map_err(|e| bad(format!("--conf {key}: {e}")))?;
            RuntimeConfig::from_json(&alone.to_string(), &format!("--conf {key}")).map_err(ClientError::Config)?;
        }
        if !settings.is_empty() && source != "--conf" {
            source = format!("{source} with --conf");
        }
        let mut cfg = RuntimeConfig::from_json(&v.to_string(), &source).map_err(ClientError::Config)?;
        if let Some(t) = self.threads.or(self.executor_cores) {
            cfg.threads = t;
        }
        if let Some(c) = self.consistency {
            cfg.consistency = c;
        }
        if let Some(s) = self.staleness {
            cfg.staleness = s;
        }
        if let Some(p) = self.prefetch {
            cfg.prefetch = p;
        }
        cfg.stats_per_clock |= self.stats_per_clock;
        if let Some(r) = self.port_range {
            cfg.port_range = Some(r);
        }
        let ck = &mut cfg.checkpoint;
        if let Some(u) = &self.checkpoint {
            ck.url = Some(u.clone());
        }
        if let Some(c) = self.checkpoint_every {
            ck.every = c;
        }
        if let Some(m) = self.snapshot {
            ck.snapshot = m;
        }
        if let Some(k) = self.keep_checkpoints {
            ck.keep = k;
        }
        ck.resume |= self.resume;
        let geo = &mut cfg.geo;
        if let Some(d) = self.datacenters {
            geo.datacenters = d;
        }
        if let Some(list) = &self.dc_of {
            geo.dc_of = list.clone();
        }
        if let Some(m) = self.inter_dc {
            geo.inter_dc = m;
        }
        if let Some(v) = self.significance {
            geo.significance = v;
        }
        if let Some(ds) = self.mirror_clock_bound {
            geo.mirror_clock_bound = ds;
        }
        if let Some(on) = self.soft_significance {
            geo.soft_significance = on;
        }
        if let Some(b) = self.wan_mbps {
            geo.wan_mbps = Some(b);
        }
        if let Some(l) = self.wan_delay_ms {
            geo.wan_delay_ms = l;
        }
        if let Some(p) = &self.wan_matrix {
            // Read here and carried in the job's configuration, so processes on other hosts
            // (YARN containers) need no copy of the file.
            let text =
                std::fs::read_to_string(p).map_err(|source| ClientError::ReadFile { path: p.clone(), source })?;
            let m = serde_json::from_str(&text).map_err(|e| {
                ClientError::Config(ps_runtime::PsError::Config(format!("--wan-matrix {}: {e}", p.display())))
            })?;
            geo.wan_matrix = Some(m);
        }
        // An app may run under another model than the job-wide default (PageRank: BSP) when
        // nothing names one: no flag, no key in the file or --conf, no WAN between data centers.
        let named = |k: &str| v.get(k).is_some();
        let chosen =
            self.consistency.is_some() || self.staleness.is_some() || named("consistency") || named("staleness");
        if !chosen && cfg.geo.datacenters <= 1 && cfg.geo.dc_of.is_empty() {
            // The app's own default, as its runtime binary describes it (a user's app too).
            let default = crate::app_info::info(self).ok().and_then(|i| i.default_consistency);
            if let Some(c) = default {
                let app = self.app.first().map(String::as_str).unwrap_or("");
                log::info!(
                    "{app}: consistency {} (the app's default; --consistency chooses another)",
                    format!("{c:?}").to_lowercase()
                );
                cfg.consistency = c;
            }
        }
        if cfg.consistency == Consistency::Bsp {
            cfg.staleness = 0;
        }
        cfg.validate().map_err(ClientError::Config)?;
        Ok(cfg)
    }
}

/// A properties file: a JSON object of `RuntimeConfig` keys, or, as Spark's `--properties-file`
/// takes them, lines of `key value` or `key=value` (`#` or `!` comments, blank lines), with
/// dotted keys for nested sections (`checkpoint.every 6`).
fn properties(path: &Path, known: &serde_json::Value) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).map_err(|source| ClientError::ReadFile { path: path.into(), source })?;
    let bad = |m: String| ClientError::Config(ps_runtime::PsError::Config(format!("{}: {m}", path.display())));
    if text.trim_start().starts_with('{') {
        return serde_json::from_str(&text).map_err(|e| bad(e.to_string()));
    }
    let mut v = serde_json::json!({});
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
            continue;
        }
        let split = line.find(|c: char| c == '=' || c == ':' || c.is_whitespace()).unwrap_or(line.len());
        let (key, rest) = line.split_at(split);
        let value = rest.trim_start().strip_prefix(['=', ':']).unwrap_or(rest).trim();
        if key.starts_with("spark.") {
            return Err(bad(format!(
                "line {}: {key} is a Spark setting; this file takes the runtime's own keys (see docs/CONFIGURATION.md)",
                n + 1
            )));
        }
        set_key(&mut v, known, key, value).map_err(|e| bad(format!("line {}: {key}: {e}", n + 1)))?;
    }
    Ok(v)
}

/// Sets `key` (dotted path into nested sections) of a JSON object to `value`: JSON if it parses
/// as JSON (numbers, true/false, lists), else the string itself (`--conf consistency=ssp`).
/// `known` (the defaults) says which keys and sections exist, so errors name the key.
fn set_key(
    v: &mut serde_json::Value,
    mut known: &serde_json::Value,
    key: &str,
    value: &str,
) -> std::result::Result<(), String> {
    let parsed = serde_json::from_str(value).unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
    let mut parts = key.split('.').peekable();
    let mut at = v;
    while let Some(part) = parts.next() {
        let Some(k) = known.get(part) else {
            let names: Vec<&String> = known.as_object().map(|o| o.keys().collect()).unwrap_or_default();
            return Err(format!(
                "no setting '{part}' (known: {})",
                names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
            ));
        };
        known = k;
        if parts.peek().is_some() && !known.is_object() {
            return Err(format!("'{part}' is a setting, not a section"));
        }
        let obj = at.as_object_mut().ok_or_else(|| format!("'{part}' is inside a setting that is not a section"))?;
        if parts.peek().is_none() {
            obj.insert(part.to_string(), parsed);
            return Ok(());
        }
        at = obj.entry(part).or_insert_with(|| serde_json::json!({}));
    }
    Err("an empty key".into())
}
