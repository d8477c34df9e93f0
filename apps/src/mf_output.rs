//! `mf`'s output: the factor tables (text, `.npy`, or Parquet in Spark ALSModel's layout), the
//! recommendations of `--recommend`, the global mean and the model's metadata.

use super::dictionary::keys_for;
use super::mf::{Mf, MfWorker, MEAN, OWNER};
use super::mf_recommend::write_recs;
use super::mf_users::elected;
use super::options::OutputFormat;
use super::output::Output;
use super::rows_out::RowsPart;
use ps_runtime::Result;
use ps_runtime::Worker;

/// The row of the mean table that counts the ids too large for an int32 (users, items).
const WIDE_IDS: u64 = 1;

impl Mf {
    /// Writes `user_factors` and `item_factors` (text: `id<TAB>v1<TAB>...<TAB>vK`; or `.npy`
    /// with `--output-format binary`). Each id is written by one of the workers that have it,
    /// picked by a hash of the id among them through the owner table, so the parts are balanced
    /// and are written in parallel.
    pub(super) fn write_model(&self, st: &mut MfWorker, w: &mut Worker, out: &Output) -> Result<()> {
        let gid = st.gid;
        let mut owner = w.open(OWNER)?;
        // Owner rows: users at 2*id, items at 2*id+1. Local users have one owner already.
        if st.local.is_none() {
            for &u in &st.users {
                owner.inc_col(2 * u, gid as u32, 1i64)?;
            }
        }
        for &i in &st.items {
            owner.inc_col(2 * i + 1, gid as u32, 1i64)?;
        }
        // Spark's ALS takes int32 ids: ids are written as such when every one of the job fits.
        let mut mean = w.open(MEAN)?;
        let wide = |ids: &[u64]| ids.iter().filter(|&&id| id > i32::MAX as u64).count() as f64;
        mean.batch_inc(WIDE_IDS, &[(0, wide(&st.users)), (1, wide(&st.items))])?;
        w.global_barrier()?;
        let narrow = {
            let m = mean.get(WIDE_IDS)?;
            [m[0] == 0.0, m[1] == 0.0]
        };
        // Ask for every owner row and factor row at once (packed fetches, one round trip per
        // server) instead of one blocking round trip per row.
        let local = st.local.is_some();
        for (ids, t, tag) in [(&st.users, &mut st.lt, 0u64), (&st.items, &mut st.rt, 1)] {
            if tag == 0 && local {
                continue;
            }
            owner.refresh_rows(ids.iter().map(|&id| 2 * id + tag));
            match tag {
                0 => t.refresh_rows(ids.iter().copied()),
                _ => t.refresh_rows(st.ir.rows_of(ids)),
            }
        }
        let (format, rank) = (self.args.common.output_format, self.args.rank);
        let (users, user_ids) = match &st.local {
            // Every local user has this worker as its one owner.
            Some(l) => (RowsPart::lent(format, rank, &st.users, l.all()).narrow_ids(narrow[0]), None),
            None => {
                let (mut users, mut ids) = (RowsPart::<f32>::new(format, rank).narrow_ids(narrow[0]), Vec::new());
                for &id in &st.users {
                    if elected(&owner.get(2 * id)?, id) == Some(gid) {
                        users.push(id, &st.lt.get(id)?);
                        ids.push(id);
                    }
                }
                (users, Some(ids))
            }
        };
        // The input's own ids, where a dictionary numbered them (every worker asks, collectively).
        let users = users.with_keys(keys_for(st.dicts[0].as_ref(), w, user_ids.as_deref().unwrap_or(&st.users))?);
        // Parquet: the names of Spark ALS's model (`userFactors`, `itemFactors`, `metadata`).
        let parquet = format == OutputFormat::Parquet;
        let names = if parquet { ["userFactors", "itemFactors"] } else { ["user_factors", "item_factors"] };
        users.write(out, gid, names[0], gid)?;
        let (mut items, mut item_ids) = (RowsPart::<f32>::new(format, rank).narrow_ids(narrow[1]), Vec::new());
        for &id in &st.items {
            if elected(&owner.get(2 * id + 1)?, id) == Some(gid) {
                st.rt.read_with(st.ir.row(id as u32), |row| items.push(id, &row[st.ir.cols(id as u32)]))?;
                item_ids.push(id);
            }
        }
        items.with_keys(keys_for(st.dicts[1].as_ref(), w, &item_ids)?).write(out, gid, names[1], gid)?;
        if self.args.recommend.is_some() {
            let keys = [
                keys_for(st.dicts[0].as_ref(), w, &st.recs.users)?,
                keys_for(st.dicts[1].as_ref(), w, &st.recs.items)?,
            ];
            write_recs(&st.recs, keys, narrow, parquet, out, gid)?;
        }
        if gid == 0 {
            out.write_part(0, "global_mean", 0, |f| writeln!(f, "{}", st.mu))?;
            if parquet {
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                let meta = self.args.model_metadata(st.mu, now.map_or(0, |d| d.as_millis() as u64));
                out.write_part(0, "metadata", 0, |f| writeln!(f, "{meta}"))?;
            }
        }
        out.commit_when_all_wrote(w, "factors")
    }
}
