//! What can go wrong in `yarn-submit`, by what failed. Each variant's text is exactly the message
//! the launcher always printed (tests and tooling grep the log for them), so a variant wrapping an
//! underlying error repeats that error's text as well as returning it from `source()`: the log
//! shows one line per failure (`{e}`), and callers that want the cause can still walk to it.

use ps_runtime::PsError;
use ps_yarn::YarnError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    // The command line.
    #[error("--master: cannot read the process count in '{0}'")]
    MasterProcessCount(String),
    #[error("--master: local[0] has no processes")]
    NoLocalProcesses,
    #[error("'{0}' is not one of off, conservative, aggressive")]
    Prefetch(String),
    #[error("no application given")]
    NoApplication,
    #[error("--master yarn needs --workers N")]
    WorkersMissing,
    #[error("--workers must be at least 1")]
    NoWorkers,
    #[error(
        "--deploy-mode client: the job always runs in the cluster, driven by its application master \
         (yarn-submit follows it from here); leave --deploy-mode out"
    )]
    DeployModeClient,
    #[error("{flag} {url} does not exist")]
    InputMissing { flag: String, url: String },
    #[error("{flag} {url}: no input files there (names starting with _ or . are skipped)")]
    NoInputFiles {
        flag: String,
        url: String,
        #[source]
        source: PsError,
    },
    #[error("--output {url} exists (use --overwrite to replace it)")]
    OutputExists { url: String },
    #[error(
        "{flag} {path}: a local path under --master yarn names a different disk in every container; \
         give a path on the cluster's file system (hdfs://..., or without a scheme for fs.defaultFS)"
    )]
    LocalPathOnYarn { flag: String, path: String },
    #[error("{0}")]
    AppRejected(String),
    #[error("asking the runtime binary {bin} about the application: {why}")]
    RuntimeDescribe { bin: String, why: String },

    // Configuration: the runtime's (`--conf` and flags) and the application's options.
    #[error("reading {}: {source}", path.display())]
    ReadFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(PsError),
    #[error(transparent)]
    App(PsError),

    // The binaries to launch or stage.
    #[error("locating yarn-submit: {0}")]
    LocateSelf(#[source] std::io::Error),
    #[error("{name} not found next to {} ({hint})", exe.display())]
    BinaryNotFound { name: &'static str, exe: PathBuf, hint: &'static str },

    // The local job directory (hostfile, secret, job.json).
    #[error(transparent)]
    JobDir(PsError),
    #[error("{what} in {}: {source}", dir.display())]
    JobFile {
        what: &'static str,
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Encode(serde_json::Error),

    // HDFS staging of a YARN job.
    #[error("creating the staging directory: {0}")]
    StagingDir(#[source] PsError),
    #[error("uploading {url}: {source}")]
    Upload {
        url: String,
        #[source]
        source: PsError,
    },
    #[error(transparent)]
    Storage(PsError),
    #[error("{flag} {url}: {source}")]
    Reach {
        flag: String,
        url: String,
        #[source]
        source: PsError,
    },

    // The YARN cluster: its configuration and the ResourceManager (IPC or REST).
    #[error("neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set: point one at the cluster's configuration (yarn-site.xml, core-site.xml)")]
    NoHadoopConf,
    #[error("{dir}/yarn-site.xml sets neither {key} nor yarn.resourcemanager.hostname")]
    NoResourceManager { dir: String, key: &'static str },
    #[error(transparent)]
    HadoopConf(ps_hadoop::HadoopError),
    #[error("--submit-via rest: this is a Kerberos cluster, whose REST API needs SPNEGO (not supported); use --submit-via ipc")]
    RestOnKerberos,
    #[error("getting an HDFS delegation token for the job from {nn}: {source}")]
    DelegationToken {
        nn: String,
        #[source]
        source: YarnError,
    },
    #[error(transparent)]
    Rm(YarnError),

    // Running the job.
    #[error("starting {}: {source}", bin.display())]
    Launch {
        bin: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The local job tracker (progress reports, `--ui`) could not listen.
    #[error("--ui-bind {bind}: cannot listen for the job's progress reports: {source}")]
    Tracker { bind: String, source: std::io::Error },
    /// A local job: the first failure, with the failed process's own last words when it had any.
    /// `dir`: the job directory, when it is kept (`--job-dir`).
    #[error("job failed: {reason}{}", dir.as_ref().map(|d| format!(" (job directory kept: {})", d.display())).unwrap_or_default())]
    JobFailed { reason: String, dir: Option<PathBuf> },
    /// A YARN application that did not end FINISHED + SUCCEEDED.
    #[error("{app_id} ended {state} / {final_status}: {diagnostics}")]
    AppFailed { app_id: String, state: String, final_status: String, diagnostics: String },

    // The job's stats: per-process files in, the merged summary out.
    #[error("reading stats of process {process} ({path}): {source}")]
    ReadStats {
        process: usize,
        path: String,
        #[source]
        source: PsError,
    },
    #[error("reading stats of process {process} ({path}): {source}")]
    ParseStats {
        process: usize,
        path: String,
        #[source]
        source: serde_json::Error,
    },
    #[error("writing stats to {url}: {source}")]
    WriteStats {
        url: String,
        #[source]
        source: PsError,
    },
}

impl ClientError {
    /// yarn-submit's exit status for this error: 2 for a command line that cannot run (as for
    /// every usage error, whatever the master), 1 for a job that could not be submitted or failed.
    pub fn exit_code(&self) -> i32 {
        use ClientError::*;
        match self {
            MasterProcessCount(_)
            | NoLocalProcesses
            | Prefetch(_)
            | NoApplication
            | WorkersMissing
            | NoWorkers
            | DeployModeClient
            | InputMissing { .. }
            | NoInputFiles { .. }
            | OutputExists { .. }
            | LocalPathOnYarn { .. }
            | AppRejected(_)
            | Config(_)
            | App(_) => 2,
            _ => 1,
        }
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "gone")
    }

    /// The texts the launcher printed when its errors were `String`s, character for character.
    #[test]
    fn messages_are_unchanged() {
        let ps = || PsError::Io("hdfs down".into());
        let cases: Vec<(ClientError, &str)> = vec![
            (ClientError::MasterProcessCount("local[x]".into()), "--master: cannot read the process count in 'local[x]'"),
            (ClientError::NoLocalProcesses, "--master: local[0] has no processes"),
            (ClientError::Prefetch("x".into()), "'x' is not one of off, conservative, aggressive"),
            (ClientError::NoApplication, "no application given"),
            (ClientError::WorkersMissing, "--master yarn needs --workers N"),
            (ClientError::NoWorkers, "--workers must be at least 1"),
            (
                ClientError::LocalPathOnYarn { flag: "--input".into(), path: "file:r.tsv".into() },
                "--input file:r.tsv: a local path under --master yarn names a different disk in every container; \
                 give a path on the cluster's file system (hdfs://..., or without a scheme for fs.defaultFS)",
            ),
            (ClientError::ReadFile { path: "/c.json".into(), source: io() }, "reading /c.json: gone"),
            (ClientError::Config(PsError::Config("threads: no".into())), "configuration error: threads: no"),
            (ClientError::LocateSelf(io()), "locating yarn-submit: gone"),
            (
                ClientError::BinaryNotFound { name: "ps-runtime", exe: "/b/yarn-submit".into(), hint: "use --runtime-bin" },
                "ps-runtime not found next to /b/yarn-submit (use --runtime-bin)",
            ),
            (
                ClientError::JobFile { what: "writing hostfile", dir: "/j".into(), source: io() },
                "writing hostfile in /j: gone",
            ),
            (ClientError::StagingDir(ps()), "creating the staging directory: hdfs down"),
            (ClientError::Upload { url: "hdfs://n/f".into(), source: ps() }, "uploading hdfs://n/f: hdfs down"),
            (
                ClientError::NoHadoopConf,
                "neither HADOOP_CONF_DIR nor YARN_CONF_DIR is set: point one at the cluster's configuration (yarn-site.xml, core-site.xml)",
            ),
            (
                ClientError::NoResourceManager { dir: "/etc/h".into(), key: "yarn.resourcemanager.webapp.address" },
                "/etc/h/yarn-site.xml sets neither yarn.resourcemanager.webapp.address nor yarn.resourcemanager.hostname",
            ),
            (ClientError::Rm(YarnError::Io("rm: refused".into())), "rm: refused"),
            (ClientError::Launch { bin: "/b/ps-runtime".into(), source: io() }, "starting /b/ps-runtime: gone"),
            (
                ClientError::JobFailed { reason: "process 1 exited with status 1: boom".into(), dir: Some("/j".into()) },
                "job failed: process 1 exited with status 1: boom (job directory kept: /j)",
            ),
            (ClientError::JobFailed { reason: "boom".into(), dir: None }, "job failed: boom"),
            (ClientError::OutputExists { url: "/o".into() }, "--output /o exists (use --overwrite to replace it)"),
            (
                ClientError::AppFailed {
                    app_id: "application_1_0001".into(),
                    state: "FINISHED".into(),
                    final_status: "FAILED".into(),
                    diagnostics: "process 1 failed".into(),
                },
                "application_1_0001 ended FINISHED / FAILED: process 1 failed",
            ),
            (
                ClientError::ReadStats { process: 1, path: "/j/stats-1.json".into(), source: ps() },
                "reading stats of process 1 (/j/stats-1.json): hdfs down",
            ),
            (
                ClientError::WriteStats { url: "/s.json".into(), source: ps() },
                "writing stats to /s.json: hdfs down",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
        let cause = ClientError::ReadFile { path: "/c.json".into(), source: io() };
        assert_eq!(std::error::Error::source(&cause).map(|s| s.to_string()).as_deref(), Some("gone"));
    }

    /// A command line that cannot run exits 2, as clap's own usage errors do; a failure to submit
    /// or a failed job exits 1.
    #[test]
    fn usage_errors_exit_2_and_failures_1() {
        for e in [
            ClientError::WorkersMissing,
            ClientError::DeployModeClient,
            ClientError::InputMissing { flag: "--input".into(), url: "/x".into() },
            ClientError::OutputExists { url: "/o".into() },
            ClientError::Config(PsError::Config("k".into())),
        ] {
            assert_eq!(e.exit_code(), 2, "{e}");
        }
        for e in [ClientError::NoHadoopConf, ClientError::JobFailed { reason: "x".into(), dir: None }] {
            assert_eq!(e.exit_code(), 1, "{e}");
        }
    }
}
