//! WAN emulation for geo-distributed jobs (Gaia §5.1 emulated the EC2 WAN with Linux `tc`; we do
//! it in the transport so every test and benchmark runs on one machine without privileges).
//! Traffic from one process to a process in another data center passes a [`Shaper`]: a rate
//! limiter (a token bucket that holds at most [`BURST`] bytes) followed by a fixed delay, per
//! direction. As in the paper's emulation, which shaped each machine pair to the bandwidth
//! iperf3 measured between two instances of the regions, the rate is per pair of processes: two
//! processes in Virginia talking to two in California use four shaped links.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Bytes the bucket holds: a burst this large leaves at once after an idle period, as a real
/// link's queue would let it (tc's `tbf` needs a burst of at least one MTU as well).
pub const BURST: usize = 64 * 1024;

/// Bytes are released in pieces of at most this size, each at its own time, so a large frame
/// trickles out at the link's rate instead of arriving all at once when its last byte would.
pub const PIECE: usize = 16 * 1024;

/// Bandwidth and one-way delay of an emulated link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkShape {
    /// Bytes per second; `f64::INFINITY` for delay only.
    pub bytes_per_s: f64,
    pub delay: Duration,
}

impl LinkShape {
    /// A link of `mbps` megabits per second (10^6 bits) and `delay_ms` milliseconds one way.
    pub fn new(mbps: Option<f64>, delay_ms: f64) -> Self {
        let bytes_per_s = mbps.map_or(f64::INFINITY, |m| m * 1e6 / 8.0);
        LinkShape { bytes_per_s, delay: Duration::from_secs_f64(delay_ms.max(0.0) / 1e3) }
    }
}

/// One direction of an emulated link: decides when each piece of the byte stream arrives.
pub struct Shaper {
    shape: LinkShape,
    /// When the bucket was last empty (or would have been): sending `n` bytes moves it by
    /// `n / rate`; it never lags `now - BURST / rate` (a full bucket).
    drained: Mutex<Option<Instant>>,
}

impl Shaper {
    pub fn new(shape: LinkShape) -> Self {
        Shaper { shape, drained: Mutex::new(None) }
    }

    /// When a writer should hand over more bytes: once the bucket is down to half a burst of
    /// bytes still to leave, so the link never idles while data waits, yet data is not
    /// committed to the line far ahead of time (a control message queued meanwhile can still
    /// go first). `None`: no rate limit, always.
    pub fn ready_at(&self) -> Option<Instant> {
        let rate = self.shape.bytes_per_s;
        let drained = (*self.drained.lock().unwrap_or_else(|e| e.into_inner()))?;
        rate.is_finite()
            .then(|| drained.checked_sub(Duration::from_secs_f64(BURST as f64 / 2.0 / rate)).unwrap_or(drained))
    }

    /// Sends `bytes` at `now`: the arrival time of each piece (sizes `<= PIECE`, in order).
    /// Arrival times never decrease, so a writer that waits for each in turn keeps the order.
    pub fn schedule(&self, bytes: usize, now: Instant) -> Vec<(usize, Instant)> {
        let rate = self.shape.bytes_per_s;
        let mut drained = self.drained.lock().unwrap_or_else(|e| e.into_inner());
        let full = if rate.is_finite() { Duration::from_secs_f64(BURST as f64 / rate) } else { Duration::ZERO };
        // A bucket idle long enough is full: its drain point is at most one burst behind now.
        let mut t = match *drained {
            Some(d) if d + full > now => d,
            _ => now.checked_sub(full).unwrap_or(now),
        };
        let mut out = Vec::with_capacity(bytes.div_ceil(PIECE).max(1));
        let mut left = bytes;
        while left > 0 || out.is_empty() {
            let n = left.min(PIECE);
            if rate.is_finite() {
                t += Duration::from_secs_f64(n as f64 / rate);
            }
            // A piece leaves once the bucket holds its bytes, never before it was handed over.
            out.push((n, t.max(now) + self.shape.delay));
            left -= n;
        }
        *drained = Some(t);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_link_carries_its_rate_after_one_burst_and_adds_the_delay() {
        let shape = LinkShape::new(Some(8.0), 20.0); // 1 MB/s
        assert_eq!(shape.bytes_per_s, 1e6);
        let s = Shaper::new(shape);
        let t0 = Instant::now();
        let mut last = t0;
        let mut sent = 0usize;
        for i in 0..50 {
            // 100 KB every 10 ms: ten times what the link carries.
            for (n, at) in s.schedule(100_000, t0 + Duration::from_millis(10 * i)) {
                assert!(at >= last, "arrivals are in order");
                assert!(n <= PIECE && n > 0);
                last = at;
                sent += n;
            }
        }
        assert_eq!(sent, 5_000_000);
        // 5 MB at 1 MB/s, less the burst that left at once, plus the delay.
        let want = (5_000_000 - BURST) as f64 / 1e6 + 0.020;
        let got = (last - t0).as_secs_f64();
        assert!((got - want).abs() < 1e-3, "last byte at {got} s, want {want}");
    }

    #[test]
    fn an_idle_link_lets_a_burst_through_after_the_delay_only() {
        let s = Shaper::new(LinkShape::new(Some(8.0), 5.0));
        let t0 = Instant::now();
        let first = s.schedule(1000, t0);
        assert_eq!(first, vec![(1000, t0 + Duration::from_millis(5))]);
        // Idle for a second: the bucket refilled, so a burst goes at once again.
        let t1 = t0 + Duration::from_secs(1);
        let again = s.schedule(BURST, t1);
        assert!(again.iter().all(|(_, at)| *at == t1 + Duration::from_millis(5)), "{again:?}");
        // The bucket is now empty: the next piece waits for its bytes at the rate.
        let next = s.schedule(1000, t1);
        assert_eq!(next[0].1, t1 + Duration::from_millis(6));
        // More may be handed over once half a burst is left to leave (BURST/2 bytes = 32.768 ms).
        let ready = s.ready_at().expect("rate-limited");
        assert_eq!(ready, t1 + Duration::from_millis(1) - Duration::from_secs_f64(BURST as f64 / 2.0 / 1e6));
    }

    #[test]
    fn delay_only_links_keep_every_piece_at_the_delay() {
        let s = Shaper::new(LinkShape::new(None, 30.0));
        let t0 = Instant::now();
        let p = s.schedule(3 * PIECE + 1, t0);
        assert_eq!(p.len(), 4);
        assert!(p.iter().all(|(_, at)| *at == t0 + Duration::from_millis(30)));
        assert_eq!(s.schedule(0, t0), vec![(0, t0 + Duration::from_millis(30))]);
    }
}
