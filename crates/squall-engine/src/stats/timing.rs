//! Where a request's time went, as k6 breaks it down: connecting (TCP), the TLS handshake, waiting
//! (from the request written to the first response byte read: the server's time to first byte plus
//! the network) and receiving (from the first response byte to the last).
//!
//! Policy: timed only where the engine sees each phase, the HTTP/1.1 exchanges of `bench` and of
//! scripted users. HTTP/2 multiplexes streams on one connection (a stream's first byte is a frame the
//! connection's reader decodes among others'), and MQTT has no request and response: neither is
//! timed, and their endpoints have no breakdown. Connect and TLS count the connections opened (bench:
//! each one; a script: those its answered requests opened, redirects included); waiting and
//! receiving count every response. A failed request has no waiting or receiving.
//!
//! Kept per endpoint for the whole run, not per second (one HDR histogram per phase, 3 significant
//! digits like the latency's, so percentiles are exact to 0.1% and results merge losslessly).
//!
//! Cost, on bench's hot path: one clock read after the request's write, one subtraction and one
//! histogram record (waiting) per response. The first byte's time is read only when a response takes
//! more than one read (the clock before the second read); a response read whole in one read has its
//! first byte when it ends, so its receiving is 0, counted (`whole`) rather than recorded. Connect and
//! TLS are recorded when a connection opens. Measured with callgrind on bench's worker threads against
//! nginx (12,000 requests, -c 4): about 300 instructions a request more than without the breakdown, 5%
//! of their 5,900. That is user space, a fifth of bench's CPU there (0.5-0.6 s user, 2.1 s system for
//! 200,000 requests): about 1% of its CPU, below what alternating timed runs resolve. A first
//! version carried the connect times and every phase through each response, in `Response` (whose
//! move out of the exchange then became a `memcpy` call), and recorded all four: about 600 more.

use super::percentile_label;
use super::{hist_to_base64, histogram_from_base64, Hist};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One request's phases; `None` where the phase did not happen (no connection opened, no TLS) or the
/// engine could not see it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    pub connect: Option<Duration>,
    pub tls: Option<Duration>,
    pub waiting: Option<Duration>,
    pub receiving: Option<Duration>,
}

impl Phases {
    /// Adds another exchange's phases (the hops of a redirect): each phase's time, summed.
    pub fn add(&mut self, o: &Phases) {
        let sum = |a: Option<Duration>, b: Option<Duration>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        self.connect = sum(self.connect, o.connect);
        self.tls = sum(self.tls, o.tls);
        self.waiting = sum(self.waiting, o.waiting);
        self.receiving = sum(self.receiving, o.receiving);
    }
}

/// The phases' histograms of one endpoint (µs); a phase never timed holds nothing (`Hist`).
#[derive(Clone, Debug, Default)]
pub struct TimingStats {
    pub connect: Hist,
    pub tls: Hist,
    pub waiting: Hist,
    /// The responses that took more than one read (those read whole: `whole`).
    pub receiving: Hist,
    /// Responses read whole in one read: their receiving is 0, recorded as such in the report.
    pub whole: u64,
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl TimingStats {
    /// A connection opened: its TCP connect, and its TLS handshake if any.
    pub fn opened(&mut self, tcp: Duration, tls: Option<Duration>) {
        self.connect.record(micros(tcp));
        if let Some(t) = tls {
            self.tls.record(micros(t));
        }
    }

    /// A response: its request written at `written`, its first bytes read at `first` (None: it was
    /// read whole in one read), its last at `end`.
    #[inline]
    pub fn exchange(&mut self, written: Instant, first: Option<Instant>, end: Instant) {
        match first {
            None => {
                self.waiting.record(micros(end.saturating_duration_since(written)));
                self.whole += 1;
            }
            Some(f) => {
                let f = f.min(end);
                self.waiting.record(micros(f.saturating_duration_since(written)));
                self.receiving.record(micros(end - f));
            }
        }
    }

    /// One request's phases (a script's, its redirects' added up).
    pub fn record(&mut self, p: &Phases) {
        if let Some(c) = p.connect {
            self.connect.record(micros(c));
        }
        if let Some(t) = p.tls {
            self.tls.record(micros(t));
        }
        if let Some(w) = p.waiting {
            self.waiting.record(micros(w));
        }
        match p.receiving.map(micros) {
            Some(0) => self.whole += 1,
            Some(r) => {
                self.receiving.record(r);
            }
            None => {}
        }
    }

    pub fn merge(&mut self, o: &TimingStats) {
        for (a, b) in self.phases_mut().into_iter().zip(o.phases()) {
            a.add(b);
        }
        self.whole += o.whole;
    }

    pub fn is_empty(&self) -> bool {
        self.whole == 0 && self.phases().iter().all(|h| h.is_empty())
    }

    fn phases(&self) -> [&Hist; 4] {
        [&self.connect, &self.tls, &self.waiting, &self.receiving]
    }

    fn phases_mut(&mut self) -> [&mut Hist; 4] {
        [&mut self.connect, &mut self.tls, &mut self.waiting, &mut self.receiving]
    }

    /// The report of these phases; None when nothing was timed (HTTP/2, MQTT).
    pub fn report(&self) -> Option<TimingsReport> {
        if self.is_empty() {
            return None;
        }
        let mut receiving = self.receiving.clone();
        receiving.record_n(0, self.whole);
        Some(TimingsReport {
            connect: PhaseReport::of(&self.connect),
            tls: PhaseReport::of(&self.tls),
            waiting: PhaseReport::of(&self.waiting),
            receiving: PhaseReport::of(&receiving),
        })
    }

    /// Back from a report (a result being merged): its receiving histogram has the zeros in it.
    pub fn from_report(r: &TimingsReport) -> Result<TimingStats, String> {
        let h = |p: &PhaseReport| {
            histogram_from_base64(&p.histogram).map(Hist::from).map_err(|m| format!("bad timing histogram: {m}"))
        };
        Ok(TimingStats {
            connect: h(&r.connect)?,
            tls: h(&r.tls)?,
            waiting: h(&r.waiting)?,
            receiving: h(&r.receiving)?,
            whole: 0,
        })
    }
}

/// Adds per-endpoint timings (by endpoint id) into `into`.
pub fn merge_vec(into: &mut Vec<TimingStats>, from: &[TimingStats]) {
    if into.len() < from.len() {
        into.resize_with(from.len(), TimingStats::default);
    }
    for (a, b) in into.iter_mut().zip(from) {
        a.merge(b);
    }
}

/// The percentiles a phase reports (a subset of the latency's: the breakdown is read beside them).
pub const PHASE_PERCENTILES: [f64; 5] = [50.0, 90.0, 95.0, 99.0, 100.0];

/// One phase over the run: how many requests had it, their summed time and its distribution.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PhaseReport {
    /// Responses that had this phase (connect and TLS: the connections opened).
    pub count: u64,
    /// The phase's time summed over them (µs; from the histogram, exact to its 0.1%).
    pub total_us: f64,
    pub mean_us: f64,
    pub min_us: u64,
    pub max_us: u64,
    /// Keys "50", "90", "95", "99", "100".
    pub percentiles_us: BTreeMap<String, u64>,
    /// The HDR histogram (V2, deflate, base64), for lossless merges.
    pub histogram: String,
}

