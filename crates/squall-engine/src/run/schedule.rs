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

/// Arrivals at a rate that may change while they run (`squall -f --rate`, or a shape that returns a
/// rate): the same construction as `Schedule`, with Λ(t) integrated piecewise. At a change of rate at
/// time t_c, Λ_c = Λ(t_c) is kept and the k-th arrival is due at t_c + (Λ_k - Λ_c) / rate; a rate of
/// zero pauses the arrivals.
pub struct Arrivals {
    rate: f64,
    arrival: Arrival,
    /// Time and cumulative count at the last change of rate.
    changed_at: f64,
    lambda_at_change: f64,
    /// Λ of the next arrival.
    next_lambda: f64,
    issued: u64,
    /// Nothing is due at or after this (seconds since the start).
    until: f64,
    rng: SmallRng,
}

impl Arrivals {
    pub fn new(arrival: Arrival) -> Self {
        let mut a = Arrivals {
            rate: 0.0,
            arrival,
            changed_at: 0.0,
            lambda_at_change: 0.0,
            next_lambda: 0.0,
            issued: 0,
            until: f64::INFINITY,
            rng: SmallRng::from_os_rng(),
        };
        a.next_lambda = a.draw(0.0);
        a
    }

    fn draw(&mut self, after: f64) -> f64 {
        match self.arrival {
            Arrival::Constant => self.issued as f64,
            Arrival::Poisson => {
                let gap: f64 = Exp1.sample(&mut self.rng);
                after + gap
            }
        }
    }

    /// From `at` (seconds since the start) on, arrivals come at `rate` a second.
    pub fn set_rate(&mut self, at: f64, rate: f64) {
        let at = at.max(self.changed_at);
        self.lambda_at_change += self.rate * (at - self.changed_at);
        self.changed_at = at;
        self.rate = rate.max(0.0);
    }

    pub fn rate(&self) -> f64 {
        self.rate
    }

    /// No arrival is due at or after `at` (seconds since the start): the end of a run's duration.
    pub fn end_at(&mut self, at: f64) {
        self.until = at;
    }

    /// When the next arrival is due (seconds since the start), or None while the rate is zero.
    pub fn next_due(&self) -> Option<f64> {
        let due = self.changed_at + (self.next_lambda - self.lambda_at_change).max(0.0) / self.rate;
        (self.rate > 0.0 && due < self.until).then_some(due)
    }

    /// Takes the arrivals due at or before `now`, in order.
    pub fn take_due(&mut self, now: f64, out: &mut Vec<f64>) {
        while let Some(due) = self.next_due() {
            if due > now {
                break;
            }
            out.push(due);
            self.issued += 1;
            self.next_lambda = self.draw(self.next_lambda);
        }
    }

    pub fn issued(&self) -> u64 {
        self.issued
    }

    pub fn is_poisson(&self) -> bool {
        self.arrival == Arrival::Poisson
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
    fn arrivals_follow_a_changing_rate_exactly() {
        let mut a = Arrivals::new(Arrival::Constant);
        let mut due = Vec::new();
        a.take_due(5.0, &mut due);
        assert!(due.is_empty(), "no rate, no arrivals");
        a.set_rate(0.0, 100.0);
        a.take_due(1.0, &mut due); // 0, 0.01, ..., 1.0
        assert_eq!(due.len(), 101);
        a.set_rate(1.0, 200.0); // from t = 1 on, twice as fast
        due.clear();
        a.take_due(2.0, &mut due);
        assert_eq!(due.len(), 200);
        assert!((due[0] - 1.005).abs() < 1e-9 && (due[199] - 2.0).abs() < 1e-9, "{} {}", due[0], due[199]);
        a.set_rate(2.0, 0.0);
        due.clear();
        a.take_due(100.0, &mut due);
        assert!(due.is_empty() && a.next_due().is_none());
        assert_eq!(a.issued(), 301);
        let mut d = Arrivals::new(Arrival::Constant);
        d.set_rate(0.5, 400.0);
        d.end_at(5.5); // 5 s at 400 a second from t = 0.5: exactly 2,000
        due.clear();
        d.take_due(60.0, &mut due);
        assert_eq!(due.len(), 2000);
        let mut p = Arrivals::new(Arrival::Poisson);
        p.set_rate(0.0, 1000.0);
        due.clear();
        p.take_due(100.0, &mut due);
        assert!((due.len() as f64 - 100_000.0).abs() < 1500.0, "{}", due.len());
        // ±4.7 sigma
    }

    #[test]
    fn poisson_has_the_mean_rate() {
        let s = Schedule::new(1000.0, Arrival::Poisson, Duration::ZERO, None, Some(Duration::from_secs(100)));
        let n = s.count() as f64;
        assert!((n - 100_000.0).abs() < 1500.0, "{n}"); // ±4.7 sigma
    }
}
