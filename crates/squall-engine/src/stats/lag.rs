//! Send lag of paced load: how long after its intended time each paced request or message went out.
//! One bookkeeping for every paced load (bench's open model, MQTT's per-client rate, a locustfile's
//! `--rate`): each thread's recorder notes it (`Recorder::note_lag`) without atomics, per second for
//! the time series and the live stream (`SecondSchedule`) and in total for the one report.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Sent more than this after its intended time, a paced send counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(10);

/// One thread's (or one process's) send lag.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Lag {
    pub sent: u64,
    pub late: u64,
    pub sum_us: u64,
    pub max_us: u64,
}

impl Lag {
    /// A paced send went out `lag` after its intended time.
    #[inline]
    pub fn note(&mut self, lag: Duration) {
        let us = lag.as_micros() as u64;
        self.sent += 1;
        self.sum_us += us;
        self.max_us = self.max_us.max(us);
        self.late += (lag > LATE_AFTER) as u64;
    }

    pub fn add(&mut self, o: &Lag) {
        self.sent += o.sent;
        self.late += o.late;
        self.sum_us += o.sum_us;
        self.max_us = self.max_us.max(o.max_us);
    }

    pub fn mean_us(&self) -> f64 {
        if self.sent == 0 {
            0.0
        } else {
            self.sum_us as f64 / self.sent as f64
        }
    }
}

/// One second of a paced load in the time series (`schedule` in each second): the sends that went out
/// in it and how late.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SecondSchedule {
    pub sent: u64,
    pub late: u64,
    pub mean_lag_us: f64,
    pub max_lag_us: u64,
    /// So that seconds of several processes merge exactly.
    pub lag_sum_us: u64,
}

impl SecondSchedule {
    /// None for a second without paced sends.
    pub fn of(lag: &Lag) -> Option<SecondSchedule> {
        (lag.sent > 0).then(|| SecondSchedule {
            sent: lag.sent,
            late: lag.late,
            mean_lag_us: lag.mean_us(),
            max_lag_us: lag.max_us,
            lag_sum_us: lag.sum_us,
        })
    }

    pub fn lag(&self) -> Lag {
        Lag { sent: self.sent, late: self.late, sum_us: self.lag_sum_us, max_us: self.max_lag_us }
    }
}

/// How a paced run kept its schedule: `schedule` in the result document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScheduleReport {
    /// Intended sends per second in total.
    pub rate: f64,
    /// `constant` or `poisson`.
    pub arrival: String,
    /// Sends whose intended time came up.
    pub intended: u64,
    pub sent: u64,
    /// Sent more than `late_after_ms` after their intended time: too few connections, a full
    /// in-flight window, or a busy generator.
    pub late: u64,
    pub late_after_ms: u64,
    pub mean_lag_us: f64,
    pub max_lag_us: u64,
    /// Intended but never sent: the backlog did not drain before the run ended (bench), or the
    /// client had no connection or the run ended first (MQTT's `unsent`).
    pub dropped: u64,
    /// The sum of every send's lag, so that reports of several processes merge exactly.
    #[serde(default)]
    pub lag_sum_us: u64,
}

impl ScheduleReport {
    pub fn new(rate: f64, arrival: &str, intended: u64, lag: &Lag, dropped: u64) -> Self {
        ScheduleReport {
            rate,
            arrival: arrival.to_string(),
            intended,
            sent: lag.sent,
            late: lag.late,
            late_after_ms: LATE_AFTER.as_millis() as u64,
            mean_lag_us: lag.mean_us(),
            max_lag_us: lag.max_us,
            dropped,
            lag_sum_us: lag.sum_us,
        }
    }

    fn lag(&self) -> Lag {
        Lag { sent: self.sent, late: self.late, sum_us: self.lag_sum_us, max_us: self.max_lag_us }
    }

    /// The report of several processes that shared one schedule: rates and counts add up.
    pub fn merge(&mut self, o: &ScheduleReport) {
        let mut lag = self.lag();
        lag.add(&o.lag());
        *self = ScheduleReport {
            rate: self.rate + o.rate,
            arrival: std::mem::take(&mut self.arrival),
            intended: self.intended + o.intended,
            dropped: self.dropped + o.dropped,
            ..ScheduleReport::new(0.0, "", 0, &lag, 0)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lag_counts_late_sends_and_merges_exactly() {
        let (mut a, mut b) = (Lag::default(), Lag::default());
        a.note(Duration::from_millis(1));
        a.note(Duration::from_millis(11));
        b.note(Duration::from_millis(30));
        let mut ra = ScheduleReport::new(100.0, "constant", 3, &a, 1);
        let rb = ScheduleReport::new(50.0, "constant", 1, &b, 0);
        ra.merge(&rb);
        assert_eq!((ra.sent, ra.late, ra.max_lag_us, ra.intended, ra.dropped), (3, 2, 30_000, 4, 1));
        assert_eq!(ra.rate, 150.0);
        assert!((ra.mean_lag_us - 14_000.0).abs() < 1e-9);
        assert_eq!(ra.arrival, "constant");
    }
}
