//! Worker-to-worker data exchange (`Worker::exchange`, an all-to-all collective): every worker
//! thread hands one buffer per worker thread of the job and receives the buffers addressed to it.
//! Apps use it at load time to move records to the worker that owns them (MF sends each rating
//! to the worker that holds its user's factors), so input can be read as byte ranges and still
//! be partitioned by key, without every process reading the whole input.
//!
//! Buffers between processes travel as `Msg::Exchange` chunks over the existing authenticated
//! links and are handed here by the receiving process's server task; buffers within a process are
//! moved here directly. Each call is one *epoch* (a per-thread counter, the same on every thread
//! since the call is collective), so a fast thread's next exchange cannot mix with a slow
//! thread's current one.

use crate::error::{PsError, Result};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};

/// What one receiving thread has of one epoch so far: per sender, its bytes, how many it said it
/// sends in all, and whether its last part arrived.
struct Inbox {
    data: Vec<Vec<u8>>,
    total: Vec<u64>,
    done: Vec<bool>,
    complete: usize,
}

/// Inboxes by (epoch, receiving thread), and whether the process failed.
type Boxes = (HashMap<(u64, u32), Inbox>, bool);

/// The exchange buffers addressed to this process's threads.
pub(crate) struct Mailbox {
    total: usize,
    boxes: Mutex<Boxes>,
    cv: Condvar,
}

impl Mailbox {
    /// A mailbox for a job of `total` worker threads.
    pub fn new(total: usize) -> Self {
        Mailbox { total, boxes: Mutex::new((HashMap::new(), false)), cv: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, Boxes> {
        self.boxes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Adds a part from thread `from` to thread `to` of exchange `epoch`, after which the sender
    /// has `rest` more bytes for `to` (0: this was its last part). A whole buffer (one part) is
    /// kept as it is when owned; the first of several parts sets aside room for all of them, so
    /// the parts are copied once into their final place (growing by doubling cost more in page
    /// faults and copies than the transfer itself at Netflix size). Checks the ids and sizes,
    /// since they come from the network.
    pub fn deliver(&self, epoch: u64, from: u32, to: u32, rest: u64, part: Cow<'_, [u8]>) -> Result<()> {
        let n = self.total;
        if from as usize >= n || to as usize >= n {
            return Err(PsError::codec(format!("exchange from thread {from} to {to}: the job has {n} threads")));
        }
        let mut g = self.lock();
        let inbox = g.0.entry((epoch, to)).or_insert_with(|| Inbox {
            data: vec![Vec::new(); n],
            total: vec![0; n],
            done: vec![false; n],
            complete: 0,
        });
        let f = from as usize;
        if inbox.done[f] {
            return Err(PsError::codec(format!(
                "exchange {epoch}: thread {from} sent data to {to} after its last part"
            )));
        }
        let have = inbox.data[f].len() as u64;
        let buf = &mut inbox.data[f];
        let total = have.checked_add(part.len() as u64).and_then(|x| x.checked_add(rest));
        let bad = |what: String| PsError::codec(format!("exchange {epoch}: thread {from} to {to}: {what}"));
        match total {
            None => return Err(bad(format!("{rest} bytes announced after {have}"))),
            Some(t) if have == 0 && inbox.total[f] == 0 => {
                if rest == 0 {
                    *buf = part.into_owned();
                } else {
                    let room = usize::try_from(t).map_err(|_| bad(format!("{t} bytes announced")))?;
                    buf.try_reserve_exact(room).map_err(|_| bad(format!("no memory for the {t} bytes announced")))?;
                    buf.extend_from_slice(&part);
                }
                inbox.total[f] = t;
            }
            Some(t) if t != inbox.total[f] => {
                return Err(bad(format!("a part makes {t} bytes where {} were announced", inbox.total[f])));
            }
            Some(_) => buf.extend_from_slice(&part),
        }
        if rest == 0 {
            inbox.done[f] = true;
            inbox.complete += 1;
            if inbox.complete == n {
                drop(g);
                self.cv.notify_all();
            }
        }
        Ok(())
    }

    /// Blocks until every thread's buffer for `to` in exchange `epoch` is complete and returns
    /// them by sender. `check` reports a failure of the process (which wakes this wait).
    pub fn collect(&self, epoch: u64, to: u32, check: impl Fn() -> Result<()>) -> Result<Vec<Vec<u8>>> {
        let mut g = self.lock();
        loop {
            check()?;
            if g.1 {
                return Err(PsError::Aborted("the process failed during a data exchange".into()));
            }
            if g.0.get(&(epoch, to)).is_some_and(|b| b.complete == self.total) {
                let inbox = g.0.remove(&(epoch, to)).expect("checked above");
                return Ok(inbox.data);
            }
            g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// The process failed: wake every waiting thread (they return the failure).
    pub fn fail(&self) {
        self.lock().1 = true;
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collects_every_sender_in_order_and_checks_ids() {
        let m = std::sync::Arc::new(Mailbox::new(3));
        let part = |b: &'static [u8]| Cow::Borrowed(b);
        m.deliver(0, 2, 1, 1, part(b"ab")).unwrap();
        m.deliver(0, 0, 1, 0, Cow::Owned(b"x".to_vec())).unwrap();
        // The next epoch's data waits beside the current one.
        m.deliver(1, 0, 1, 0, part(b"later")).unwrap();
        let m2 = m.clone();
        let t = std::thread::spawn(move || m2.collect(0, 1, || Ok(())));
        m.deliver(0, 2, 1, 0, part(b"c")).unwrap();
        m.deliver(0, 1, 1, 0, part(b"")).unwrap();
        let got = t.join().unwrap().unwrap();
        assert_eq!(got, vec![b"x".to_vec(), Vec::new(), b"abc".to_vec()]);
        assert!(m.deliver(0, 3, 1, 0, part(b"")).is_err());
        assert!(m.deliver(1, 0, 1, 0, part(b"")).is_err(), "a second last part is an error");
        m.fail();
        assert!(m.collect(1, 1, || Ok(())).is_err());
    }

    #[test]
    fn parts_must_add_up_to_what_the_first_announced() {
        let m = Mailbox::new(2);
        let part = |b: &'static [u8]| Cow::Borrowed(b);
        m.deliver(0, 0, 1, 4, part(b"ab")).unwrap();
        // 2 + 3 + 0 is not the 6 announced.
        assert!(m.deliver(0, 0, 1, 0, part(b"cde")).is_err());
        m.deliver(0, 0, 1, 4, part(b"")).unwrap();
        m.deliver(0, 0, 1, 2, part(b"cd")).unwrap();
        m.deliver(0, 0, 1, 0, part(b"ef")).unwrap();
        // An announcement no memory can hold is an error, not an abort.
        assert!(m.deliver(0, 1, 1, u64::MAX / 2, part(b"a")).is_err());
        assert!(m.deliver(0, 1, 1, u64::MAX, part(b"ab")).is_err());
        m.deliver(0, 1, 1, 0, part(b"z")).unwrap();
        let got = m.collect(0, 1, || Ok(())).unwrap();
        assert_eq!(got, vec![b"abcdef".to_vec(), b"z".to_vec()]);
    }
}
