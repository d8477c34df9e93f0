//! Configuration of one runtime process and of a job. One serde struct per component; every field
//! has a default so a config file names only what it changes, and the effective configuration is
//! echoed into the stats output.

use crate::error::{PsError, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Consistency model of a job (LazyTable §2.3, ESSP).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Consistency {
    /// Bulk synchronous: staleness 0 (A-BSP when a clock is not one pass).
    Bsp,
    /// Stale synchronous parallel, pull: rows are fetched when the cached copy is too old.
    Ssp,
    /// Eager SSP (SSP-push): first read subscribes; servers push fresh rows at each clock.
    Essp,
    /// No guarantee: unbounded staleness, aggressive refresh.
    Async,
}

impl std::str::FromStr for Consistency {
    type Err = PsError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "bsp" => Ok(Self::Bsp),
            "ssp" => Ok(Self::Ssp),
            "essp" => Ok(Self::Essp),
            "async" => Ok(Self::Async),
            _ => Err(PsError::Config(format!("consistency: '{s}' is not one of bsp, ssp, essp, async"))),
        }
    }
}

/// Automatic prefetch policy (LazyTable §3.3): at the start of each clock the rows read in the
/// previous clock are refreshed.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PrefetchPolicy {
    Off,
    /// Refresh only rows that would be too stale to read in the new clock.
    Conservative,
    /// Refresh every row that is not from the latest clock.
    Aggressive,
}

/// Settings of one runtime process.
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields, default)]
pub struct RuntimeConfig {
    pub consistency: Consistency,
    /// Slack `s` for ssp/essp (tables may override); bsp forces 0, async ignores it.
    pub staleness: u32,
    /// Application (worker) threads per process.
    pub threads: usize,
    /// Tokio worker threads doing all network work of the process.
    pub comm_threads: usize,
    pub prefetch: PrefetchPolicy,
    /// Rows kept in each thread's cache before cold rows are dropped at a clock boundary.
    pub thread_cache_rows: usize,
    /// Bytes (MiB) of rows kept in each thread's cache, per table, before cold rows are dropped
    /// at a clock boundary: with rows of kilobytes the row cap alone allowed hundreds of MB a
    /// thread, which a container's memory limit does not forgive.
    pub thread_cache_mb: usize,
    /// Lock shards of each process cache.
    pub cache_shards: usize,
    /// Idle connections send a heartbeat this often.
    pub heartbeat_ms: u64,
    /// A peer silent for this long is declared lost.
    pub peer_timeout_ms: u64,
    /// How long start-up waits for every peer to listen and register.
    pub connect_timeout_ms: u64,
    pub max_frame_bytes: usize,
    /// How frames between processes are protected after the handshake: `privacy` (default:
    /// every frame encrypted, authenticated and numbered), `integrity` (authenticated and
    /// numbered, sent in clear) or `authentication` (the handshake only; trusted networks).
    pub wire_protection: crate::wire::WireProtection,
    /// Oplog batches are cut into frames of about this size.
    pub batch_bytes: usize,
    /// Also write one JSON line of stats per clock (to `<stats dir>/clocks-<id>.jsonl`).
    pub stats_per_clock: bool,
    /// Split each read's staleness into delivery lag and distance from the slowest worker
    /// (`staleness_profile` in the stats; experiments: one atomic load more per read).
    pub staleness_profile: bool,
    /// Snapshots and checkpoints (LazyTable §3.3); off unless `checkpoint.url` is set.
    pub checkpoint: CheckpointConfig,
    /// Ports to listen on (`A-B`) when a process binds its own (on YARN); any free port if unset.
    pub port_range: Option<crate::ports::PortRange>,
    /// Data centers and the emulated WAN between them (geo-distributed jobs).
    pub geo: crate::geo::GeoConfig,
    /// Which automatic restart of the job this run is (0: the first run). Set by the launcher
    /// (`--restarts`); a restarted run replaces an output the failed one left uncommitted.
    pub restart_attempt: u32,
    /// Fault injection for tests of the test suite itself. Not serialized: a job file or `--conf`
    /// that names `fault` is refused (see [`RuntimeConfig::from_json`]), so it can only be set
    /// from Rust code, i.e. by tests.
    #[serde(skip)]
    pub fault: FaultConfig,
}

