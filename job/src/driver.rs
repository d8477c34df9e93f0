//! The one job driver. Every launcher (`yarn-submit`'s local processes, the YARN application
//! master's containers) runs a job through [`drive`]: attempts of the whole job, and after a
//! process fails, a restart or the end, as the one restart policy ([`RestartPolicy`]) decides. A
//! launcher knows how to run one attempt and ready the next; only the driver decides whether
//! there is a next, so both launchers restart, and give up, the same way.

use crate::restart_log::RestartLog;
use crate::restarts::RestartPolicy;
use std::future::Future;

/// How an attempt that ran to its end ended.
#[derive(Debug, PartialEq)]
pub enum Attempt<E> {
    /// Every process finished.
    Succeeded,
    /// A process failed (`E` says which and why): the job may be restarted.
    ProcessFailed(E),
}

/// Why a job ended without success.
#[derive(Debug, PartialEq)]
pub enum Stop<E> {
    /// The launcher could not go on (its processes could not start, it was interrupted or told
    /// to stop, it lost its resource manager): never restarted.
    Fatal(E),
    /// A process failed and the policy allowed no restart; the message names the failure, why
    /// it was not restarted and every earlier one.
    GaveUp(String),
}

/// One way of running the processes of a job.
pub trait Launcher {
    /// What goes wrong: a failed process, or a reason the launcher cannot go on.
    type Error: std::fmt::Display;
    /// Starts every process of attempt `attempt` (0 first; a restart's processes continue from
    /// the newest checkpoint) and waits until the attempt ends.
    fn run_attempt(&mut self, attempt: u32) -> impl Future<Output = Result<Attempt<Self::Error>, Self::Error>>;
    /// The newest clock any process of the job has reported (for the restart record).
    fn reached(&self) -> Option<i64>;
    /// Readies attempt `attempt` once a restart is granted: fresh ports or containers, and the
    /// tracker's new attempt with the restarts so far (`log`).
    fn prepare(&mut self, attempt: u32, log: &RestartLog) -> impl Future<Output = Result<(), Self::Error>>;
}

/// Runs the job until an attempt succeeds, the launcher cannot go on, or the policy allows no
/// more restarts. Attempts are numbered by the restarts recorded so far, so a job whose AM was
/// itself restarted (recorded before) starts at that number.
pub async fn drive<L: Launcher>(launcher: &mut L, policy: &mut RestartPolicy) -> Result<(), Stop<L::Error>> {
    loop {
        let failed = match launcher.run_attempt(policy.log.attempts()).await.map_err(Stop::Fatal)? {
            Attempt::Succeeded => return Ok(()),
            Attempt::ProcessFailed(e) => e.to_string(),
        };
        let reached = launcher.reached();
        // The policy may list the checkpoint store (HDFS): blocking. On a worker thread of a
        // multi-threaded tokio runtime (the AM) its other tasks move to another worker
        // meanwhile; outside a runtime (the local launcher) this is a plain call.
        tokio::task::block_in_place(|| policy.restart(&failed, reached)).map_err(Stop::GaveUp)?;
        launcher.prepare(policy.log.attempts(), &policy.log).await.map_err(Stop::Fatal)?;
    }
}

/// [`drive`] on this thread, for a launcher that waits by blocking (the local one).
pub fn drive_blocking<L: Launcher>(launcher: &mut L, policy: &mut RestartPolicy) -> Result<(), Stop<L::Error>> {
    futures::executor::block_on(drive(launcher, policy))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launcher that plays a script of attempt endings and records what the driver asked.
    struct Scripted {
        ends: Vec<Result<Attempt<String>, String>>,
        asked: Vec<String>,
    }

    impl Launcher for Scripted {
        type Error = String;
        async fn run_attempt(&mut self, attempt: u32) -> Result<Attempt<String>, String> {
            self.asked.push(format!("run {attempt}"));
            self.ends.remove(0)
        }
        fn reached(&self) -> Option<i64> {
            Some(10 * self.asked.len() as i64)
        }
        async fn prepare(&mut self, attempt: u32, log: &RestartLog) -> Result<(), String> {
            self.asked.push(format!("prepare {attempt} after {}", log.attempts()));
            Ok(())
        }
    }

    fn run(max: u32, ends: Vec<Result<Attempt<String>, String>>) -> (Result<(), Stop<String>>, Vec<String>) {
        let mut l = Scripted { ends, asked: Vec::new() };
        let mut policy = RestartPolicy::new(max, None, None);
        let r = drive_blocking(&mut l, &mut policy);
        (r, l.asked)
    }

    fn failed(what: &str) -> Result<Attempt<String>, String> {
        Ok(Attempt::ProcessFailed(what.to_string()))
    }

    #[test]
    fn restarts_while_the_policy_allows_and_stops_on_what_cannot_be_restarted() {
        // Success at once: one attempt, nothing else.
        assert_eq!(run(2, vec![Ok(Attempt::Succeeded)]), (Ok(()), vec!["run 0".to_string()]));
        // A failure with a restart left: the next attempt is readied and numbered 1.
        let (r, asked) = run(2, vec![failed("process 1 failed"), Ok(Attempt::Succeeded)]);
        assert_eq!(r, Ok(()));
        assert_eq!(asked, ["run 0", "prepare 1 after 1", "run 1"]);
        // The budget used up: the last failure ends the job, naming the earlier one.
        let (r, asked) = run(1, vec![failed("process 1 failed"), failed("process 0 failed")]);
        let Err(Stop::GaveUp(why)) = r else { panic!("{r:?}") };
        assert!(why.starts_with("process 0 failed (not restarted: 1 restarts of --restarts 1 used)"), "{why}");
        assert!(why.contains("process 1 failed (restart 1 from clock 0)"), "{why}");
        assert_eq!(asked, ["run 0", "prepare 1 after 1", "run 1"]);
        // No restarts asked for: the first failure ends the job, saying so.
        let (r, _) = run(0, vec![failed("process 2 failed")]);
        assert_eq!(r, Err(Stop::GaveUp("process 2 failed (not restarted: 0 restarts of --restarts 0 used)".into())));
        // What the launcher cannot go on from is never restarted, whatever the budget.
        let (r, asked) = run(5, vec![Err("interrupted".into())]);
        assert_eq!(r, Err(Stop::Fatal("interrupted".into())));
        assert_eq!(asked, ["run 0"]);
    }

    /// The AM drives from inside its multi-threaded tokio runtime, both from `block_on` and from
    /// a spawned task; the policy's blocking look at the checkpoints must work in either.
    #[test]
    fn drives_inside_a_multi_threaded_runtime() {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).build().unwrap();
        let job = || {
            (
                Scripted { ends: vec![failed("p"), Ok(Attempt::Succeeded)], asked: Vec::new() },
                RestartPolicy::new(1, None, None),
            )
        };
        let (mut l, mut policy) = job();
        assert_eq!(rt.block_on(drive(&mut l, &mut policy)), Ok(()));
        let (mut l, mut policy) = job();
        let spawned = rt.spawn(async move { drive(&mut l, &mut policy).await.map(|_| policy.log.attempts()) });
        assert_eq!(rt.block_on(spawned).unwrap(), Ok(1));
    }
}
