//! Synthetic inputs with fixed seeds, shaped like the papers' datasets, at any scale:
//! Netflix-shaped ratings (power-law item popularity, planted low-rank model plus noise),
//! NYTimes-shaped corpora (the LDA generative process) and power-law web graphs.

use crate::error::{PsError, Result};
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Gamma, Normal};
use std::io::Write;
use std::path::Path;

fn create(path: &Path) -> Result<std::io::BufWriter<std::fs::File>> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d).map_err(|e| PsError::io(format!("creating {}", d.display()), e))?;
    }
    let f = std::fs::File::create(path).map_err(|e| PsError::io(format!("creating {}", path.display()), e))?;
    Ok(std::io::BufWriter::with_capacity(1 << 20, f))
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> PsError + '_ {
    move |e| PsError::io(format!("writing {}", path.display()), e)
}

/// Samples indices `0..n` with probability proportional to `1 / (rank + 1)^s`, where ranks are a
/// fixed random permutation of the indices (so popularity is not ordered by id).
pub struct Zipf {
    cdf: Vec<f64>,
    perm: Vec<u32>,
}

impl Zipf {
    pub fn new(n: usize, s: f64, rng: &mut impl Rng) -> Self {
        let mut acc = 0.0;
        let cdf = (0..n)
            .map(|i| {
                acc += 1.0 / ((i + 1) as f64).powf(s);
                acc
            })
            .collect::<Vec<_>>();
        let mut perm: Vec<u32> = (0..n as u32).collect();
        rand::seq::SliceRandom::shuffle(perm.as_mut_slice(), rng);
        Zipf { cdf, perm }
    }
    pub fn sample(&self, rng: &mut impl Rng) -> u32 {
        let total = *self.cdf.last().unwrap_or(&1.0);
        let x = rng.gen::<f64>() * total;
        let i = self.cdf.partition_point(|c| *c < x).min(self.cdf.len() - 1);
        self.perm[i]
    }
}

/// Shape of a synthetic ratings set.
#[derive(Clone, Debug)]
pub struct RatingsSpec {
    pub users: usize,
    pub items: usize,
    pub ratings: usize,
    /// Rank of the planted model.
    pub rank: usize,
    /// Standard deviation of the rating noise.
    pub noise: f64,
    /// Zipf exponents of item popularity and user activity.
    pub item_skew: f64,
    pub user_skew: f64,
    pub seed: u64,
}

impl RatingsSpec {
    /// Netflix Prize shape (480,189 users x 17,770 items) with `ratings` ratings.
    pub fn netflix(ratings: usize, seed: u64) -> Self {
        RatingsSpec {
            users: 480_189,
            items: 17_770,
            ratings,
            rank: 10,
            noise: 0.5,
            item_skew: 0.9,
            user_skew: 0.6,
            seed,
        }
    }
}

/// The planted model and popularity laws of a ratings set, drawn from its seed.
struct Planted {
    u: Vec<f32>,
    v: Vec<f32>,
    items: Zipf,
    users: Zipf,
    noise: Normal<f64>,
}

impl Planted {
    fn new(spec: &RatingsSpec, rng: &mut crate::hash::SeededRng) -> Result<Self> {
        let normal = Normal::new(0.0, 1.0 / (spec.rank as f64).sqrt()).map_err(|e| PsError::Config(e.to_string()))?;
        let u: Vec<f32> = (0..spec.users * spec.rank).map(|_| normal.sample(rng) as f32).collect();
        let v: Vec<f32> = (0..spec.items * spec.rank).map(|_| normal.sample(rng) as f32).collect();
        let items = Zipf::new(spec.items, spec.item_skew, rng);
        let users = Zipf::new(spec.users, spec.user_skew, rng);
        let noise = Normal::new(0.0, spec.noise).map_err(|e| PsError::Config(e.to_string()))?;
        Ok(Planted { u, v, items, users, noise })
    }

    /// Writes `n` ratings drawn with `rng` to `path`.
    fn write(&self, k: usize, n: usize, rng: &mut crate::hash::SeededRng, path: &Path) -> Result<()> {
        let mut f = create(path)?;
        for _ in 0..n {
            let (a, b) = (self.users.sample(rng) as usize, self.items.sample(rng) as usize);
            let dot: f32 = self.u[a * k..a * k + k].iter().zip(&self.v[b * k..b * k + k]).map(|(x, y)| x * y).sum();
            let r = (3.6 + 1.5 * dot as f64 + self.noise.sample(rng)).round().clamp(1.0, 5.0);
            writeln!(f, "{}\t{}\t{}", a + 1, b + 1, r as u8).map_err(io(path))?;
        }
        f.flush().map_err(io(path))
    }
}

/// Writes `user<TAB>item<TAB>rating` lines (ids 1-based, ratings 1..5). Deterministic per seed.
pub fn ratings(spec: &RatingsSpec, path: &Path) -> Result<()> {
    let mut rng = crate::hash::SeededRng::seed_from_u64(spec.seed);
    let planted = Planted::new(spec, &mut rng)?;
    planted.write(spec.rank, spec.ratings, &mut rng, path)
}

