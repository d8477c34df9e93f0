//! Job-wide dense ids for an id column whose ids do not all fit `u32` (strings, 64-bit or
//! negative numbers), built the way a distributed sort is: no process ever holds every key.
//!
//! 1. Every worker says whether its column holds keys; if none does, the ids stay as read.
//! 2. Every worker sends a sample of its distinct keys to all; each picks the same W-1 splitters
//!    from the union, so the key ranges are owned by workers 0..W in order.
//! 3. Every distinct key goes to the owner of its range, which sorts its keys; the owners' counts
//!    are exchanged, so owner w numbers its keys from the sum of the counts before it.
//! 4. Each owner answers with the ids of the keys it was sent.
//!
//! A key's id is thus its rank among all the job's keys: the same for any number of workers, so
//! a resumed job (which rebuilds the dictionary from the same input) and a job run with another
//! shape number the keys alike. Outputs map ids back with [`Dictionary::keys_of`], again by
//! asking each id's owner.

use super::rows_out::RowKeys;
use ps_runtime::input::{Key, KeyColumn, VisitIds};
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};

/// Keys sampled per worker to choose the ranges.
const SAMPLE: usize = 1024;

/// This worker's share of the job's dictionary of one id column.
pub struct Dictionary {
    /// The keys this worker owns, ascending; their ids are `starts[me] + index`.
    owned: Vec<Key>,
    /// First id of each worker's range, then the number of keys (W + 1 values).
    starts: Vec<u64>,
    me: usize,
    /// Whether every key of the job is an integer (outputs then write int64 ids).
    pub ints_only: bool,
}

/// Settles one id column job-wide (every worker thread calls it, collectively): `None` when every
/// id of the job fitted `u32` (the values stay as read); otherwise the values, visited by `visit`,
/// become the keys' job-wide ids, and the returned dictionary maps them back.
pub fn settle_ids(w: &mut Worker, mut column: KeyColumn, visit: VisitIds) -> Result<Option<Dictionary>> {
    let nw = w.total_threads();
    let flags = w.exchange(vec![vec![column.is_keyed() as u8]; nw])?;
    if !flags.iter().any(|f| f.first() == Some(&1)) {
        return Ok(None);
    }
    column.key_all(visit);
    let keys = column.into_keys();
    let splitters = splitters(w, &keys)?;
    // Each distinct key to its range's owner; `sent[o]`: the local indexes sent to `o`, in order.
    let mut parts = vec![Vec::new(); nw];
    let mut sent: Vec<Vec<u32>> = vec![Vec::new(); nw];
    for (i, k) in keys.iter().enumerate() {
        let o = splitters.partition_point(|s| s <= k);
        k.encode(&mut parts[o]);
        sent[o].push(i as u32);
    }
    let n_local = keys.len();
    drop(keys);
    // Every key received, with who sent it and where in its list, sorted: equal keys are then
    // neighbours, each gets its rank among this owner's distinct keys, and the keys move into
    // `owned` without a copy (peak memory: one entry per key received).
    let mut recv: Vec<(Key, u32, u32)> = Vec::new();
    let mut answers: Vec<Vec<u8>> = Vec::with_capacity(nw);
    for (from, p) in w.exchange(parts)?.into_iter().enumerate() {
        let ks = Key::decode_all(&p)?;
        answers.push(vec![0u8; 4 * ks.len()]);
        recv.extend(ks.into_iter().enumerate().map(|(i, k)| (k, from as u32, i as u32)));
    }
    recv.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut owned: Vec<Key> = Vec::new();
    for (key, from, at) in recv {
        if owned.last() != Some(&key) {
            owned.push(key);
        }
        let rank = owned.len() as u32 - 1;
        answers[from as usize][4 * at as usize..][..4].copy_from_slice(&rank.to_le_bytes());
    }
    // Counts (and whether any key is a string) to every worker.
    let has_str = owned.iter().any(|k| matches!(k, Key::Str(_)));
    let mut mine = (owned.len() as u64).to_le_bytes().to_vec();
    mine.push(has_str as u8);
    let counts = w.exchange(vec![mine; nw])?;
    let mut starts = vec![0u64];
    let mut ints_only = true;
    for c in &counts {
        let (n, flag) = c.split_first_chunk::<8>().ok_or_else(|| PsError::codec("a key count is cut short"))?;
        starts.push(starts.last().copied().unwrap_or(0) + u64::from_le_bytes(*n));
        ints_only &= flag.first() != Some(&1);
    }
    let total = starts[nw];
    if total > u32::MAX as u64 {
        return Err(PsError::Config(format!("{total} distinct ids in one column: at most {} are supported", u32::MAX)));
    }
    let me = w.global_thread_id();
    // Ranks become job-wide ids.
    for a in &mut answers {
        for id in a.chunks_exact_mut(4) {
            let rank = u32::from_le_bytes(id.try_into().expect("4 bytes"));
            id.copy_from_slice(&((starts[me] + rank as u64) as u32).to_le_bytes());
        }
    }
    let global = answers_back(w, answers, &sent, n_local)?;
    visit(&mut |v| *v = global[*v as usize]);
    log::info!("worker {me}: {} ids numbered job-wide ({} owned here)", total, owned.len());
    Ok(Some(Dictionary { owned, starts, me, ints_only }))
}

