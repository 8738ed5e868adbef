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
//! A language model's streamed answer (http/tokens.rs: OpenAI's, Anthropic's formats) has its tokens
//! timed too, with the definitions of vLLM's benchmark_serving:
//! - time to first token (TTFT): from the request's start to the first event that carried output (a
//!   role-only first chunk is not one);
//! - inter-token latency (ITL): between one output event and the next of a stream, timed as events
//!   are (several in one read: the first's gap, then gaps of 0);
//! - time per output token (TPOT), one per stream of at least two tokens: from its first token to
//!   its end, over its tokens but the first;
//! - tokens: the server's count (`usage`) where the stream gave one, else its output events (a token
//!   each, as vLLM, TGI and llama.cpp send them). Output events are counted as they arrive (in the
//!   second they arrive); a stream's usage, read at its end, adds what it says beyond its events
//!   there, so that the seconds add up to the run's total. A usage below the events (a server that
//!   miscounts) is not subtracted: such a stream counts its events.
//!
//! Kept per endpoint for the whole run (HDR histograms, 3 significant digits, merged losslessly).

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
    /// A language model's output, when streams carried it.
    pub tokens: TokenStats,
}

/// What one read of a stream brought of a language model's output (http/tokens.rs reads it): events
/// that carried output, and the count the server gave, if one of them gave it (the last one read).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Events carrying generated output (for most servers, a token each).
    pub chunks: u64,
    /// The server's count of the tokens generated so far in the stream (`usage`), as last reported.
    pub usage: Option<u64>,
}

/// One endpoint's language-model tokens (the module's definitions).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TokenStats {
    /// µs from a request's start to its first output event.
    pub ttft: Hist,
    /// µs between consecutive output events of one stream.
    pub itl: Hist,
    /// µs a token after the first, one a stream of at least two.
    pub tpot: Hist,
    /// Streams that carried output.
    pub streams: u64,
    /// Of those, ended with the server's count of their tokens.
    pub counted: u64,
    pub tokens: u64,
}

impl TokenStats {
    pub fn merge(&mut self, o: &TokenStats) {
        self.ttft.add(&o.ttft);
        self.itl.add(&o.itl);
        self.tpot.add(&o.tpot);
        self.streams += o.streams;
        self.counted += o.counted;
        self.tokens += o.tokens;
    }

    fn report(&self, secs: f64) -> Option<TokenReport> {
        (self.streams > 0 || self.tokens > 0).then(|| TokenReport {
            streams: self.streams,
            tokens: self.tokens,
            tokens_per_s: if secs > 0.0 { self.tokens as f64 / secs } else { 0.0 },
            counted_by_server: self.counted,
            ttft: PhaseReport::of(&self.ttft),
            itl: PhaseReport::of(&self.itl),
            tpot: PhaseReport::of(&self.tpot),
        })
    }
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
        self.tokens.merge(&o.tokens);
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
            tokens: self.tokens.report(secs),
        })
    }

    /// Back from a report (a result being merged).
    pub fn from_report(r: &StreamReport) -> Result<StreamStats, String> {
        let h = |p: &PhaseReport| {
            histogram_from_base64(&p.histogram).map(Hist::from).map_err(|m| format!("bad stream histogram: {m}"))
        };
        let tokens = match &r.tokens {
            None => TokenStats::default(),
            Some(t) => TokenStats {
                ttft: h(&t.ttft)?,
                itl: h(&t.itl)?,
                tpot: h(&t.tpot)?,
                streams: t.streams,
                counted: t.counted_by_server,
                tokens: t.tokens,
            },
        };
        Ok(StreamStats {
            first_event: h(&r.first_event)?,
            gaps: h(&r.gap)?,
            streams: r.streams,
            completed: r.completed,
            cut: r.cut,
            cut_reasons: r.cut_reasons.clone(),
            tokens,
        })
    }
}

/// The clock of one stream being read: what its events are timed from.
#[derive(Clone, Debug)]
pub struct StreamClock {
    /// The request's start (its latency's origin).
    pub origin: Instant,
    /// The last event's time, once there was one.
    pub last: Option<Instant>,
    /// A model's output, once the stream carried some (boxed: every scripted request's future holds a
    /// clock, and a native user's task must stay small, `script::native`'s test).
    tokens: Option<Box<TokenClock>>,
}

/// The tokens of one stream: its first and last output event's time, its output events so far, and
/// the server's count as last read.
#[derive(Clone, Copy, Debug, Default)]
struct TokenClock {
    first: Option<Instant>,
    last: Option<Instant>,
    chunks: u64,
    usage: Option<u64>,
}

impl StreamClock {
    pub fn new(origin: Instant) -> StreamClock {
        StreamClock { origin, last: None, tokens: None }
    }

