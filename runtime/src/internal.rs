//! The items other crates of this workspace need and users do not, listed one by one so that what
//! crosses a crate boundary is explicit: `yarn-submit` and the AM handle the job secret, merge
//! the processes' stats and follow the one restart policy, and log as the runtime does;
//! tests and `ps-bench` reach the wire codec. Not a stable API.

pub use crate::live::Live;
pub use crate::logging::{LogLevels, TIME_PATTERN};
pub use crate::restart_log::RestartLog;
pub use crate::restarts::RestartPolicy;
pub use crate::secret::{
    check as check_secret, generate as generate_secret, write_new_file as write_secret_file, CREDENTIALS_ALIAS,
};
pub use crate::snapshot::format::crc32c;
pub use crate::stats::MEMORY_LIMIT_ENV;
pub use crate::stats::{merge as merge_stats, ProcessSummary};
pub use crate::wire::{auth, frame, Msg};