/// How a snapshot at clock `t` relates to the updates of the clocks around it.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum SnapshotMode {
    /// Exactly the updates of the first `t` clocks: later updates that arrive before every client
    /// finished clock `t` are kept apart (copy-on-write) until the snapshot is taken. Resumable.
    #[default]
    Pure,
    /// The table as it is when every client has finished clock `t`: also holds some updates of
    /// later clocks from faster clients. Cheaper; not resumable.
    Approx,
}

impl std::str::FromStr for SnapshotMode {
    type Err = PsError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "pure" => Ok(Self::Pure),
            "approx" => Ok(Self::Approx),
            _ => Err(PsError::Config(format!("snapshot: '{s}' is not one of pure, approx"))),
        }
    }
}

/// What a periodic checkpoint that falls due while the previous one is still being written does.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum WhenBusy {
    /// It is skipped, job-wide (the name node decides, so every process skips the same ones):
    /// training never waits for storage, and checkpoints come as often as storage takes them
    /// (as Flink's one concurrent checkpoint). Counted in `snapshots_skipped`.
    #[default]
    Skip,
    /// Workers wait at its clock until the previous one is written: every due checkpoint is
    /// written, and a slow file system slows the job down to its pace.
    Wait,
}

/// Where and when tables (and worker states) are written, and whether to resume.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct CheckpointConfig {
    /// Directory (local path or `hdfs://` URL) holding `clock-<t>/` snapshot directories.
    pub url: Option<String>,
    /// Snapshot every this many clocks (0: only at the end of the job).
    pub every: i64,
    pub snapshot: SnapshotMode,
    /// Start from the latest complete checkpoint under `url` (from scratch if there is none).
    pub resume: bool,
    /// Keep this many complete snapshots; older ones are deleted (0: keep all).
    pub keep: usize,
    /// A periodic checkpoint due while the previous one is still being written: `skip` or `wait`.
    pub when_busy: WhenBusy,
}

impl Default for CheckpointConfig {
    fn default() -> Self {
        CheckpointConfig {
            url: None,
            every: 0,
            snapshot: SnapshotMode::Pure,
            resume: false,
            keep: 3,
            when_busy: WhenBusy::Skip,
        }
    }
}

impl CheckpointConfig {
    /// True if a periodic snapshot is due after `t` completed clocks.
    pub fn is_snapshot_clock(&self, t: i64) -> bool {
        self.url.is_some() && self.every > 0 && t > 0 && t % self.every == 0
    }
}

/// Deliberate misbehaviour, used to check that the consistency tests can fail. Test-only: it is
/// not part of the JSON configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FaultConfig {
    /// Servers claim rows are this many clocks fresher than they are (breaks SSP).
    pub overstate_age: u32,
    /// Clients accept rows this many clocks older than the bound allows (`c - s - 1 - k`): an
    /// off-by-one in the client's staleness check.
    pub loosen_client_bound: u32,
    /// ASP servers take a selective barrier's clock without holding its rows' reads back.
    pub ignore_selective_barriers: bool,
    /// ASP clients release a global barrier without waiting for their servers to sync the
    /// data centers' copies.
    pub skip_barrier_sync: bool,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        RuntimeConfig {
            consistency: Consistency::Essp,
            staleness: 1,
            threads: 2,
            comm_threads: 1,
            prefetch: PrefetchPolicy::Aggressive,
            thread_cache_rows: 1 << 16,
            thread_cache_mb: 64,
            cache_shards: 64,
            heartbeat_ms: 1000,
            peer_timeout_ms: 15_000,
            connect_timeout_ms: 60_000,
            max_frame_bytes: 256 << 20,
            wire_protection: crate::wire::WireProtection::Privacy,
            batch_bytes: 1 << 20,
            stats_per_clock: false,
            staleness_profile: false,
            checkpoint: CheckpointConfig::default(),
            port_range: None,
            geo: crate::geo::GeoConfig::default(),
            restart_attempt: 0,
            fault: FaultConfig::default(),
        }
    }
}

