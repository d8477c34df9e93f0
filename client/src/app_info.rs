//! What `yarn-submit` learns of the job's application before anything starts: whether its
//! arguments are good, its `--help`, its storage locations and clocks. Built-in apps are asked
//! in-process; with `--runtime-bin` the binary that will run the job is asked
//! (`<bin> describe APP ARGS...`), so a user's own apps are checked the same way.

use crate::error::{ClientError, Result};
use crate::Cli;
use ps_runtime::{Consistency, OutputPolicy};
use std::process::Command;

/// The application's storage locations (flag, URL), what it does with an existing output, and
/// the consistency model it runs under when the job names none.
pub struct AppInfo {
    pub locations: Vec<(String, String)>,
    pub output_policy: OutputPolicy,
    pub default_consistency: Option<Consistency>,
}

/// The answer about the application and its arguments.
pub enum Check {
    Good(AppInfo),
    /// `APP --help`: the text to print.
    Help(String),
    /// Bad arguments or an unknown application: the reason.
    Bad(String),
}

/// Asks about `cli`'s application.
pub fn check(cli: &Cli) -> Result<Check> {
    let (app, args) = cli.app.split_first().ok_or(ClientError::NoApplication)?;
    let wants_help = args.iter().any(|a| a == "--help" || a == "-h");
    let Some(bin) = &cli.runtime_bin else {
        if wants_help {
            if let Some(h) = ps_apps::help(app) {
                return Ok(Check::Help(h));
            }
        }
        return Ok(match ps_apps::build(app, args) {
            Ok(built) => Check::Good(AppInfo {
                locations: built.locations().into_iter().map(|(f, u)| (f.to_string(), u)).collect(),
                output_policy: built.output_policy(),
                default_consistency: built.default_consistency(),
            }),
            Err(e) => Check::Bad(e.to_string()),
        });
    };
    let out = Command::new(bin)
        .arg("describe")
        .arg(app)
        .args(args)
        .output()
        .map_err(|e| ClientError::RuntimeDescribe { bin: bin.display().to_string(), why: e.to_string() })?;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    match out.status.code() {
        Some(0) if wants_help => Ok(Check::Help(stdout.into_owned())),
        Some(0) => parse(&stdout).ok_or_else(|| ClientError::RuntimeDescribe {
            bin: bin.display().to_string(),
            why: format!("`describe` printed {:?}, not its JSON", stdout.trim()),
        }),
        Some(2) => Ok(Check::Bad(stderr.trim().to_string())),
        _ => Err(ClientError::RuntimeDescribe {
            bin: bin.display().to_string(),
            why: format!("`describe {app}` ended with {}: {}", out.status, stderr.trim()),
        }),
    }
}

fn parse(json: &str) -> Option<Check> {
    let v: serde_json::Value = serde_json::from_str(json.trim()).ok()?;
    let locations = v["locations"]
        .as_array()?
        .iter()
        .map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string())))
        .collect::<Option<Vec<_>>>()?;
    let output_policy = OutputPolicy::from_name(v["output_policy"].as_str().unwrap_or_default());
    let default_consistency = v["consistency"].as_str().and_then(|c| c.parse().ok());
    Some(Check::Good(AppInfo { locations, output_policy, default_consistency }))
}

/// The application's facts, or its bad arguments as an error.
pub fn info(cli: &Cli) -> Result<AppInfo> {
    match check(cli)? {
        Check::Good(i) => Ok(i),
        Check::Help(_) => Err(ClientError::AppRejected("--help is not a job".into())),
        Check::Bad(why) => Err(ClientError::AppRejected(why)),
    }
}
