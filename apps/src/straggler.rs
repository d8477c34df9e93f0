//! Straggler injection for experiments: a process that sleeps in some clocks, as a slow or busy
//! machine would, to show how each consistency model copes with it.

/// The straggler options (part of every app's common options).
#[derive(clap::Args, Debug, Clone)]
pub struct StragglerArgs {
    /// Straggler injection for experiments: `delayed` (process k sleeps --straggler-delay seconds
    /// in clock k, round robin) or `random` (each process sleeps that long in a clock with
    /// probability --straggler-p).
    #[arg(long)]
    pub straggler: Option<Straggler>,
    #[arg(long, default_value_t = 0.0)]
    pub straggler_delay: f64,
    #[arg(long, default_value_t = 0.1)]
    pub straggler_p: f64,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Straggler {
    Delayed,
    Random,
}

impl StragglerArgs {
    /// True if the delay is negative or the probability outside [0, 1].
    pub fn out_of_range(&self) -> bool {
        self.straggler_delay < 0.0 || !(0.0..=1.0).contains(&self.straggler_p)
    }

    /// Sleeps if process `pid` of `nprocs` straggles in clock `clock` (every thread of the process
    /// sleeps, as when the machine is slow). `Random` draws from a hash of (seed, pid, clock), so
    /// a rerun, or a resumed run, straggles in the same clocks.
    pub fn straggle(&self, seed: u64, pid: usize, nprocs: usize, clock: i64) {
        let hit = match self.straggler {
            None => false,
            Some(Straggler::Delayed) => clock.rem_euclid(nprocs as i64) as usize == pid,
            Some(Straggler::Random) => {
                let h = ps_runtime::mix64(seed ^ (pid as u64) << 40 ^ clock as u64);
                ((h >> 11) as f64 / (1u64 << 53) as f64) < self.straggler_p
            }
        };
        if hit && self.straggler_delay > 0.0 {
            std::thread::sleep(std::time::Duration::from_secs_f64(self.straggler_delay));
        }
    }
}