impl PhaseReport {
    pub(crate) fn of(h: &Hist) -> PhaseReport {
        let empty = h.is_empty();
        let mean = if empty { 0.0 } else { h.mean() };
        PhaseReport {
            count: h.len(),
            total_us: mean * h.len() as f64,
            mean_us: mean,
            min_us: if empty { 0 } else { h.min() },
            max_us: if empty { 0 } else { h.max() },
            percentiles_us: if empty {
                BTreeMap::new()
            } else {
                PHASE_PERCENTILES.iter().map(|&p| (percentile_label(p), h.value_at_percentile(p))).collect()
            },
            histogram: hist_to_base64(h),
        }
    }
}

/// An endpoint's breakdown (`timings` in the result).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TimingsReport {
    pub connect: PhaseReport,
    pub tls: PhaseReport,
    pub waiting: PhaseReport,
    pub receiving: PhaseReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Option<Duration> {
        Some(Duration::from_millis(n))
    }

    #[test]
    fn phases_record_count_and_merge_losslessly() {
        let (mut a, mut b, mut both) = (TimingStats::default(), TimingStats::default(), TimingStats::default());
        for i in 0..100u64 {
            // Every tenth request opens a connection; half of those over TLS.
            let p = Phases {
                connect: (i % 10 == 0).then(|| Duration::from_micros(100 + i)),
                tls: (i % 20 == 0).then(|| Duration::from_micros(900 + i)),
                waiting: ms(20 + i % 3),
                receiving: Some(Duration::from_micros(i)),
            };
            if i % 2 == 0 { &mut a } else { &mut b }.record(&p);
            both.record(&p);
        }
        a.merge(&b);
        let (r, whole) = (a.report().unwrap(), both.report().unwrap());
        assert_eq!((r.connect.count, r.tls.count, r.waiting.count, r.receiving.count), (10, 5, 100, 100));
        assert_eq!(r.waiting.percentiles_us, whole.waiting.percentiles_us);
        assert_eq!(r.receiving.min_us, 0, "0 µs is recorded, not lifted to 1");
        let back = TimingStats::from_report(&r).unwrap();
        assert_eq!(back.waiting, both.waiting);
        assert_eq!(back.connect, both.connect);
        assert_eq!((back.receiving.len(), both.whole), (100, 1), "the one 0 µs receiving: counted, then recorded");
        assert_eq!(TimingStats::from_report(&back.report().unwrap()).unwrap().receiving, back.receiving);
        assert!((r.waiting.mean_us - 21_000.0).abs() < 30.0, "{}", r.waiting.mean_us);
        assert!(TimingStats::default().report().is_none());
    }

    #[test]
    fn an_exchange_read_whole_has_no_receiving() {
        let mut t = TimingStats::default();
        let w = Instant::now();
        t.exchange(w, None, w + Duration::from_millis(20));
        t.exchange(w, Some(w + Duration::from_millis(20)), w + Duration::from_millis(50));
        let r = t.report().unwrap();
        assert_eq!((r.waiting.count, r.receiving.count, r.receiving.min_us), (2, 2, 0));
        assert!((19_980..=20_020).contains(&r.waiting.percentiles_us["100"]), "{:?}", r.waiting);
        assert!((29_970..=30_030).contains(&r.receiving.max_us), "{:?}", r.receiving);
        t.opened(Duration::from_micros(150), Some(Duration::from_micros(900)));
        let r = t.report().unwrap();
        assert_eq!((r.connect.count, r.tls.count), (1, 1));
    }

    #[test]
    fn the_hops_of_a_redirect_add_up() {
        let mut p = Phases { connect: ms(1), tls: None, waiting: ms(10), receiving: ms(0) };
        p.add(&Phases { connect: None, tls: ms(2), waiting: ms(5), receiving: ms(3) });
        assert_eq!(p, Phases { connect: ms(1), tls: ms(2), waiting: ms(15), receiving: ms(3) });
    }
}