/// Writes the ratings as `parts` files `part-00000.tsv`... in the directory `dir`, generated in
/// parallel from one planted model (as a table of a Hadoop job's output would be laid out).
/// Deterministic per seed and number of parts.
pub fn ratings_parts(spec: &RatingsSpec, dir: &Path, parts: usize) -> Result<()> {
    let mut rng = crate::hash::SeededRng::seed_from_u64(spec.seed);
    let planted = Planted::new(spec, &mut rng)?;
    let parts = parts.max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..parts)
            .map(|p| {
                let (planted, n) = (&planted, spec.ratings / parts + usize::from(p < spec.ratings % parts));
                let path = dir.join(format!("part-{p:05}.tsv"));
                let mut rng =
                    crate::hash::SeededRng::seed_from_u64(crate::hash::mix64(spec.seed ^ (p as u64 + 1) << 32));
                s.spawn(move || planted.write(spec.rank, n, &mut rng, &path))
            })
            .collect();
        handles.into_iter().try_for_each(|h| h.join().map_err(|_| PsError::Usage("gen: a writer panicked".into()))?)
    })
}

/// Shape of a synthetic corpus (LDA generative process).
#[derive(Clone, Debug)]
pub struct CorpusSpec {
    pub docs: usize,
    pub vocab: usize,
    pub topics: usize,
    /// Mean document length in tokens.
    pub doc_len: usize,
    pub alpha: f64,
    pub beta: f64,
    pub seed: u64,
    /// Zipf exponent of the words' overall frequencies: each topic's word distribution is a
    /// Dirichlet draw around Zipf weights (over a random permutation of the ids), as in text,
    /// where a few words carry much of every topic. 0: around uniform weights, every word about
    /// as frequent as any other.
    pub word_skew: f64,
}

fn gamma(shape: f64) -> Result<Gamma<f64>> {
    Gamma::new(shape, 1.0).map_err(|e| PsError::Config(format!("dirichlet: {e}")))
}

/// Gamma draws divided by their sum: a Dirichlet draw.
fn normalized(mut v: Vec<f64>) -> Vec<f64> {
    let s: f64 = v.iter().sum();
    v.iter_mut().for_each(|x| *x /= s);
    v
}

fn dirichlet(n: usize, a: f64, rng: &mut impl Rng) -> Result<Vec<f64>> {
    let g = gamma(a)?;
    Ok(normalized((0..n).map(|_| g.sample(rng).max(1e-300)).collect()))
}

/// Weights `1 / (rank + 1)^s` summing to 1, ranks a random permutation of `0..n`.
fn zipf_weights(n: usize, s: f64, rng: &mut impl Rng) -> Vec<f64> {
    let mut perm: Vec<usize> = (0..n).collect();
    rand::seq::SliceRandom::shuffle(perm.as_mut_slice(), rng);
    let mut w = vec![0.0; n];
    perm.iter().enumerate().for_each(|(rank, &i)| w[i] = 1.0 / ((rank + 1) as f64).powf(s));
    let total: f64 = w.iter().sum();
    w.iter_mut().for_each(|x| *x /= total);
    w
}

/// A Dirichlet draw with mean `base` (summing to 1) and concentration `c`.
fn dirichlet_around(base: &[f64], c: f64, rng: &mut impl Rng) -> Result<Vec<f64>> {
    let v = base.iter().map(|&b| Ok(gamma(c * b)?.sample(rng).max(1e-300))).collect::<Result<_>>()?;
    Ok(normalized(v))
}

fn cumulative(p: &[f64]) -> Vec<f64> {
    let mut acc = 0.0;
    p.iter()
        .map(|x| {
            acc += x;
            acc
        })
        .collect()
}

fn pick(cdf: &[f64], rng: &mut impl Rng) -> usize {
    let x = rng.gen::<f64>() * cdf.last().copied().unwrap_or(1.0);
    cdf.partition_point(|c| *c < x).min(cdf.len() - 1)
}