impl RuntimeConfig {
    /// Reads a configuration from JSON text (`--conf`, the `runtime` of `job.json`); `source`
    /// names the file in errors. Unknown keys are errors, and so is `fault`: fault injection
    /// silently breaks the consistency guarantee and exists for the test suite only.
    pub fn from_json(text: &str, source: &str) -> Result<Self> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| PsError::Config(format!("{source}: {e}")))?;
        Self::from_value(v, source)
    }

    fn from_value(v: serde_json::Value, source: &str) -> Result<Self> {
        if v.get("fault").is_some() {
            return Err(PsError::Config(format!(
                "{source}: fault: fault injection is for the test suite only and cannot be set in a job configuration"
            )));
        }
        serde_json::from_value(v).map_err(|e| PsError::Config(format!("{source}: {e}")))
    }

    /// Checks ranges; errors name the offending key.
    pub fn validate(&self) -> Result<()> {
        let bad = |k: &str, why: &str| Err(PsError::Config(format!("{k}: {why}")));
        if self.threads == 0 {
            return bad("threads", "must be at least 1");
        }
        if self.comm_threads == 0 {
            return bad("comm_threads", "must be at least 1");
        }
        if self.thread_cache_mb == 0 {
            return bad("thread_cache_mb", "must be at least 1");
        }
        if self.cache_shards == 0 || !self.cache_shards.is_power_of_two() {
            return bad("cache_shards", "must be a power of two");
        }
        if self.heartbeat_ms == 0 || self.peer_timeout_ms <= self.heartbeat_ms * 2 {
            return bad("peer_timeout_ms", "must exceed twice heartbeat_ms");
        }
        if self.batch_bytes == 0 || self.batch_bytes * 2 > self.max_frame_bytes {
            return bad("batch_bytes", "must be positive and at most half of max_frame_bytes");
        }
        if self.checkpoint.every < 0 {
            return bad("checkpoint.every", "must be >= 0 (0: snapshot only at the end)");
        }
        if self.checkpoint.url.is_none() && (self.checkpoint.every > 0 || self.checkpoint.resume) {
            return bad("checkpoint.url", "is required for checkpoint.every and checkpoint.resume");
        }
        if self.checkpoint.resume && self.checkpoint.snapshot != SnapshotMode::Pure {
            return bad("checkpoint.snapshot", "resume needs pure snapshots (approximate ones are not consistent)");
        }
        if self.staleness > 1_000_000 {
            return bad("staleness", "is unreasonably large (use consistency async)");
        }
        self.geo.validate()?;
        // Liveness counts whole frames: a batch must cross the slowest emulated link well within
        // the peer timeout, or a busy link would look like a dead peer.
        if let Some((mbps, delay_ms)) = self.geo.slowest() {
            let secs = self.batch_bytes as f64 * 8.0 / (mbps * 1e6) + 2.0 * delay_ms / 1e3;
            if secs * 2.0 > self.peer_timeout_ms as f64 / 1e3 {
                return bad(
                    "peer_timeout_ms",
                    "must be at least twice the time a batch (batch_bytes) takes on the slowest emulated WAN \
                     link (geo.wan_mbps and geo.wan_delay_ms, or geo.wan_matrix): raise it or lower batch_bytes",
                );
            }
        }
        Ok(())
    }

    /// Effective slack of a table under this configuration (`None`: unbounded).
    pub fn slack(&self, table_override: Option<u32>) -> Option<i64> {
        match self.consistency {
            Consistency::Bsp => Some(0),
            Consistency::Async => None,
            Consistency::Ssp | Consistency::Essp => Some(table_override.unwrap_or(self.staleness) as i64),
        }
    }
}

/// How rows are spread over server shards.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// `hash(row) mod servers`: balanced for any id pattern (default).
    #[default]
    Hash,
    /// `row mod servers`: predictable, good for dense id ranges.
    Modulo,
}