/// Sends each owner's `answers` (a u32 per key it was sent, in order) back to the senders and
/// returns, for each of this worker's `n` local keys, the u32 its owner answered (`sent[o]`: the
/// local indexes this worker sent to owner `o`, in order). Collective.
pub(super) fn answers_back(w: &mut Worker, answers: Vec<Vec<u8>>, sent: &[Vec<u32>], n: usize) -> Result<Vec<u32>> {
    let mut out = vec![0u32; n];
    for (o, got) in w.exchange(answers)?.iter().enumerate() {
        if got.len() != 4 * sent[o].len() {
            return Err(PsError::codec(format!("worker {o} answered {} bytes for {} keys", got.len(), sent[o].len())));
        }
        for (&i, id) in sent[o].iter().zip(got.chunks_exact(4)) {
            out[i as usize] = u32::from_le_bytes(id.try_into().expect("4 bytes"));
        }
    }
    Ok(out)
}

/// The W-1 splitters every worker picks from the same gathered samples.
pub(super) fn splitters(w: &mut Worker, keys: &[Key]) -> Result<Vec<Key>> {
    let nw = w.total_threads();
    let mut sample = Vec::new();
    let step = keys.len().div_ceil(SAMPLE).max(1);
    keys.iter().step_by(step).for_each(|k| k.encode(&mut sample));
    let mut all = Vec::new();
    for part in w.exchange(vec![sample; nw])? {
        all.extend(Key::decode_all(&part)?);
    }
    all.sort_unstable();
    all.dedup();
    if all.is_empty() {
        return Ok(Vec::new());
    }
    Ok((1..nw).map(|j| all[j * all.len() / nw].clone()).collect())
}

impl Dictionary {
    /// The number of keys in the job.
    pub fn len(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The keys of `ids` (every worker thread calls it, collectively, each with its own ids).
    pub fn keys_of(&self, w: &mut Worker, ids: &[u64]) -> Result<Vec<Key>> {
        let nw = self.starts.len() - 1;
        let owner = |id: u64| self.starts[1..].partition_point(|&s| s <= id);
        let mut parts = vec![Vec::new(); nw];
        for &id in ids {
            if id >= self.len() {
                return Err(PsError::Usage(format!("id {id} is not in the dictionary of {} keys", self.len())));
            }
            parts[owner(id)].extend_from_slice(&id.to_le_bytes());
        }
        let answers = w
            .exchange(parts)?
            .iter()
            .map(|p| {
                let mut out = Vec::new();
                for id in p.chunks_exact(8) {
                    let id = u64::from_le_bytes(id.try_into().expect("8 bytes"));
                    let at = id.checked_sub(self.starts[self.me]).map(|a| a as usize);
                    let key = at.and_then(|a| self.owned.get(a)).ok_or_else(|| {
                        PsError::codec(format!("worker {} was asked for id {id} it does not own", self.me))
                    })?;
                    key.encode(&mut out);
                }
                Ok(out)
            })
            .collect::<Result<Vec<_>>>()?;
        let mut got: Vec<std::vec::IntoIter<Key>> =
            w.exchange(answers)?.iter().map(|p| Key::decode_all(p).map(Vec::into_iter)).collect::<Result<_>>()?;
        ids.iter()
            .map(|&id| got[owner(id)].next().ok_or_else(|| PsError::codec(format!("no key came back for id {id}"))))
            .collect()
    }
}

/// The keys of `ids` when the column has a dictionary (collective, as [`Dictionary::keys_of`]),
/// for an output part.
pub fn keys_for(dict: Option<&Dictionary>, w: &mut Worker, ids: &[u64]) -> Result<Option<RowKeys>> {
    match dict {
        Some(d) => Ok(Some(RowKeys { keys: d.keys_of(w, ids)?, ints_only: d.ints_only })),
        None => Ok(None),
    }
}

/// The fingerprints of an app's dictionaries, for its saved state: a resumed job rebuilds them
/// from its input, and [`check_resumed`] makes sure they number the ids as before.
pub fn fingerprints(dicts: &[Option<&Dictionary>]) -> serde_json::Value {
    serde_json::json!(dicts.iter().map(|d| d.map(Dictionary::fingerprint)).collect::<Vec<_>>())
}

/// Fails when the dictionaries rebuilt on resuming differ from those saved (`saved`: what
/// [`fingerprints`] gave, absent in states saved without dictionaries).
pub fn check_resumed(app: &str, dicts: &[Option<&Dictionary>], saved: Option<&serde_json::Value>) -> Result<()> {
    let now = fingerprints(dicts);
    let before = saved.cloned().unwrap_or_else(|| serde_json::json!(vec![serde_json::Value::Null; dicts.len()]));
    if now != before {
        return Err(PsError::Config(format!(
            "{app}: the input's ids are not those of the checkpoint (dictionary fingerprints {now} now, {before} \
             then): resume from the same input"
        )));
    }
    Ok(())
}

impl Dictionary {
    /// A hash of this worker's part of the numbering: its range and its keys.
    pub fn fingerprint(&self) -> u64 {
        let mut h = ps_runtime::mix64(self.starts[self.me] ^ self.len().rotate_left(32));
        let mut buf = Vec::new();
        for k in &self.owned {
            buf.clear();
            k.encode(&mut buf);
            for chunk in buf.chunks(8) {
                let mut word = [0u8; 8];
                word[..chunk.len()].copy_from_slice(chunk);
                h = ps_runtime::mix64(h ^ u64::from_le_bytes(word));
            }
        }
        h
    }
}