/// Writes `docword.<name>.txt` (UCI format) and `vocab.<name>.txt` into `dir`.
pub fn corpus(spec: &CorpusSpec, dir: &Path, name: &str) -> Result<()> {
    let mut rng = crate::hash::SeededRng::seed_from_u64(spec.seed);
    let base = (spec.word_skew > 0.0).then(|| zipf_weights(spec.vocab, spec.word_skew, &mut rng));
    let phis: Vec<Vec<f64>> = (0..spec.topics)
        .map(|_| match &base {
            Some(b) => dirichlet_around(b, spec.beta * spec.vocab as f64, &mut rng),
            None => dirichlet(spec.vocab, spec.beta, &mut rng),
        })
        .map(|p| p.map(|p| cumulative(&p)))
        .collect::<Result<_>>()?;
    let vpath = dir.join(format!("vocab.{name}.txt"));
    let mut vf = create(&vpath)?;
    for w in 0..spec.vocab {
        writeln!(vf, "w{w}").map_err(io(&vpath))?;
    }
    vf.flush().map_err(io(&vpath))?;
    // Body first (NNZ is known only at the end), then the header.
    let body = dir.join(format!(".docword.{name}.body"));
    let mut bf = create(&body)?;
    let mut nnz = 0u64;
    let mut counts: std::collections::BTreeMap<usize, u32> = Default::default();
    for d in 0..spec.docs {
        let theta = cumulative(&dirichlet(spec.topics, spec.alpha, &mut rng)?);
        let len = 1 + rng.gen_range(0..2 * spec.doc_len);
        counts.clear();
        for _ in 0..len {
            let z = pick(&theta, &mut rng);
            *counts.entry(pick(&phis[z], &mut rng)).or_default() += 1;
        }
        for (w, c) in &counts {
            writeln!(bf, "{} {} {}", d + 1, w + 1, c).map_err(io(&body))?;
            nnz += 1;
        }
    }
    bf.flush().map_err(io(&body))?;
    drop(bf);
    let path = dir.join(format!("docword.{name}.txt"));
    let mut f = create(&path)?;
    writeln!(f, "{}\n{}\n{}", spec.docs, spec.vocab, nnz).map_err(io(&path))?;
    let mut b = std::fs::File::open(&body).map_err(|e| PsError::io(format!("reading {}", body.display()), e))?;
    std::io::copy(&mut b, &mut f).map_err(io(&path))?;
    f.flush().map_err(io(&path))?;
    let _ = std::fs::remove_file(&body);
    Ok(())
}

/// Shape of a synthetic directed web graph.
#[derive(Clone, Debug)]
pub struct GraphSpec {
    pub nodes: usize,
    /// Mean out-degree.
    pub degree: usize,
    /// Zipf exponent of in-link popularity.
    pub skew: f64,
    pub seed: u64,
}

/// Writes a SNAP-style edge list: power-law in-degrees (Zipf-chosen targets), geometric
/// out-degrees, some dangling nodes, no self loops.
pub fn graph(spec: &GraphSpec, path: &Path) -> Result<()> {
    let mut rng = crate::hash::SeededRng::seed_from_u64(spec.seed);
    let targets = Zipf::new(spec.nodes, spec.skew, &mut rng);
    let mut f = create(path)?;
    writeln!(
        f,
        "# synthetic power-law graph: {} nodes, mean out-degree {}, seed {}",
        spec.nodes, spec.degree, spec.seed
    )
    .map_err(io(path))?;
    let p = 1.0 / (spec.degree as f64 + 1.0);
    for src in 0..spec.nodes {
        let mut d = 0;
        while rng.gen::<f64>() > p {
            d += 1;
        }
        for _ in 0..d {
            let dst = targets.sample(&mut rng) as usize;
            if dst != src {
                writeln!(f, "{src}\t{dst}").map_err(io(path))?;
            }
        }
    }
    f.flush().map_err(io(path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Token counts per word of a generated corpus, most frequent first.
    fn word_counts(word_skew: f64) -> Vec<u64> {
        let dir = std::env::temp_dir().join(format!("ps-gen-skew-{}-{word_skew}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spec =
            CorpusSpec { docs: 400, vocab: 2000, topics: 10, doc_len: 100, alpha: 0.1, beta: 0.01, seed: 5, word_skew };
        corpus(&spec, &dir, "t").unwrap();
        let text = std::fs::read_to_string(dir.join("docword.t.txt")).unwrap();
        let mut n = vec![0u64; 2000];
        for line in text.lines().skip(3) {
            let f: Vec<usize> = line.split(' ').map(|x| x.parse().unwrap()).collect();
            n[f[1] - 1] += f[2] as u64;
        }
        std::fs::remove_dir_all(&dir).ok();
        n.sort_unstable_by(|a, b| b.cmp(a));
        n
    }

    /// With a word skew the head of the vocabulary carries text's share of the tokens (Zipf with
    /// exponent 1 over 2000 words: the top word ~12%, the top 20 ~44%, measured 9% and 48%);
    /// without, measured 2.4% and 24%.
    #[test]
    fn word_skew_makes_the_frequencies_zipfian() {
        let (flat, zipf) = (word_counts(0.0), word_counts(1.0));
        let share = |n: &[u64], k: usize| n[..k].iter().sum::<u64>() as f64 / n.iter().sum::<u64>() as f64;
        assert!(share(&zipf, 1) > 0.06 && share(&zipf, 20) > 0.3, "{} {}", share(&zipf, 1), share(&zipf, 20));
        // Without: each of the 10 topics is sparse (beta 0.01) but on words of its own.
        assert!(share(&flat, 1) < 0.03 && share(&flat, 20) < 0.3, "{} {}", share(&flat, 1), share(&flat, 20));
    }
}