/// One table. Every process must create the same tables (the name node checks).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TableConfig {
    pub id: u32,
    pub name: String,
    /// Registry name of the row type: `dense_f32`, `sparse_i64`, or a user-defined name.
    pub row_type: String,
    /// Row width (dense rows) or column bound (sparse rows, 0 = unbounded).
    pub columns: usize,
    /// Per-table staleness override for ssp/essp.
    #[serde(default)]
    pub staleness: Option<u32>,
    #[serde(default)]
    pub placement: Placement,
    /// Initial value of rows (default: zero). Applied by the server when it creates a row, so it
    /// happens exactly once per row whichever worker touches it first.
    #[serde(default)]
    pub init: Option<RowInit>,
    /// ASP: this table's own significance threshold, fixed (the job's decays as v / sqrt(t));
    /// 0 mirrors every change (small tables that must be exact, such as objective sums).
    #[serde(default)]
    pub significance: Option<f64>,
    /// The app asks for this table's rows ahead of reading them (`TableHandle::refresh`), on a
    /// schedule of its own such as slices rotating among the workers: the runtime then neither
    /// prefetches the rows read in the last clock (under rotation they are another worker's
    /// next) nor subscribes them to ESSP pushes (every change of a rotating slice would go to
    /// every process: P times the bytes of fetching a slice when its turn comes).
    #[serde(default)]
    pub announced_reads: bool,
}

/// Deterministic random row initialisation: uniform in `[low, high)`, seeded per row.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RowInit {
    pub low: f64,
    pub high: f64,
    pub seed: u64,
}

impl Eq for RowInit {}
// Thresholds are finite (checked when a table is created).
impl Eq for TableConfig {}

impl RowInit {
    /// Sets `r` to row `row`'s initial value (what the server creates it with), so an app that
    /// keeps some rows outside the tables starts them exactly as the tables would.
    pub fn fill<R: crate::row::Row>(&self, row: u64, r: &mut R) {
        r.randomize(mix64(self.seed ^ row.wrapping_mul(0x2545f4914f6cdd1d)), self.low, self.high);
    }
}

/// A table's id together with its row type, known to the compiler: the configuration made from
/// it names the row type, and `Worker::open` opens the table with it, so
/// the two cannot disagree (with [`TableConfig::new`] and `Worker::table`, an id and a row-type
/// name string must be matched by hand). Declare one per table, as a constant:
///
/// ```
/// use ps_runtime::{DenseRow, TableKey};
/// const WEIGHTS: TableKey<DenseRow<f32>> = TableKey::new(0);
/// let cfg = WEIGHTS.config("weights", 100);
/// assert_eq!((cfg.id, cfg.row_type.as_str()), (0, "dense_f32"));
/// ```
pub struct TableKey<R> {
    id: u32,
    row: std::marker::PhantomData<fn() -> R>,
}

impl<R> Clone for TableKey<R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<R> Copy for TableKey<R> {}

impl<R> std::fmt::Debug for TableKey<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableKey({}, {})", self.id, std::any::type_name::<R>())
    }
}

impl<R: crate::row::Row> TableKey<R> {
    pub const fn new(id: u32) -> Self {
        TableKey { id, row: std::marker::PhantomData }
    }

    pub fn id(self) -> u32 {
        self.id
    }

    /// The configuration of this table: `columns` columns of rows of type `R`; the other
    /// settings as [`TableConfig::new`] leaves them, to be changed with its `with_*` methods.
    pub fn config(self, name: &str, columns: usize) -> TableConfig {
        TableConfig::new(self.id, name, R::type_name(), columns)
    }
}

impl TableConfig {
    pub fn new(id: u32, name: &str, row_type: impl Into<String>, columns: usize) -> Self {
        TableConfig {
            id,
            name: name.to_string(),
            row_type: row_type.into(),
            columns,
            staleness: None,
            placement: Placement::Hash,
            init: None,
            significance: None,
            announced_reads: false,
        }
    }
    pub fn with_init(mut self, low: f64, high: f64, seed: u64) -> Self {
        self.init = Some(RowInit { low, high, seed });
        self
    }
    pub fn with_staleness(mut self, s: u32) -> Self {
        self.staleness = Some(s);
        self
    }
    /// ASP: a fixed significance threshold for this table (0: every change is mirrored).
    pub fn with_significance(mut self, threshold: f64) -> Self {
        self.significance = Some(threshold);
        self
    }
    /// See [`TableConfig::announced_reads`].
    pub fn with_announced_reads(mut self, announced: bool) -> Self {
        self.announced_reads = announced;
        self
    }
    pub fn with_placement(mut self, p: Placement) -> Self {
        self.placement = p;
        self
    }
    /// Server process that owns `row`.
    #[inline]
    pub fn server_of(&self, row: u64, servers: usize) -> usize {
        (self.slot(row) % servers as u64) as usize
    }

