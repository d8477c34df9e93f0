//! What can go wrong in the application master, by what failed. Each variant's text is exactly
//! the message the AM always logged and sent to the ResourceManager as the application's
//! diagnostics (tests and operators grep them), so a variant wrapping an underlying error repeats
//! that error's text as well as returning it from `source()`.

use ps_hadoop::HadoopError;
use ps_runtime::PsError;
use ps_yarn::YarnError;

#[derive(Debug, thiserror::Error)]
pub enum AmError {
    // The container the AM runs in: its environment and credentials.
    #[error("{0} is not set: ps-app-master must run in a YARN container")]
    NotInContainer(&'static str),
    #[error("CONTAINER_ID '{0}' is malformed")]
    ContainerId(String),
    #[error(transparent)]
    HadoopConf(HadoopError),
    #[error(transparent)]
    Credentials(HadoopError),
    #[error("the container's token file has no AMRMToken")]
    NoAmRmToken,
    #[error("the container's credentials hold no job secret (was it submitted by yarn-submit?)")]
    NoSecret,
    #[error(transparent)]
    Secret(PsError),

    // The HDFS staging directory and the hostfile written to it.
    #[error(transparent)]
    StagingUrl(YarnError),
    #[error(transparent)]
    Staging(PsError),

    // Automatic restarts (`--restarts`).
    #[error("reading the job's configuration {url}: {source}")]
    JobFile { url: String, source: PsError },
    /// A failure the job did not restart from, with every earlier one.
    #[error("{0}")]
    GaveUp(String),

    // Data centers of a geo-distributed job (`--dc-map`).
    #[error("reading the data center map {url}: {source}")]
    DcMap { url: String, source: PsError },
    #[error("no data center for node {node} ({by} does not name it)")]
    NoDataCenter { node: String, by: String },

    // The rendezvous server.
    #[error("binding the rendezvous port: {0}")]
    BindRendezvous(#[source] PsError),
    #[error(transparent)]
    RendezvousAddr(std::io::Error),

    // The ResourceManager (AMRM protocol).
    #[error(transparent)]
    Rm(YarnError),
    #[error("re-registering: {0}")]
    Reregister(#[source] YarnError),
    #[error("heartbeat: {0}")]
    Heartbeat(#[source] YarnError),
    #[error("unregistering: {0}")]
    Unregister(#[source] YarnError),
    #[error("the ResourceManager told the application master to shut down")]
    Shutdown,
    #[error("only {allocated} of {wanted} containers were allocated within {secs} s")]
    Allocation { allocated: usize, wanted: usize, secs: u64 },

    // Launching the runtime processes through the NodeManagers.
    #[error("no NMToken for node {0}")]
    NoNmToken(String),
    /// Boxed: with the node name beside it, a `YarnError` would make every `Result` of the AM
    /// twice as large (clippy's `result_large_err`).
    #[error("starting process {process} on {node}: {source}")]
    Launch {
        process: usize,
        node: String,
        #[source]
        source: Box<YarnError>,
    },
    #[error(transparent)]
    Task(tokio::task::JoinError),

    // The job.
    #[error("a container ended before the job started: {0:?}")]
    EarlyExit(Option<String>),
    /// The process whose failure failed the attempt (the first to fail, or the peer it reports
    /// lost), with its own reason when it reported one, else the NodeManager's diagnostics.
    #[error("process {process} ({container}) failed with exit status {status}: {reason}")]
    ProcessFailed { process: usize, container: String, status: i32, reason: String },
}

/// Why the rendezvous server refused or dropped a connection (logged, never sent: the peer is
/// not trusted with reasons).
#[derive(Debug, thiserror::Error)]
pub enum RendezvousError {
    #[error(transparent)]
    Io(std::io::Error),
    #[error(transparent)]
    BadHello(PsError),
    #[error("hello for process {0} is not authenticated by the job secret")]
    Unauthenticated(usize),
    #[error("hello before the containers were allocated")]
    NotAllocated,
    #[error("hello for process {0}, not in this job")]
    UnknownProcess(usize),
    #[error("hello for process {id} from host {host}, but its container is on {node}")]
    WrongNode { id: usize, host: String, node: String },
    #[error("process {id} already registered at {host}:{port}")]
    Registered { id: usize, host: String, port: u16 },
    #[error("sending the hostfile: {0}")]
    SendHosts(#[source] std::io::Error),
    #[error("process {0} sent an unknown report line")]
    UnknownReport(usize),
}

pub type Result<T, E = AmError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts the AM logged and reported when its errors were `String`s, character for
    /// character (the ProcessFailed one is the application's diagnostics that tests grep).
    #[test]
    fn messages_are_unchanged() {
        let yarn = || YarnError::Io("rm: refused".into());
        let io = || std::io::Error::new(std::io::ErrorKind::AddrInUse, "in use");
        let cases: Vec<(AmError, &str)> = vec![
            (AmError::NotInContainer("NM_HOST"), "NM_HOST is not set: ps-app-master must run in a YARN container"),
            (AmError::ContainerId("c_1".into()), "CONTAINER_ID 'c_1' is malformed"),
            (AmError::NoAmRmToken, "the container's token file has no AMRMToken"),
            (AmError::NoSecret, "the container's credentials hold no job secret (was it submitted by yarn-submit?)"),
            (AmError::StagingUrl(yarn()), "rm: refused"),
            (AmError::BindRendezvous(PsError::Io("in use".into())), "binding the rendezvous port: in use"),
            (AmError::Rm(yarn()), "rm: refused"),
            (AmError::Reregister(yarn()), "re-registering: rm: refused"),
            (AmError::Heartbeat(yarn()), "heartbeat: rm: refused"),
            (AmError::Unregister(yarn()), "unregistering: rm: refused"),
            (AmError::Shutdown, "the ResourceManager told the application master to shut down"),
            (
                AmError::Allocation { allocated: 1, wanted: 3, secs: 600 },
                "only 1 of 3 containers were allocated within 600 s",
            ),
            (AmError::NoNmToken("n:1".into()), "no NMToken for node n:1"),
            (
                AmError::Launch { process: 2, node: "n:1".into(), source: Box::new(yarn()) },
                "starting process 2 on n:1: rm: refused",
            ),
            (AmError::EarlyExit(Some("oom".into())), "a container ended before the job started: Some(\"oom\")"),
            (
                AmError::ProcessFailed {
                    process: 1,
                    container: "container_1_0001_01_000002".into(),
                    status: 137,
                    reason: "killed".into(),
                },
                "process 1 (container_1_0001_01_000002) failed with exit status 137: killed",
            ),
        ];
        for (e, text) in cases {
            assert_eq!(e.to_string(), text);
        }
        let refusals: Vec<(RendezvousError, &str)> = vec![
            (RendezvousError::Unauthenticated(3), "hello for process 3 is not authenticated by the job secret"),
            (RendezvousError::NotAllocated, "hello before the containers were allocated"),
            (RendezvousError::UnknownProcess(7), "hello for process 7, not in this job"),
            (
                RendezvousError::WrongNode { id: 1, host: "a".into(), node: "b".into() },
                "hello for process 1 from host a, but its container is on b",
            ),
            (RendezvousError::Registered { id: 1, host: "a".into(), port: 9 }, "process 1 already registered at a:9"),
            (RendezvousError::SendHosts(io()), "sending the hostfile: in use"),
            (RendezvousError::UnknownReport(2), "process 2 sent an unknown report line"),
        ];
        for (e, text) in refusals {
            assert_eq!(e.to_string(), text);
        }
    }
}
