//! log4rs set-up shared by the binaries: plain lines on stderr (the launcher prefixes them with
//! the process id) with ISO-8601 local timestamps, levels from `PS_LOG`: a default level and
//! per-module levels as `RUST_LOG` writes them (`info`, `debug`,
//! `info,ps_runtime::server=debug,hdfs_native=warn`; default info).

use log::LevelFilter;
use log4rs::append::console::{ConsoleAppender, Target};
use log4rs::config::{Appender, Config, Logger, Root};
use log4rs::encode::pattern::PatternEncoder;

/// The timestamp every log line starts with: the date too, as a scheduled job's logs span days.
pub const TIME_PATTERN: &str = "{d(%Y-%m-%dT%H:%M:%S%.3f)}";

/// Levels read from `PS_LOG`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LogLevels {
    /// The level of everything not named below (`None`: the binary's default).
    pub default: Option<LevelFilter>,
    /// Per module (a path prefix such as `ps_runtime::server`), in the order given.
    pub modules: Vec<(String, LevelFilter)>,
}

impl LogLevels {
    /// Parses `level`, `module=level` and comma-separated lists of both; errors name the bad part.
    pub fn parse(spec: &str) -> Result<LogLevels, String> {
        let mut out = LogLevels::default();
        for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let level = |s: &str| {
                s.trim().parse::<LevelFilter>().map_err(|_| {
                    format!("'{part}': '{}' is not a level (off, error, warn, info, debug, trace)", s.trim())
                })
            };
            match part.split_once('=') {
                Some((module, l)) if !module.trim().is_empty() => out.modules.push((module.trim().into(), level(l)?)),
                Some(_) => return Err(format!("'{part}': a module name is missing before '='")),
                None => out.default = Some(level(part)?),
            }
        }
        Ok(out)
    }

    /// From `PS_LOG` (empty if unset), and the error for a bad value, to be logged once logging
    /// works (the bad value is then ignored, not fatal: logging must not stop a job).
    pub fn from_env() -> (LogLevels, Option<String>) {
        match std::env::var("PS_LOG") {
            Ok(v) => match LogLevels::parse(&v) {
                Ok(l) => (l, None),
                Err(e) => (LogLevels::default(), Some(format!("PS_LOG={v}: {e}; using the default levels"))),
            },
            Err(_) => (LogLevels::default(), None),
        }
    }

    /// Adds a logger per module to `config` (each writing to `appender`), then the root at the
    /// default level.
    pub fn build(
        &self,
        config: log4rs::config::runtime::ConfigBuilder,
        appender: &str,
        default: LevelFilter,
    ) -> Option<Config> {
        let config = self
            .modules
            .iter()
            .fold(config, |c, (m, l)| c.logger(Logger::builder().appender(appender).additive(false).build(m, *l)));
        config.build(Root::builder().appender(appender).build(self.default.unwrap_or(default))).ok()
    }
}

pub fn init(default: LevelFilter) {
    let (levels, bad) = LogLevels::from_env();
    let stderr = ConsoleAppender::builder()
        .target(Target::Stderr)
        .encoder(Box::new(PatternEncoder::new(&format!("{TIME_PATTERN} {{h({{l:5}})}} {{m}}{{n}}"))))
        .build();
    let config = Config::builder().appender(Appender::builder().build("stderr", Box::new(stderr)));
    if let Some(config) = levels.build(config, "stderr", default) {
        // A second init (tests running several processes in one binary) is harmless.
        let _ = log4rs::init_config(config);
    }
    if let Some(e) = bad {
        log::warn!("{e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ps_log_takes_a_level_and_module_levels() {
        assert_eq!(LogLevels::parse("debug").unwrap().default, Some(LevelFilter::Debug));
        let l = LogLevels::parse("info, ps_runtime::server=debug,hdfs_native=WARN").unwrap();
        assert_eq!(l.default, Some(LevelFilter::Info));
        assert_eq!(
            l.modules,
            vec![("ps_runtime::server".into(), LevelFilter::Debug), ("hdfs_native".into(), LevelFilter::Warn)]
        );
        assert_eq!(LogLevels::parse("").unwrap(), LogLevels::default());
        let e = LogLevels::parse("info,ps_runtime=loud").unwrap_err();
        assert!(e.contains("'ps_runtime=loud'") && e.contains("'loud' is not a level"), "{e}");
        assert!(LogLevels::parse("=debug").unwrap_err().contains("module name is missing"));
        assert!(LogLevels::parse("verbose").unwrap_err().contains("'verbose' is not a level"));
    }
}
