//! What a worker of a built-in app saves in a checkpoint so that a resumed job continues where the
//! interrupted one was (the tables themselves are in the checkpoint's shards).

use super::objective::Tracker;
use ps_runtime::Worker;
use ps_runtime::{PsError, Result};
use serde_json::{json, Value};

/// A worker's checkpoint state, as the built-in apps save it: the next loop clock, the objective
/// tracker's state and app-specific JSON fields (`meta`), then raw bytes for big arrays such as
/// LDA's topic assignments. Stored as `u32 json length, json, raw`.
pub struct SavedState {
    pub clock: i64,
    pub meta: Value,
    pub raw: Vec<u8>,
}

impl SavedState {
    /// Appends a state resuming at loop clock `clock` of a job of `cpp` clocks per pass (for
    /// `Worker::clock_saving`); `extra` is a JSON object of app fields (or null).
    pub fn write(out: &mut Vec<u8>, clock: i64, cpp: i64, tracker: &Tracker, extra: Value, raw: &[u8]) -> Result<()> {
        let mut meta = json!({"clock": clock, "clocks_per_pass": cpp, "tracker": tracker.save()});
        if let Value::Object(m) = extra {
            meta.as_object_mut().expect("object").extend(m);
        }
        let json = serde_json::to_vec(&meta).map_err(|e| PsError::codec(format!("encoding worker state: {e}")))?;
        out.extend_from_slice(&(json.len() as u32).to_le_bytes());
        out.extend_from_slice(&json);
        out.extend_from_slice(raw);
        Ok(())
    }

    /// This worker's state if the job resumed from a checkpoint (`None` on a fresh start); `app`
    /// names the application in errors.
    pub fn load(w: &Worker, app: &str) -> Result<Option<Self>> {
        let Some(b) = w.resume_state()? else { return Ok(None) };
        let bad = |why: String| PsError::codec(format!("{app}: saved worker state: {why}"));
        let n = b.get(..4).map(|x| u32::from_le_bytes(x.try_into().expect("4 bytes")) as usize);
        let n = n.filter(|n| b.len() >= 4 + n).ok_or_else(|| bad("truncated".into()))?;
        let meta: Value = serde_json::from_slice(&b[4..4 + n]).map_err(|e| bad(e.to_string()))?;
        let clock = meta["clock"].as_i64().ok_or_else(|| bad("no clock".into()))?;
        Ok(Some(SavedState { clock, meta, raw: b[4 + n..].to_vec() }))
    }

    /// Refuses to resume a job of `cpp` clocks per pass from a state saved at another number: a
    /// clock is a different part of a pass then (a rotating job's slice, a part of the data), so
    /// the job would count its passes, and pick its blocks, apart from the model it continues
    /// (one process's default went from 2 to 1 with the whole model in one slice). A state saved
    /// before the number was kept cannot be checked.
    pub fn check_clocks_per_pass(&self, app: &str, cpp: i64) -> Result<()> {
        match self.meta.get("clocks_per_pass").and_then(Value::as_i64) {
            Some(saved) if saved != cpp => Err(PsError::Config(format!(
                "{app}: checkpoint.resume: the checkpoint was taken at {saved} clocks per pass and this job runs \
                 {cpp} (--clocks-per-pass, or the default for its processes and staleness): resume with \
                 --clocks-per-pass {saved}"
            ))),
            _ => Ok(()),
        }
    }

    /// Restores the objective tracker saved with this state.
    pub fn restore_tracker(&self, tracker: &mut Tracker) -> Result<()> {
        tracker.restore(&self.meta["tracker"])
    }
}
