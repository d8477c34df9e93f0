//! The job's life in the AM: attempts of allocation, start-up, rendezvous and heartbeats until
//! every process finishes; after a process fails, with `--restarts` left, the whole job again
//! (see `restarts`).

use super::*;
use ps_job::driver::{self, Attempt, Stop};
use ps_job::restart_log::RestartLog;
use ps_runtime::PsError;

/// What every attempt starts its processes with and talks to them through.
pub(crate) struct Launch<'a> {
    pub resources: &'a [StringLocalResourceMapProto],
    /// The containers' credentials file, as the token refresher last renewed it.
    pub tokens: watch::Receiver<Vec<u8>>,
    pub am_addr: &'a str,
    pub hello_rx: &'a mut mpsc::UnboundedReceiver<(usize, String, u16)>,
    pub hosts_tx: &'a watch::Sender<Option<Hostfile>>,
}

/// Runs the job through the one driver (`ps_job::driver`), restarting it after a process
/// failure while restarts last.
pub(crate) async fn drive(am: &mut Am, l: &mut Launch<'_>) -> Result<()> {
    let mut policy = am.restarts.take_policy();
    let outcome = driver::drive(&mut Containers { am, l }, &mut policy).await;
    am.restarts.put_policy(policy);
    outcome.map_err(|stop| match stop {
        Stop::Fatal(e) => e,
        Stop::GaveUp(why) => AmError::GaveUp(why),
    })
}

/// The job's processes in YARN containers.
struct Containers<'a, 'b> {
    am: &'a mut Am,
    l: &'a mut Launch<'b>,
}

impl driver::Launcher for Containers<'_, '_> {
    type Error = AmError;

    async fn run_attempt(&mut self, attempt: u32) -> Result<Attempt<AmError>> {
        match run_attempt(self.am, self.l, attempt).await {
            Ok(()) => Ok(Attempt::Succeeded),
            Err(failed @ AmError::ProcessFailed { process, .. }) => {
                avoid_failing_node(self.am, process);
                Ok(Attempt::ProcessFailed(failed))
            }
            Err(other) => Err(other),
        }
    }

    fn reached(&self) -> Option<i64> {
        lock(&self.am.shared).view.newest_clock()
    }

    /// A fresh start for the next attempt: new containers, new hellos, a new hostfile.
    async fn prepare(&mut self, attempt: u32, log: &RestartLog) -> Result<()> {
        self.am.procs.clear();
        {
            let mut g = lock(&self.am.shared);
            g.attempt += 1;
            g.expected = None;
            g.registered.clear();
            g.view.begin_attempt(attempt, log.to_json());
        }
        while self.l.hello_rx.try_recv().is_ok() {}
        let _ = self.l.hosts_tx.send(None);
        Ok(())
    }
}

/// Failures on one node before the AM asks YARN to place no more of the job's containers there.
const NODE_FAILURES_TO_AVOID: u32 = 2;

/// Counts a failure against the node of process `i`; at `NODE_FAILURES_TO_AVOID` blacklists it.
/// YARN's blacklist takes host names; where several NodeManagers of the job share a host (a test
/// cluster), `host:port` names just the one (the stand-in honours it, a real RM would not).
fn avoid_failing_node(am: &mut Am, i: usize) {
    let Some(id) = am.procs.get(i).and_then(|c| c.node_id.clone()) else { return };
    let key = node_key(&id);
    let count = am.node_failures.entry(key.clone()).or_default();
    *count += 1;
    if *count == NODE_FAILURES_TO_AVOID {
        let host = id.host.unwrap_or_default();
        let shared_host = am.nodes_seen.iter().any(|k| *k != key && k.rsplit_once(':').map(|x| x.0) == Some(&*host));
        let name = if shared_host { key.clone() } else { host };
        log::warn!(
            "{NODE_FAILURES_TO_AVOID} failures on node {key}: asking YARN to place no more containers there ({name})"
        );
        am.rm.blacklist(&name);
    }
}

