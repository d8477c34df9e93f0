//! The job's locations, checked once before any process starts: every file system it names is
//! reachable (a missing Kerberos ticket or an unreachable NameNode is reported at once, naming the
//! flag), its input has files, and its output is not in the way. Without this, each process found
//! a missing input or an existing output after start-up and every one of them said so.

use crate::app_info::AppInfo;
use crate::error::{ClientError, Result};
use ps_runtime::storage::storage_for;
use ps_runtime::OutputPolicy;

/// Checks `info`'s locations (as the processes will see them: qualified on YARN) and the
/// `--checkpoint` URL. `resume`: the job continues an earlier one, whose output may be there.
pub fn check(app: &str, info: &AppInfo, checkpoint: Option<&str>, resume: bool) -> Result<()> {
    for (flag, url) in &info.locations {
        let st = storage_for(url).map_err(|source| reach(flag, url, source))?;
        match flag.as_str() {
            "--input" => {
                let pattern = url.contains(['*', '?', '[', '{']);
                if !pattern && !st.exists(url).map_err(|source| reach(flag, url, source))? {
                    return Err(ClientError::InputMissing { flag: flag.clone(), url: url.clone() });
                }
                // What the processes will list: an empty directory or a pattern matching nothing.
                st.list(url).map_err(|source| ClientError::NoInputFiles {
                    flag: flag.clone(),
                    url: url.clone(),
                    source,
                })?;
            }
            "--output" if info.output_policy == OutputPolicy::MustNotExist && !resume => {
                if st.exists(url).map_err(|source| reach(flag, url, source))? {
                    return Err(ClientError::OutputExists { url: url.clone() });
                }
            }
            _ => {
                st.exists(url).map_err(|source| reach(flag, url, source))?;
            }
        }
    }
    if let Some(url) = checkpoint {
        storage_for(url).and_then(|st| st.exists(url)).map_err(|source| reach("--checkpoint", url, source))?;
    }
    if info.output_policy == OutputPolicy::NotNamed {
        log::warn!("{app}: no --output, so the job's model is not written anywhere (--output DIR keeps it)");
    }
    Ok(())
}

fn reach(flag: &str, url: &str, source: ps_runtime::PsError) -> ClientError {
    ClientError::Reach { flag: flag.to_string(), url: url.to_string(), source }
}