    /// What a read brought of a language model's output, at `at`: its first token's time or the gap
    /// since the last token, the others' gaps of 0. Returns the tokens to count now (its output
    /// events; a usage is counted at the stream's end).
    #[inline]
    pub fn tokens(&mut self, stats: &mut TokenStats, t: Tokens, at: Instant) -> u64 {
        if t == Tokens::default() {
            return 0;
        }
        let c = self.tokens.get_or_insert_default();
        if t.usage.is_some() {
            c.usage = t.usage;
        }
        if t.chunks == 0 {
            return 0;
        }
        match c.last {
            None => {
                stats.ttft.record(micros(at.saturating_duration_since(self.origin)));
                stats.streams += 1;
                c.first = Some(at);
            }
            Some(l) => stats.itl.record(micros(at.saturating_duration_since(l))),
        }
        if t.chunks > 1 {
            stats.itl.record_n(0, t.chunks - 1);
        }
        c.last = Some(at);
        c.chunks += t.chunks;
        stats.tokens += t.chunks;
        t.chunks
    }

    /// The stream ended at `at` (completed or cut): its time per output token, and the tokens its
    /// usage adds beyond its output events (counted now; returned for the seconds).
    pub fn ended(&mut self, stats: &mut TokenStats, at: Instant) -> u64 {
        let Some(c) = self.tokens.take() else { return 0 };
        let more = match c.usage {
            Some(u) => {
                stats.counted += 1;
                if c.first.is_none() && u > 0 {
                    stats.streams += 1; // tokens counted, none seen as output (e.g. tool-less formats)
                }
                u.saturating_sub(c.chunks)
            }
            None => 0,
        };
        let total = c.chunks + more;
        if let (Some(first), true) = (c.first, total > 1) {
            stats.tpot.record(micros(at.saturating_duration_since(first)) / (total - 1));
        }
        stats.tokens += more;
        more
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
    /// A language model's output tokens, when its streams carried them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<TokenReport>,
}

/// An endpoint's language-model tokens (`stream.tokens`; the module's definitions).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenReport {
    /// Streams that carried output.
    pub streams: u64,
    /// Output tokens, and per second of the run.
    pub tokens: u64,
    pub tokens_per_s: f64,
    /// Streams whose tokens are the server's count (`usage`), not their output events.
    pub counted_by_server: u64,
    /// Time to first token.
    pub ttft: PhaseReport,
    /// Inter-token latency.
    pub itl: PhaseReport,
    /// Time per output token.
    pub tpot: PhaseReport,
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

    #[test]
    fn a_models_tokens_time_the_first_the_gaps_and_each_token() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        let tok = |chunks, usage| Tokens { chunks, usage };
        let mut s = StreamStats { streams: 1, ..StreamStats::default() };
        let mut c = StreamClock::new(t0);
        // The role-only chunk at 40 ms carries no token; tokens at 100, then 120 (two in one read), 150.
        assert_eq!(c.tokens(&mut s.tokens, tok(0, None), ms(40)), 0);
        assert_eq!(c.tokens(&mut s.tokens, tok(1, None), ms(100)), 1);
        assert_eq!(c.tokens(&mut s.tokens, tok(2, None), ms(120)), 2);
        assert_eq!(c.tokens(&mut s.tokens, tok(1, Some(10)), ms(150)), 1);
        // The usage says 10 tokens: 6 more than the 4 output events, counted at the end (250 ms), and
        // each token after the first took (250 - 100) / 9 ms.
        assert_eq!(c.ended(&mut s.tokens, ms(250)), 6);
        let t = &s.tokens;
        assert_eq!((t.streams, t.counted, t.tokens), (1, 1, 10));
        assert_eq!((t.ttft.len(), t.itl.len(), t.tpot.len()), (1, 3, 1));
        let r = s.report(0, Duration::from_secs(2)).unwrap().tokens.unwrap();
        assert!((99_950..=100_050).contains(&r.ttft.max_us), "{:?}", r.ttft);
        assert_eq!(r.itl.min_us, 0);
        assert!((29_950..=30_050).contains(&r.itl.max_us), "{:?}", r.itl);
        assert!((16_650..=16_680).contains(&r.tpot.max_us), "{:?}", r.tpot);
        assert_eq!((r.tokens, r.tokens_per_s, r.counted_by_server), (10, 5.0, 1));
        assert_eq!(StreamStats::from_report(&s.report(0, Duration::from_secs(2)).unwrap()).unwrap(), s);
        // Without a usage, a stream's tokens are its output events; one token has no time per token.
        let mut c = StreamClock::new(t0);
        c.tokens(&mut s.tokens, tok(1, None), ms(80));
        assert_eq!(c.ended(&mut s.tokens, ms(90)), 0);
        assert_eq!((s.tokens.streams, s.tokens.counted, s.tokens.tokens, s.tokens.tpot.len()), (2, 1, 11, 1));
        // Streams without output have no token report.
        assert!(StreamStats { streams: 1, ..StreamStats::default() }
            .report(1, Duration::from_secs(1))
            .unwrap()
            .tokens
            .is_none());
    }
}