/// After a failure: heartbeats until every stopped container has ended (at most a minute), so
/// that no process of the failed attempt is left when the next one starts.
async fn wait_gone(am: &mut Am, finished: &mut HashSet<usize>) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while finished.len() < am.procs.len() && Instant::now() < deadline {
        match am.rm.allocate(vec![], vec![], 0.0).await {
            Ok(r) => {
                for s in r.completed_container_statuses {
                    if let Some(i) = am.index_of(&s.container_id) {
                        finished.insert(i);
                    }
                }
            }
            Err(e) => {
                log::warn!("heartbeat while stopping the job's containers: {e}");
                return;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    if finished.len() < am.procs.len() {
        log::warn!(
            "{} of {} containers still running a minute after being stopped",
            am.procs.len() - finished.len(),
            am.procs.len()
        );
    }
}

/// One attempt of the job: allocation, start-up, rendezvous and the heartbeat loop until every
/// process has finished or one has failed (then the others are stopped and gone).
async fn run_attempt(am: &mut Am, l: &mut Launch<'_>, attempt: u32) -> Result<()> {
    let n = am.args.workers;
    am.set_status(if attempt == 0 { "allocating" } else { "allocating again after a failure" });
    am.gang_allocate().await?;
    am.nodes_seen.extend(am.procs.iter().map(|c| node_key(c.node_id.as_ref().unwrap_or(&NodeIdProto::default()))));
    let dcs = am.dc_map.as_ref().map(|m| m.labels(&am.procs)).transpose()?;
    if let Some(d) = &dcs {
        log::info!("data centers of the processes ({}): {d:?}", am.dc_map.as_ref().map_or("", |m| m.by.as_str()));
    }
    am.start_all(l.resources, l.tokens.borrow().clone(), l.am_addr, attempt).await?;
    am.set_status("starting processes");
    let mut reported: BTreeMap<usize, (String, u16)> = BTreeMap::new();
    let mut finished: HashSet<usize> = HashSet::new();
    let mut last_log = Instant::now();
    loop {
        // Rendezvous: once every process reported its port, publish the hostfile.
        while let Ok((id, h, p)) = l.hello_rx.try_recv() {
            if id < n {
                reported.insert(id, (h, p));
            }
        }
        if l.hosts_tx.borrow().is_none() && reported.len() == n {
            let mut hosts = Hostfile::new(reported.values().cloned().collect());
            if let Some(d) = dcs.clone() {
                hosts = hosts.with_dcs(d).map_err(AmError::Staging)?;
            }
            let url = format!("{}/hostfile", am.args.staging);
            let (u2, text) = (url.clone(), hosts.render());
            // Under a temporary name, then renamed: a reader never sees half a hostfile.
            tokio::task::spawn_blocking(move || -> Result<()> {
                let st = storage_for(&u2).map_err(AmError::Staging)?;
                write_atomic(st.as_ref(), &u2, text.as_bytes(), "hostfile").map_err(AmError::Staging)
            })
            .await
            .map_err(AmError::Task)??;
            log::info!("hostfile written to {url}");
            let _ = l.hosts_tx.send(Some(hosts));
            am.set_status("running");
        }
        let progress = lock(&am.shared).view.fraction() as f32;
        // Connection errors and RM failovers are retried inside, for up to
        // yarn.resourcemanager.connect.max-wait.ms: an error here is final.
        let r = am.rm.allocate(vec![], vec![], progress).await.map_err(AmError::Heartbeat)?;
        am.on_command(r.a_m_command).await?;
        // Every status of the reply counts as ended before acting on a failure among them (a
        // process that stopped on its own after the failure would otherwise be waited for).
        let mut failures = Vec::new();
        for s in r.completed_container_statuses {
            if let Some(e) = ended(am, s, &mut finished) {
                failures.push(e);
            }
        }
        if !failures.is_empty() {
            let failed = cause(am, failures, &mut finished).await;
            log::error!("{failed}; stopping the other processes");
            am.stop_all(&finished).await;
            wait_gone(am, &mut finished).await;
            return Err(failed);
        }
        if finished.len() == n {
            return Ok(());
        }
        if last_log.elapsed() > Duration::from_secs(10) {
            last_log = Instant::now();
            log::info!("progress {:.0}%, {} of {n} processes finished", progress * 100.0, finished.len());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// A container of the job that ended with a non-zero exit status.
struct Ended {
    process: usize,
    container: String,
    status: i32,
    diagnostics: String,
}

/// Counts a completed container's process as finished; returns it if it failed.
fn ended(am: &Am, s: ContainerStatusProto, finished: &mut HashSet<usize>) -> Option<Ended> {
    let i = am.index_of(&s.container_id)?;
    finished.insert(i);
    let status = s.exit_status.unwrap_or(-1000);
    let container = s.container_id.as_ref().map(|c| c.to_hadoop_string()).unwrap_or_default();
    if status == 0 {
        log::info!("process {i} ({container}) finished");
        return None;
    }
    Some(Ended { process: i, container, status, diagnostics: s.diagnostics.unwrap_or_default() })
}

/// How long the AM waits for the status of a peer that a failed process reports lost.
const PEER_STATUS_WAIT: Duration = Duration::from_secs(5);

/// The failure to report for an attempt (`failures`: the first reply's, in order). A process
/// that loses a peer fails too, often before the NodeManager reports the peer's end (a container
/// killed by the OOM killer or by an operator), and its reason only echoes the loss. The peer's
/// own status is then waited for (`PEER_STATUS_WAIT`) and reported instead, following a chain of
/// such echoes to its start: the cause, say exit status 137, is what an operator acts on.
async fn cause(am: &mut Am, mut failures: Vec<Ended>, finished: &mut HashSet<usize>) -> AmError {
    let mut picked = vec![0];
    let mut why = am.failure_reason(failures[0].process).await;
    let mut waited = false;
    for _ in 0..2 * am.procs.len() {
        let pick = *picked.last().unwrap_or(&0);
        match blame(&failures, pick, why.as_deref(), finished) {
            Blame::Running(peer) if !waited => {
                waited = true;
                peer_status(am, peer, &mut failures, finished).await;
            }
            Blame::Failed(k) if !picked.contains(&k) => {
                log::warn!(
                    "process {} failed after losing process {}: {}",
                    failures[pick].process,
                    failures[k].process,
                    why.unwrap_or_default()
                );
                why = am.failure_reason(failures[k].process).await;
                picked.push(k);
                waited = false;
            }
            _ => break,
        }
    }
    let Ended { process, container, status, diagnostics } = failures.swap_remove(*picked.last().unwrap_or(&0));
    // The process's own reason first (a panic message, a bad input line, a lost peer); the
    // NodeManager's diagnostics only know the exit status.
    let mut reason = why.unwrap_or_else(|| diagnostics.trim().to_string());
    if let Some(hint) = memory_hint(status, &diagnostics, am.args.worker_memory) {
        reason = format!("{reason}; {hint}");
    }
    AmError::ProcessFailed { process, container, status, reason }
}

/// Whom a failure's reason blames.
#[derive(Debug, PartialEq)]
enum Blame {
    /// No other process: the failure is its own (or its peer ended well).
    Nobody,
    /// The lost peer, which failed too: its place in the failures.
    Failed(usize),
    /// The lost peer, whose container has not been reported ended yet.
    Running(usize),
}

/// Whom failure `failures[pick]`, which gave reason `why`, blames, given the processes
/// `finished` so far.
fn blame(failures: &[Ended], pick: usize, why: Option<&str>, finished: &HashSet<usize>) -> Blame {
    let Some(peer) = why.and_then(PsError::lost_peer_in) else { return Blame::Nobody };
    match failures.iter().position(|e| e.process == peer) {
        Some(k) if k != pick => Blame::Failed(k),
        None if !finished.contains(&peer) => Blame::Running(peer),
        _ => Blame::Nobody,
    }
}

/// Heartbeats until process `peer`'s container has ended (at most `PEER_STATUS_WAIT`), adding
/// the failures that come meanwhile to `failures`.
async fn peer_status(am: &mut Am, peer: usize, failures: &mut Vec<Ended>, finished: &mut HashSet<usize>) {
    let deadline = Instant::now() + PEER_STATUS_WAIT;
    while !finished.contains(&peer) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        match am.rm.allocate(vec![], vec![], 0.0).await {
            Ok(r) => {
                for s in r.completed_container_statuses {
                    failures.extend(ended(am, s, finished));
                }
            }
            Err(e) => {
                log::warn!("heartbeat while waiting for lost process {peer}'s status: {e}");
                break;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failed(process: usize) -> Ended {
        Ended { process, container: format!("c{process}"), status: 1, diagnostics: String::new() }
    }

    /// An echo of a lost peer blames the peer: found among the failures, waited for while its
    /// container runs, not blamed once it ended well; a reason of its own blames nobody.
    #[test]
    fn a_lost_peer_is_blamed_for_the_echo() {
        let lost = |p: usize| format!("process 0 failed: lost process {p} (127.0.0.1:4000): Broken pipe");
        let fs = [failed(0), failed(2)];
        let done: HashSet<usize> = [0, 2].into();
        assert_eq!(blame(&fs, 0, Some(&lost(2)), &done), Blame::Failed(1));
        assert_eq!(blame(&fs, 0, Some(&lost(1)), &done), Blame::Running(1));
        let ended_well: HashSet<usize> = [0, 1, 2].into();
        assert_eq!(blame(&fs, 0, Some(&lost(1)), &ended_well), Blame::Nobody);
        assert_eq!(blame(&fs, 1, Some("bad line 3 of part-0"), &done), Blame::Nobody);
        assert_eq!(blame(&fs, 1, None, &done), Blame::Nobody);
        assert_eq!(blame(&fs[..1], 0, Some(&lost(0)), &done), Blame::Nobody);
    }
}
