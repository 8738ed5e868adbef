//! Streamed responses (`text/event-stream`, http/sse.rs): per endpoint, the time to each stream's
//! first event, the gaps between one event and the next, and how the streams ended. The events
//! themselves are counted with the requests (`EndpointStats::events`), per second as well, so that the
//! time series carries events a second.
//!
//! Policy (docs/sse.md):
//! - an event is timed when the read that completes it returns (the clock read once per read that
//!   brought event-stream bytes); events completed by one read arrive together: the first's gap is
//!   the time since the last event, the others' 0;
//! - the time to first event counts from the request's start, as its latency does (the open model:
//!   from its intended send time), so that it is at most the request's latency;
//! - a stream is counted when its head is read; it is `completed` when its body ends as its framing
//!   says (the last chunk, the Content-Length, or the server's close of a close-delimited body) and
//!   `cut` when it ends otherwise (closed or reset mid-body, a timeout, an event past the bound), each
//!   cut also a failed request with its reason; streams still open when the run ends are neither.
//!
//! Kept per endpoint for the whole run (two HDR histograms, 3 significant digits, merged losslessly).

use super::timing::PhaseReport;
use super::{histogram_from_base64, Hist};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One endpoint's event streams.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StreamStats {
    /// µs from a request's start to its stream's first event.
    pub first_event: Hist,
    /// µs between consecutive events of one stream.
    pub gaps: Hist,
    /// Event streams begun (their heads read).
    pub streams: u64,
    pub completed: u64,
    pub cut: u64,
    /// Why streams were cut: the failure's message, and how many.
    pub cut_reasons: BTreeMap<String, u64>,
}

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

impl StreamStats {
    pub fn merge(&mut self, o: &StreamStats) {
        self.first_event.add(&o.first_event);
        self.gaps.add(&o.gaps);
        self.streams += o.streams;
        self.completed += o.completed;
        self.cut += o.cut;
        for (k, n) in &o.cut_reasons {
            *self.cut_reasons.entry(k.clone()).or_default() += n;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.streams == 0
    }

    /// A stream cut, for this reason (a failure's message).
    pub fn cut(&mut self, reason: String) {
        self.cut += 1;
        *self.cut_reasons.entry(reason).or_default() += 1;
    }

    /// The report of these streams, whose `events` were counted with the requests over `duration`;
    /// None when there were none.
    pub fn report(&self, events: u64, duration: Duration) -> Option<StreamReport> {
        if self.is_empty() {
            return None;
        }
        let secs = duration.as_secs_f64();
        Some(StreamReport {
            streams: self.streams,
            completed: self.completed,
            cut: self.cut,
            cut_reasons: self.cut_reasons.clone(),
            events,
            events_per_s: if secs > 0.0 { events as f64 / secs } else { 0.0 },
            first_event: PhaseReport::of(&self.first_event),
            gap: PhaseReport::of(&self.gaps),
        })
    }

    /// Back from a report (a result being merged).
    pub fn from_report(r: &StreamReport) -> Result<StreamStats, String> {
        let h = |p: &PhaseReport| {
            histogram_from_base64(&p.histogram).map(Hist::from).map_err(|m| format!("bad stream histogram: {m}"))
        };
        Ok(StreamStats {
            first_event: h(&r.first_event)?,
            gaps: h(&r.gap)?,
            streams: r.streams,
            completed: r.completed,
            cut: r.cut,
            cut_reasons: r.cut_reasons.clone(),
        })
    }
}

/// The clock of one stream being read: what its events are timed from.
#[derive(Clone, Copy, Debug)]
pub struct StreamClock {
    /// The request's start (its latency's origin).
    pub origin: Instant,
    /// The last event's time, once there was one.
    pub last: Option<Instant>,
}

impl StreamClock {
    pub fn new(origin: Instant) -> StreamClock {
        StreamClock { origin, last: None }
    }

    /// `n` events arrived at `at`: the first's time to first event or gap, the others' gaps of 0.
    #[inline]
    pub fn events(&mut self, stats: &mut StreamStats, n: u64, at: Instant) {
        if n == 0 {
            return;
        }
        match self.last {
            None => stats.first_event.record(micros(at.saturating_duration_since(self.origin))),
            Some(l) => stats.gaps.record(micros(at.saturating_duration_since(l))),
        }
        if n > 1 {
            stats.gaps.record_n(0, n - 1);
        }
        self.last = Some(at);
    }
}

/// Adds per-endpoint stream statistics (by endpoint id) into `into`.
pub fn merge_vec(into: &mut Vec<StreamStats>, from: &[StreamStats]) {
    if into.len() < from.len() {
        into.resize_with(from.len(), StreamStats::default);
    }
    for (a, b) in into.iter_mut().zip(from) {
        a.merge(b);
    }
}

/// An endpoint's event streams (`stream` in the result; absent where none was read).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StreamReport {
    /// Event streams begun (their response heads read).
    pub streams: u64,
    /// Ended as their framing says (last chunk, Content-Length, or a close-delimited body's close).
    pub completed: u64,
    /// Ended otherwise: each is also a failed request (`cut_reasons`: the failures' messages).
    pub cut: u64,
    pub cut_reasons: BTreeMap<String, u64>,
    /// Events dispatched (the standard's: a blank line after data), and per second of the run.
    pub events: u64,
    pub events_per_s: f64,
    /// From the request's start to its stream's first event.
    pub first_event: PhaseReport,
    /// Between consecutive events of one stream.
    pub gap: PhaseReport,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_streams_events_time_the_first_and_the_gaps() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let mut s = StreamStats { streams: 1, ..StreamStats::default() };
        let mut c = StreamClock::new(t0);
        c.events(&mut s, 1, ms(100));
        c.events(&mut s, 0, ms(150));
        c.events(&mut s, 3, ms(250)); // three in one read: a gap of 150 ms, then two of 0
        c.events(&mut s, 1, ms(300));
        s.completed += 1;
        let r = s.report(5, Duration::from_secs(2)).unwrap();
        assert_eq!((r.first_event.count, r.gap.count, r.events), (1, 4, 5));
        assert!((99_950..=100_050).contains(&r.first_event.max_us), "{:?}", r.first_event);
        assert_eq!(r.gap.min_us, 0);
        assert!((149_900..=150_100).contains(&r.gap.max_us), "{:?}", r.gap);
        assert_eq!(r.events_per_s, 2.5);
        // Lossless through the report, and merged.
        let mut back = StreamStats::from_report(&r).unwrap();
        assert_eq!(back, s);
        let mut other = StreamStats { streams: 1, ..StreamStats::default() };
        other.cut("server closed the connection mid-response".into());
        back.merge(&other);
        assert_eq!((back.streams, back.completed, back.cut), (2, 1, 1));
        assert_eq!(back.cut_reasons["server closed the connection mid-response"], 1);
        assert!(StreamStats::default().report(0, Duration::from_secs(1)).is_none());
    }
}
