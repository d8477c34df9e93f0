//! The one hash function of the runtime, used wherever rows are spread (server placement,
//! process-cache shards) or seeded (table initialisation): cheap, well mixing, and stable across
//! builds and platforms, so every process computes the same placement.

/// The random generator behind every seed the README promises (fixed-seed data, LDA's draws,
/// exact resumes): a named algorithm, xoshiro256++ seeded through splitmix64, whose output is
/// fixed by its definition. rand's `SmallRng` promises stability neither across rand versions
/// nor across platforms.
pub type SeededRng = rand_xoshiro::Xoshiro256PlusPlus;

/// A cheap, well-mixing 64-bit hash (splitmix64 finaliser).
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^ (x >> 31)
}
