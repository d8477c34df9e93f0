//! The name node (process 0): start-up registration with a table-configuration check, the global
//! barrier, abort broadcast and the two-phase orderly shutdown (Shutdown/Bye, then Exit) that lets
//! every process stop serving only after all of them stopped reading.

use crate::error::{PsError, Result};
use crate::net::Link;
use crate::wire::Msg;

pub(crate) struct NameNode {
    n: usize,
    registered: Vec<Option<u64>>,
    barrier: Vec<Option<i64>>,
    done: Vec<bool>,
    byes: Vec<bool>,
}

impl NameNode {
    pub fn new(n: usize) -> Self {
        NameNode { n, registered: vec![None; n], barrier: vec![None; n], done: vec![false; n], byes: vec![false; n] }
    }

    fn broadcast(out: &[Link], m: Msg) {
        for o in out {
            o.send(m.clone());
        }
    }

    pub fn handle(&mut self, from: usize, msg: Msg, out: &[Link]) -> Result<()> {
        match msg {
            Msg::Register { fingerprint } => {
                self.registered[from] = Some(fingerprint);
                log::debug!("name node: process {from} registered");
                if self.registered.iter().all(Option::is_some) {
                    let first = self.registered[0];
                    if let Some(bad) = self.registered.iter().position(|f| *f != first) {
                        let reason = format!("process {bad} created different tables than process 0");
                        Self::broadcast(out, Msg::Abort { reason: reason.clone() });
                        return Err(PsError::Config(reason));
                    }
                    log::info!("name node: all {} processes registered; job ready", self.n);
                    Self::broadcast(out, Msg::Ready);
                }
            }
            Msg::BarrierArrive { epoch, clock } => {
                self.barrier[from] = Some(clock);
                if self.barrier.iter().all(Option::is_some) {
                    let b = self.barrier.iter().flatten().copied().max().unwrap_or(clock);
                    self.barrier.iter_mut().for_each(|x| *x = None);
                    Self::broadcast(out, Msg::BarrierRelease { epoch, clock: b });
                }
            }
            Msg::Done => {
                self.done[from] = true;
                if self.done.iter().all(|d| *d) {
                    log::info!("name node: every process finished; shutting down");
                    Self::broadcast(out, Msg::Shutdown);
                }
            }
            Msg::Bye => {
                self.byes[from] = true;
                if self.byes.iter().all(|d| *d) {
                    Self::broadcast(out, Msg::Exit);
                }
            }
            Msg::Abort { reason } => {
                Self::broadcast(out, Msg::Abort { reason: format!("process {from} failed: {reason}") });
            }
            other => return Err(PsError::codec(format!("name node got unexpected {other:?} from process {from}"))),
        }
        Ok(())
    }
}
