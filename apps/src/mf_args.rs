//! `mf`'s command-line options.

use super::options::CommonArgs;
use super::rotation::Rotation;
use clap::Parser;
use ps_runtime::input::RatingFormat;

#[derive(Parser, Debug, Clone)]
#[command(name = "mf", about = "Matrix factorization by SGD")]
pub struct MfArgs {
    #[command(flatten)]
    pub common: CommonArgs,
    #[arg(long, default_value_t = 20)]
    pub rank: usize,
    /// Regularisation: 0.05, or 0.01 with --implicit ([`MfArgs::lambda`]).
    #[arg(long = "lambda")]
    pub lambda_arg: Option<f32>,
    /// Initial step size: 0.015, or 0.05 with --implicit ([`MfArgs::lr`]).
    #[arg(long = "lr")]
    pub lr_arg: Option<f32>,
    /// Step size multiplier per pass.
    #[arg(long, default_value_t = 0.95)]
    pub lr_decay: f32,
    /// Hold out this fraction of ratings for a test RMSE.
    #[arg(long, default_value_t = 0.0)]
    pub test_fraction: f64,
    /// Initial factor entries are uniform in [-s, s) with s = init-scale / sqrt(rank).
    #[arg(long, default_value_t = 0.5)]
    pub init_scale: f64,
    /// The text format: auto, tsv/csv, movielens or netflix.
    #[arg(long, default_value = "auto")]
    pub format: RatingFormat,
    /// The user id column of a table input (CSV with a header line, or Parquet; a 0-based
    /// column number in a CSV without one). Tables default to `user`, `item` and `rating`.
    #[arg(long)]
    pub user_col: Option<String>,
    /// The item id column of a table input.
    #[arg(long)]
    pub item_col: Option<String>,
    /// The rating column of a table input.
    #[arg(long)]
    pub rating_col: Option<String>,
    /// Write the best K items for each user (`recommendations/`: user, item, score), leaving
    /// out the items the user rated in training; with --test-fraction, also report
    /// precision_at_k and recall_at_k. Needs --user-factors local.
    #[arg(long)]
    pub recommend: Option<usize>,
    /// Where user factors live. `local` (fast): each user's ratings go to one worker at load
    /// time and its factors stay in that worker, only item factors go through the parameter
    /// server (the users table is written at snapshots). `table`: both factor matrices are
    /// parameter-server tables and each worker reads its byte range of the input (the setup of
    /// the LazyTable and ESSP experiments).
    #[arg(long, value_enum, default_value_t = UserFactors::Local)]
    pub user_factors: UserFactors,
    /// Ask for each clock's rows ahead, in one batch (`false` leaves prefetching to the runtime's
    /// `prefetch` policy alone; the prefetch experiment compares the two).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub refresh_ahead: bool,
    /// Which ratings a clock trains on: `items` rotates slices of the items among the workers
    /// (no two workers change an item row within the staleness window, so the model does not
    /// depend on the number of workers; needs --clocks-per-pass to be a multiple of workers x
    /// (staleness + 1), which is the default; one process holds every item), `ratings` takes a part of the worker's ratings
    /// with all their items (every worker changes every popular item in every clock: diverges
    /// from a few workers on skewed data), `auto` is `items` unless the job cannot rotate
    /// (several passes a clock; async with more than one process).
    #[arg(long, value_enum, default_value_t = MfSchedule::Auto)]
    pub schedule: MfSchedule,
    /// Implicit feedback (clicks, plays, purchases): train on (user, item) interactions with
    /// sampled negatives (BPR's pairwise logistic loss). A text input's lines give the two ids
    /// (anything after them is not read); a table's `--rating-col`, when given, is a count that
    /// weighs the interaction by 1 + ln(count). Reports bpr_loss, and with --test-fraction
    /// test_auc and precision, recall and NDCG at K (--recommend K, else 10).
    #[arg(long)]
    pub implicit: bool,
    /// Negatives drawn per interaction and pass (--implicit).
    #[arg(long, default_value_t = 3)]
    pub negatives: usize,
}

