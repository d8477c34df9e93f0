//! yarn-submit's stderr: log lines and, on a terminal, a progress bar kept below them (clock,
//! objective, ETA). Without a terminal, or under a batch scheduler (whose logs are files), the
//! same figures come as a plain progress line every ten seconds instead.
//!
//! Every log line goes through [`BarAppender`], which takes the bar down, writes the line and
//! puts the bar back, so the two never mix on one line.

use log4rs::append::Append;
use log4rs::encode::writer::simple::SimpleWriter;
use log4rs::encode::Encode;
use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Environment variables that mean a batch scheduler (or CI) runs us: no bar, even on a pty.
const SCHEDULER_ENV: [&str; 6] = ["SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "SGE_TASK_ID", "CI", "PS_NO_PROGRESS_BAR"];
/// Plain progress lines at most this often.
const PLAIN_EVERY: Duration = Duration::from_secs(10);

#[derive(Debug, Default)]
struct State {
    /// The bar as drawn now (empty: none).
    bar: String,
    last_plain: Option<Instant>,
}

/// The shared console: one per yarn-submit run, handed to the logger and the progress display.
#[derive(Debug)]
pub struct Console {
    bar: bool,
    state: Mutex<State>,
}

/// The figures a progress display shows.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Progress {
    pub clock: Option<i64>,
    pub total: Option<i64>,
    /// The newest evaluation's first value, named.
    pub objective: Option<(String, f64)>,
    pub eta_s: Option<f64>,
}

impl Progress {
    /// From a `status.json` value (`ps_job::tracking`).
    pub fn from_status(s: &serde_json::Value) -> Progress {
        let last = s["objective"].as_array().and_then(|a| a.last()).cloned().unwrap_or_default();
        let name = last.as_object().and_then(|o| {
            o.keys().find(|k| !["clock", "time_s", "value"].contains(&k.as_str()) && o[*k] == last["value"]).cloned()
        });
        Progress {
            clock: s["clock"].as_i64(),
            total: s["total_clocks"].as_i64(),
            objective: last["value"].as_f64().map(|v| (name.unwrap_or_else(|| "objective".into()), v)),
            eta_s: s["eta_s"].as_f64(),
        }
    }

    /// `clock 12/40 (30%) · rmse 0.8123 · ETA 25s`
    pub fn text(&self) -> String {
        let mut t = match (self.clock, self.total) {
            (Some(c), Some(n)) => format!("clock {c}/{n} ({:.0}%)", c as f64 * 100.0 / n.max(1) as f64),
            (Some(c), None) => format!("clock {c}"),
            _ => "starting".into(),
        };
        if let Some((k, v)) = &self.objective {
            t += &format!(" · {k} {v:.6}");
        }
        if let Some(e) = self.eta_s {
            t += &format!(" · ETA {}", eta(e));
        }
        t
    }

    fn fraction(&self) -> f64 {
        match (self.clock, self.total) {
            (Some(c), Some(n)) if n > 0 => (c as f64 / n as f64).clamp(0.0, 1.0),
            _ => 0.0,
        }
    }
}

fn eta(s: f64) -> String {
    let s = s.round() as u64;
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}

impl Console {
    /// A bar only on a terminal outside a scheduler.
    pub fn new() -> Arc<Console> {
        let bar = std::io::stderr().is_terminal()
            && !SCHEDULER_ENV.iter().any(|k| std::env::var_os(k).is_some())
            && std::env::var("TERM").map_or(true, |t| t != "dumb");
        Arc::new(Console { bar, state: Mutex::new(State::default()) })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Shows `p`: redraws the bar, or logs a plain line if the last one is ten seconds old.
    pub fn show(&self, p: &Progress) {
        let mut st = self.lock();
        if self.bar {
            let width = 24;
            let filled = (p.fraction() * width as f64).round() as usize;
            st.bar = format!("[{}{}] {}", "#".repeat(filled), "-".repeat(width - filled), p.text());
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K{}", st.bar);
            let _ = e.flush();
        } else if st.last_plain.is_none_or(|t| t.elapsed() >= PLAIN_EVERY) {
            st.last_plain = Some(Instant::now());
            drop(st);
            log::info!("progress: {}", p.text());
        }
    }

    /// Takes the bar down for good (the job ended).
    pub fn clear(&self) {
        let mut st = self.lock();
        if !st.bar.is_empty() {
            st.bar.clear();
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K");
            let _ = e.flush();
        }
    }
}

/// A log4rs appender to stderr that keeps the console's bar below the log lines.
#[derive(Debug)]
pub struct BarAppender {
    pub console: Arc<Console>,
    pub encoder: Box<dyn Encode>,
}

impl Append for BarAppender {
    fn append(&self, record: &log::Record) -> anyhow::Result<()> {
        let st = self.console.lock();
        let mut e = SimpleWriter(std::io::stderr().lock());
        if !st.bar.is_empty() {
            write!(e, "\r\x1b[2K")?;
        }
        self.encoder.encode(&mut e, record)?;
        if !st.bar.is_empty() {
            write!(e, "{}", st.bar)?;
        }
        e.flush()?;
        Ok(())
    }

    fn flush(&self) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn progress_from_status() {
        let s = json!({"clock": 12, "total_clocks": 40, "eta_s": 95.2,
            "objective": [{"clock": 1, "time_s": 1.0, "value": 0.9, "rmse": 0.9, "test_rmse": 1.1},
                          {"clock": 2, "time_s": 2.0, "value": 0.8, "rmse": 0.8, "test_rmse": 1.0}]});
        let p = Progress::from_status(&s);
        assert_eq!(p.objective, Some(("rmse".into(), 0.8)));
        assert_eq!(p.text(), "clock 12/40 (30%) · rmse 0.800000 · ETA 1m35s");
        assert_eq!(Progress::from_status(&json!({})).text(), "starting");
        assert_eq!(eta(7300.0), "2h01m");
    }
}
