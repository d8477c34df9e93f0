//! Delegation tokens for a job longer than they live (`yarn-submit --principal --keytab` on a
//! secure cluster, as Spark's `--keytab`). The keytab reaches this AM as a private local resource;
//! before the job's HDFS tokens expire the AM logs in from it and obtains new ones for the same
//! file systems, then hands them on: into its own credentials file (its HDFS client reads that
//! file for every new connection), to containers it starts later (restarts), and to the running
//! processes over their rendezvous connections (`ps_job::token_push`).
//!
//! When: at three quarters of the shorter of the NameNode's renew interval
//! (`dfs.namenode.delegation.token.renew-interval` in the configuration, default 1 day; a token
//! nobody renews expires then) and the tokens' maximum lifetime (read from the tokens
//! themselves) less the last minute of it, which hdfs-native does not use a token in. A failed attempt is logged and tried again a minute later, or sooner for short
//! lifetimes; the old tokens keep working until they expire.

use ps_hadoop::filesystems::token_sources;
use ps_yarn::conf::HadoopConf;
use ps_yarn::credentials::{Credentials, Token, KIND_AMRM, KIND_HDFS};
use ps_yarn::gssapi::Login;
use ps_yarn::hdfs_token;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// Hadoop's default `dfs.namenode.delegation.token.renew-interval`: one day.
const DEFAULT_RENEW_MS: u64 = 24 * 3600 * 1000;

/// What the AM needs to obtain fresh tokens, and where they go.
pub struct Refresher {
    pub principal: String,
    pub keytab: PathBuf,
    /// The file systems the job's tokens were obtained for (yarn-submit's list).
    pub urls: Vec<String>,
    pub conf: HadoopConf,
    pub secret: Arc<Vec<u8>>,
    pub app_id: String,
    /// The AM's own credentials file (`HADOOP_TOKEN_FILE_LOCATION`).
    pub token_file: PathBuf,
}

/// Where fresh credentials go besides the AM's own file.
pub struct Outlets {
    /// The credentials file (without the AMRMToken) for containers started from now on.
    pub containers: watch::Sender<Vec<u8>>,
    /// The sealed `tokens` line for running processes.
    pub lines: watch::Sender<Option<Arc<String>>>,
}

impl Refresher {
    /// Refreshes until the AM exits.
    pub async fn run(self, mut creds: Credentials, out: Outlets) {
        let renew = match self.conf.get("dfs.namenode.delegation.token.renew-interval") {
            Ok(Some(v)) => v.trim().parse().unwrap_or(DEFAULT_RENEW_MS),
            _ => DEFAULT_RENEW_MS,
        };
        let mut wait = period(&creds, renew);
        log::info!("delegation tokens: renewed from the keytab of {} every {wait:?}", self.principal);
        for seq in 1.. {
            tokio::time::sleep(wait).await;
            let fresh = {
                let (conf, urls) = (self.conf.clone(), self.urls.clone());
                let login =
                    Login::Keytab { principal: self.principal.clone(), keytab: self.keytab.display().to_string() };
                tokio::task::spawn_blocking(move || obtain(&conf, &urls, &login))
                    .await
                    .unwrap_or_else(|e| Err(format!("the token task failed: {e}")))
            };
            match fresh {
                Ok(fresh) => {
                    let n = fresh.len();
                    creds.tokens.retain(|(_, t)| t.kind != KIND_HDFS);
                    creds.tokens.extend(fresh);
                    if let Err(e) = ps_job::token_push::install(&self.token_file, &creds.to_bytes()) {
                        log::warn!("{e}");
                    }
                    let for_containers = creds.without_kind(KIND_AMRM).to_bytes();
                    let line = ps_job::token_push::seal(&self.secret, &self.app_id, seq, &for_containers);
                    out.containers.send_replace(for_containers);
                    out.lines.send_replace(Some(Arc::new(line)));
                    wait = period(&creds, renew);
                    log::info!(
                        "delegation tokens: {n} fresh ones sent to the processes (refresh {seq}); next in {wait:?}"
                    );
                }
                Err(e) => {
                    wait = (period(&creds, renew) / 8).min(Duration::from_secs(60));
                    log::warn!("delegation tokens: obtaining fresh ones failed ({e}); trying again in {wait:?}");
                }
            }
        }
    }
}

/// New tokens for every file system of the job, from a fresh keytab login (on a thread of its
/// own: the IPC client's futures are not `Send`).
fn obtain(conf: &HadoopConf, urls: &[String], login: &Login) -> Result<Vec<(String, Token)>, String> {
    let sources = token_sources(conf, urls.iter().map(String::as_str)).map_err(|e| e.to_string())?;
    let renewer = conf.rm_principal().map_err(|e| e.to_string())?;
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for s in &sources {
        let got =
            rt.block_on(hdfs_token::fetch_for(s, &renewer, login)).map_err(|e| format!("{}: {e}", s.authority()))?;
        out.extend(got.into_iter().map(|t| (t.service.clone(), t)));
    }
    Ok(out)
}

/// The HDFS client (hdfs-native) passes over a token within this long of its maximum date.
const CLIENT_MARGIN_MS: u64 = 60_000;

/// Three quarters of the shorter of `renew_ms` and the shortest usable lifetime of the HDFS
/// tokens in `creds` (their maximum lifetime less the client's margin), at least a second.
fn period(creds: &Credentials, renew_ms: u64) -> Duration {
    let life = creds
        .tokens
        .iter()
        .filter(|(_, t)| t.kind == KIND_HDFS)
        .filter_map(|(_, t)| hdfs_token::max_lifetime_ms(t).ok())
        .filter(|&ms| ms > 0)
        .map(|ms| (ms as u64).saturating_sub(CLIENT_MARGIN_MS))
        .min()
        .unwrap_or(u64::MAX);
    Duration::from_millis((renew_ms.min(life) / 4 * 3).max(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(issued: i64, max: i64) -> Token {
        let mut id = vec![0u8];
        for s in ["alice@R", "rm", ""] {
            ps_hadoop::vint::write_text(&mut id, s.as_bytes());
        }
        ps_hadoop::vint::write_vlong(&mut id, issued);
        ps_hadoop::vint::write_vlong(&mut id, max);
        Token { identifier: id, kind: KIND_HDFS.into(), ..Default::default() }
    }

    #[test]
    fn refreshed_at_three_quarters_of_the_shorter_lifetime() {
        let creds = |ts: Vec<Token>| Credentials {
            tokens: ts.into_iter().map(|t| (String::new(), t)).collect(),
            secrets: vec![],
        };
        let day = 24 * 3600 * 1000;
        assert_eq!(period(&creds(vec![token(0, 7 * day)]), day as u64), Duration::from_millis(day as u64 / 4 * 3));
        // A 100 s token is usable for 40 s (the client passes over it in its last minute).
        let short = creds(vec![token(1_000, 101_000), token(0, 7 * day)]);
        assert_eq!(period(&short, day as u64), Duration::from_secs(30));
        assert_eq!(period(&creds(vec![]), 40_000), Duration::from_secs(30));
        assert_eq!(period(&creds(vec![]), 10), Duration::from_secs(1));
    }
}