/// `--schedule`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MfSchedule {
    /// `items` unless the job cannot rotate.
    Auto,
    /// Rotate slices of the items among the workers.
    Items,
    /// Every clock takes a part of the ratings with all their items.
    Ratings,
}

impl MfSchedule {
    pub(super) fn rotation(self) -> Rotation {
        match self {
            MfSchedule::Auto => Rotation::Auto,
            MfSchedule::Items => Rotation::Rotate,
            MfSchedule::Ratings => Rotation::Data,
        }
    }
}

/// `--user-factors`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserFactors {
    Local,
    Table,
}

impl MfArgs {
    /// The initial step size. BPR's gradient is bounded by one (a sigmoid) where squared
    /// error's grows with the error, so implicit feedback takes larger steps: on MovieLens 100K
    /// (ratings of 4 and 5 as interactions, rank 32, 20 passes) precision@10 was 0.170 at 0.015
    /// and 0.187 at 0.05, and 0.197 with the lighter regularisation.
    pub fn lr(&self) -> f32 {
        self.lr_arg.unwrap_or(if self.implicit { 0.05 } else { 0.015 })
    }

    /// The regularisation weight (see [`MfArgs::lr`] for the implicit default).
    pub fn lambda(&self) -> f32 {
        self.lambda_arg.unwrap_or(if self.implicit { 0.01 } else { 0.05 })
    }

    /// `metadata/part-00000` of a Parquet model: one JSON line in the layout of Spark's
    /// `DefaultParamsWriter`, so that `ALSModel.load` reads the model (its `class`, `uid`,
    /// `paramMap`, `defaultParamMap` and ALS's `rank`), plus what a reader of the factors needs
    /// and the job's settings. Unlike Spark's ALS the model has a global mean: a prediction is
    /// `mean` plus the dot product, so Spark's `transform` predicts `mean` less (its rankings
    /// are the same).
    pub(super) fn model_metadata(&self, mean: f32, timestamp_ms: u64) -> serde_json::Value {
        let (a, c) = (self, &self.common);
        // An f32 as the decimal it prints as (0.05, not 0.05000000074505806).
        let dec = |x: f32| x.to_string().parse::<f64>().unwrap_or(x as f64);
        let prediction = match a.implicit {
            true => "dot(userFactors.features, itemFactors.features)",
            false => "mean + dot(userFactors.features, itemFactors.features)",
        };
        // Spark's transform joins on these columns; a column given by number has no name.
        let col = |given: &Option<String>, default: &str| match given {
            Some(n) if !n.bytes().all(|b| b.is_ascii_digit()) => n.clone(),
            _ => default.to_string(),
        };
        let uid =
            c.input.bytes().fold(ps_runtime::mix64(c.seed ^ a.rank as u64), |h, b| ps_runtime::mix64(h ^ b as u64));
        serde_json::json!({
            "class": "org.apache.spark.ml.recommendation.ALSModel",
            "timestamp": timestamp_ms,
            // The metadata's format: Spark's readers expect `defaultParamMap` from 2.4 on.
            "sparkVersion": "3.0.0",
            "uid": format!("ALS_{:012x}", uid & 0xffff_ffff_ffff),
            "paramMap": {"userCol": col(&a.user_col, "user"), "itemCol": col(&a.item_col, "item")},
            "defaultParamMap": {"predictionCol": "prediction", "coldStartStrategy": "nan"},
            "model": "mf", "rank": a.rank, "regParam": dec(a.lambda()), "mean": dec(mean),
            "implicitPrefs": a.implicit, "prediction": prediction,
            "settings": {"lr": dec(a.lr()), "lr_decay": dec(a.lr_decay), "passes": c.passes, "seed": c.seed,
                         "schedule": format!("{:?}", a.schedule).to_lowercase(), "input": c.input,
                         "negatives": a.implicit.then_some(a.negatives)},
        })
    }
}
