//! The job's life in the AM: attempts of allocation, start-up, rendezvous and heartbeats until
//! every process finishes; after a process fails, with `--restarts` left, the whole job again
//! (see `restarts`).

use super::*;
use ps_job::driver::{self, Attempt, Stop};
use ps_job::restart_log::RestartLog;

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
        let mut failure = None;
        for s in r.completed_container_statuses {
            let Some(i) = am.index_of(&s.container_id) else { continue };
            finished.insert(i);
            let code = s.exit_status.unwrap_or(-1000);
            let cid = s.container_id.as_ref().map(|c| c.to_hadoop_string()).unwrap_or_default();
            if code == 0 {
                log::info!("process {i} ({cid}) finished");
            } else if failure.is_none() {
                failure = Some((i, cid, code, s.diagnostics.unwrap_or_default()));
            }
        }
        if let Some((i, container, status, diagnostics)) = failure {
            // The process's own reason first (a panic message, a bad input line, a lost peer);
            // the NodeManager's diagnostics only know the exit status.
            let why = am.failure_reason(i).await;
            let mut reason = why.unwrap_or_else(|| diagnostics.trim().to_string());
            if let Some(hint) = memory_hint(status, &diagnostics, am.args.worker_memory) {
                reason = format!("{reason}; {hint}");
            }
            let failed = AmError::ProcessFailed { process: i, container, status, reason };
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