    /// The placement hash of `row`: its server is `slot mod servers` (in each data center, under
    /// ASP, so a row's copies are found the same way everywhere).
    #[inline]
    pub fn slot(&self, row: u64) -> u64 {
        match self.placement {
            Placement::Modulo => row,
            Placement::Hash => mix64(row ^ ((self.id as u64) << 32)),
        }
    }
}

/// Row placement and table initialisation hash rows with it.
pub use crate::hash::mix64;

/// Everything one `ps-runtime` process needs, written by the launcher (`yarn-submit`).
#[derive(Serialize, Deserialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct JobConfig {
    pub runtime: RuntimeConfig,
    pub app: String,
    #[serde(default)]
    pub app_args: Vec<String>,
    pub hostfile: PathBuf,
    /// Local jobs: the job secret's file (mode 0600).
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// YARN jobs: the alias of the job secret in the container credentials
    /// (`$HADOOP_TOKEN_FILE_LOCATION`).
    #[serde(default)]
    pub secret_credential: Option<String>,
    /// Directory for per-process stats files (`stats-<id>.json`).
    pub stats_dir: PathBuf,
    /// Local jobs: the launcher's tracker (`HOST:PORT`) that processes report progress to. On
    /// YARN they report to the application master instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tracker: Option<String>,
    /// The app's `--output` (as the processes see it), which an automatic restart never redoes
    /// once committed (`RestartPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl JobConfig {
    pub fn load(path: &std::path::Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| PsError::io(format!("reading job config {}", path.display()), e))?;
        Self::parse(&text, &path.display().to_string())
    }

    /// Parses and checks `job.json` text; `source` names it in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self> {
        let mut v: serde_json::Value =
            serde_json::from_str(text).map_err(|e| PsError::Config(format!("{source}: {e}")))?;
        // The runtime part goes through the same checks as `--conf` (no `fault`).
        let runtime = match v.as_object_mut().and_then(|o| o.remove("runtime")) {
            Some(r) => RuntimeConfig::from_value(r, &format!("{source}: runtime"))?,
            None => return Err(PsError::Config(format!("{source}: missing field `runtime`"))),
        };
        let mut rest = v;
        if let Some(o) = rest.as_object_mut() {
            o.insert("runtime".into(), serde_json::to_value(&runtime).map_err(|e| PsError::codec(e.to_string()))?);
        }
        let cfg: JobConfig = serde_json::from_value(rest).map_err(|e| PsError::Config(format!("{source}: {e}")))?;
        cfg.runtime.validate()?;
        if cfg.secret_file.is_some() == cfg.secret_credential.is_some() {
            return Err(PsError::Config(format!(
                "{source}: exactly one of secret_file and secret_credential is needed"
            )));
        }
        Ok(cfg)
    }

    /// Reads the job secret from where the job keeps it (file or container credentials).
    pub fn load_secret(&self) -> Result<Vec<u8>> {
        match (&self.secret_file, &self.secret_credential) {
            (Some(f), _) => crate::secret::read_file(f),
            (None, Some(alias)) => crate::secret::from_container_credentials(alias),
            (None, None) => Err(PsError::Config("the job config names no job secret".into())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_errors_name_the_key() {
        let err = |cfg: RuntimeConfig| cfg.validate().unwrap_err().to_string();
        assert!(err(RuntimeConfig { thread_cache_mb: 0, ..Default::default() }).contains("thread_cache_mb"));
        assert!(err(RuntimeConfig { cache_shards: 3, ..Default::default() }).contains("cache_shards"));
        assert!(RuntimeConfig::default().validate().is_ok());
    }
}
