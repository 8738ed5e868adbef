//! The open model's schedule: intended send times at a constant or Poisson rate, optionally ramped
//! from zero, and the feeder that issues them when they fall due (on the engine's precise clock).

use super::clock;
use rand::rngs::SmallRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp1};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Arrival {
    /// Evenly spaced send times.
    #[default]
    Constant,
    /// Exponentially distributed gaps (a Poisson process) with the same mean rate.
    Poisson,
}

/// Intended send offsets from the start of the run.
///
/// Both arrival kinds are one construction: the k-th request is due when the cumulative intended
/// count Λ(t) = ∫rate reaches Λ_k, where Λ_k = k (constant) or a sum of k exponential draws (Poisson).
pub struct Schedule {
    rate: f64,
    ramp: f64,
    arrival: Arrival,
    total: Option<u64>,
    duration: Option<f64>,
    issued: u64,
    lambda: f64,
    rng: SmallRng,
}

impl Schedule {
    pub fn new(rate: f64, arrival: Arrival, ramp: Duration, total: Option<u64>, duration: Option<Duration>) -> Self {
        Schedule {
            rate,
            ramp: ramp.as_secs_f64(),
            arrival,
            total,
            duration: duration.map(|d| d.as_secs_f64()),
            issued: 0,
            lambda: 0.0,
            rng: SmallRng::from_os_rng(),
        }
    }

    /// Time at which the cumulative intended count reaches `lambda`.
    fn time_of(&self, lambda: f64) -> f64 {
        let ramp_count = self.rate * self.ramp / 2.0; // requests due during a linear ramp
        if self.ramp > 0.0 && lambda < ramp_count {
            (2.0 * self.ramp * lambda / self.rate).sqrt()
        } else {
            self.ramp + (lambda - ramp_count) / self.rate
        }
    }
}

impl Iterator for Schedule {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.total.is_some_and(|n| self.issued >= n) {
            return None;
        }
        let lambda = match self.arrival {
            Arrival::Constant => self.issued as f64,
            Arrival::Poisson => {
                let draw: f64 = Exp1.sample(&mut self.rng);
                self.lambda += draw;
                self.lambda
            }
        };
        let t = self.time_of(lambda);
        if self.duration.is_some_and(|d| t >= d) {
            return None;
        }
        self.issued += 1;
        Some(Duration::from_secs_f64(t))
    }
}

/// Issues each intended send time on `tx` when it falls due. Returns when the schedule ends or `stop`.
pub fn feed(
    schedule: Schedule,
    start: Instant,
    tx: async_channel::Sender<Instant>,
    stop: &AtomicBool,
    issued: &AtomicU64,
) {
    for offset in schedule {
        let due = start + offset;
        loop {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let now = Instant::now();
            if now >= due {
                break;
            }
            clock::sleep_until(due.min(now + Duration::from_millis(50))); // checks `stop` at least every 50 ms
        }
        if tx.send_blocking(due).is_err() {
            return;
        }
        issued.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_rate_for_a_duration_is_exact() {
        let s = Schedule::new(2000.0, Arrival::Constant, Duration::ZERO, None, Some(Duration::from_secs(10)));
        let v: Vec<_> = s.collect();
        assert_eq!(v.len(), 20_000);
        assert_eq!(v[1], Duration::from_micros(500));
    }

    #[test]
    fn ramp_issues_half_the_requests_of_full_rate() {
        let s = Schedule::new(1000.0, Arrival::Constant, Duration::from_secs(10), None, Some(Duration::from_secs(10)));
        let n = s.count() as i64;
        assert!((n - 5000).abs() <= 1, "{n}");
        let mut s = Schedule::new(1000.0, Arrival::Constant, Duration::from_secs(2), Some(3000), None);
        let last = s.by_ref().last().unwrap().as_secs_f64();
        assert!((last - 3.999).abs() < 0.01, "{last}"); // 1000 during the ramp, then 2000 at 1000/s
    }

    #[test]
    fn poisson_has_the_mean_rate() {
        let s = Schedule::new(1000.0, Arrival::Poisson, Duration::ZERO, None, Some(Duration::from_secs(100)));
        let n = s.count() as f64;
        assert!((n - 100_000.0).abs() < 1500.0, "{n}"); // ±4.7 sigma
    }
}
