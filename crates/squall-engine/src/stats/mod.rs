//! Statistics: one HDR histogram (microseconds, 3 significant digits) per endpoint and per second,
//! status codes, failures by kind, bytes. Everything merges losslessly, so threads, processes and
//! machines combine into the same numbers one recorder would have produced.

use hdrhistogram::serialization::{Deserializer, Serializer};
use hdrhistogram::Histogram;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use lag::Lag;

/// Percentiles reported everywhere (the columns of Locust's and ab's tables).
pub mod hist;
pub mod lag;
pub mod merge;
pub mod result;
pub mod stream;
pub mod streams;
pub mod timing;

pub use hist::Hist;
pub use stream::{LiveCounters, Second, Timeline};
pub use streams::{StreamClock, StreamStats, TokenStats, Tokens};
pub use timing::{Phases, TimingStats};

pub const PERCENTILES: [f64; 11] = [50.0, 66.0, 75.0, 80.0, 90.0, 95.0, 98.0, 99.0, 99.9, 99.99, 100.0];

/// A percentile's key in the result's maps ("50", "99.9"): `PERCENTILES` and timing's alike.
pub fn percentile_label(p: f64) -> String {
    format!("{p}")
}

pub type EndpointId = usize;

pub fn new_histogram() -> Histogram<u64> {
    // Auto-resizing from 1 µs: small while latencies are small, grows to whatever a run needs.
    Histogram::new(3).expect("3 significant digits is valid")
}

/// HDR's cookie of a V2 payload deflated (`V2DeflateSerializer`'s; the crate keeps it private).
const V2_DEFLATED_COOKIE: u32 = 0x1c84_9304 | 0x10;

/// A histogram as results keep it: HDR's V2 format, deflated (zlib, the default level), base64; what
/// `V2DeflateSerializer` writes, and what its `Deserializer` (and squall.report.hdr) reads.
pub fn histogram_to_base64(h: &Histogram<u64>) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(deflated(h))
}

/// HDR's V2 format, deflated: the bytes `V2DeflateSerializer` writes, for a result's histograms and a
/// published second's large ones (`PackedSecond::pack`).
///
/// Written here, not by `V2DeflateSerializer`, because that one makes a new compressor for each
/// histogram, whose state (hundreds of KB) is allocated zeroed: a result serializes one histogram a
/// second per endpoint and phase, and cachegrind counted 22% of all the instructions of an 8 s run
/// of bench/locustfiles/shop_httpuser.py in it at the run's end (446 million, 590,000 a histogram,
/// most of it memset). One serializer and one compressor a thread, reset between histograms, write
/// the same format.
fn deflated(h: &Histogram<u64>) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress, Status};
    use hdrhistogram::serialization::V2Serializer;
    thread_local! {
        static WORK: RefCell<(V2Serializer, Vec<u8>, Compress)> =
            RefCell::new((V2Serializer::new(), Vec::new(), Compress::new(Compression::default(), true)));
    }
    WORK.with(|work| {
        let (serializer, plain, zlib) = &mut *work.borrow_mut();
        plain.clear();
        serializer.serialize(h, plain).expect("serializing to memory cannot fail");
        zlib.reset();
        let mut out = Vec::with_capacity(8 + plain.len() / 2 + 64);
        out.extend_from_slice(&V2_DEFLATED_COOKIE.to_be_bytes());
        out.extend_from_slice(&[0; 4]); // the deflated length, written below
        loop {
            let read = zlib.total_in() as usize;
            match zlib.compress_vec(&plain[read..], &mut out, FlushCompress::Finish) {
                Ok(Status::StreamEnd) => break,
                Ok(_) => out.reserve(out.capacity().max(64)),
                Err(e) => unreachable!("deflating to memory cannot fail: {e}"),
            }
        }
        let length = (out.len() - 8) as u32;
        out[4..8].copy_from_slice(&length.to_be_bytes());
        out
    })
}

/// A histogram as the result keeps it (HDR's V2 serialization, whichever form it is held in).
pub fn hist_to_base64(h: &Hist) -> String {
    histogram_to_base64(&h.dense())
}

pub fn histogram_from_base64(s: &str) -> Result<Histogram<u64>, String> {
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(s).map_err(|e| e.to_string())?;
    let mut h: Histogram<u64> = Deserializer::new().deserialize(&mut &bytes[..]).map_err(|e| format!("{e:?}"))?;
    h.auto(true);
    Ok(h)
}

/// A serialized histogram (`histogram_to_base64`) added into `sum`; an empty text adds nothing.
pub fn add_base64(sum: &mut Histogram<u64>, s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Ok(());
    }
    sum.add(histogram_from_base64(s)?).map_err(|e| format!("histograms do not add: {e:?}"))
}

/// An event stream's bytes counted received as they came (`Recorder::count_received`), its body's and on
/// the wire (the body's, its head's and its framing's): all a stream cut short brought, its request
/// carrying none (an endless stream's run read "0 B received" beside 117 events, a cut one's 2,640
/// bytes where a relay passed 5,220); a response that completes is recorded without them (`less`).
/// Bench's streams and a locustfile's keep one each.
#[derive(Clone, Copy, Debug, Default)]
pub struct Received {
    pub body: u64,
    pub wire: u64,
}

impl Received {
    /// `body` and `wire` bytes received now, counted in `recorder` under `endpoint`.
    pub fn count(&mut self, recorder: &RefCell<Recorder>, endpoint: EndpointId, body: u64, wire: u64) {
        self.body += body;
        self.wire += wire;
        recorder.borrow_mut().count_received(Instant::now(), endpoint, body, wire);
    }

    /// A response's (body, wire) bytes less those counted already.
    pub fn less(&self, body: u64, wire: u64) -> (u64, u64) {
        (body.saturating_sub(self.body), wire.saturating_sub(self.wire))
    }
}

/// Why a request failed. The kinds a user acts on differently are kept apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FailureKind {
    ConnectRefused,
    ConnectTimeout,
    Timeout,
    Reset,
    Closed,
    Tls,
    Http,
    Protocol,
    Io,
    /// A script's own verdict (`response.failure("...")`).
    Script,
    /// An MQTT broker said no (CONNACK, PUBACK or SUBACK with a failure reason).
    Refused,
    /// An MQTT message not acknowledged within the timeout.
    AckTimeout,
    /// An MQTT message the broker took but no subscriber saw.
    Lost,
    /// An MQTT message that fell due but was never written (no connection, or the run ended first).
    Unsent,
    /// A redirect chain longer than the most a request follows (requests' TooManyRedirects).
    TooManyRedirects,
    /// More than the engine keeps of something the server sends (a header block, a body kept for a
    /// script, a chunk's size line, an MQTT packet): the detail says what and the bound.
    TooLarge,
    /// A WebSocket handshake or frame that breaks RFC 6455 (the detail says how).
    WebSocket,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::ConnectRefused => "connect_refused",
            FailureKind::ConnectTimeout => "connect_timeout",
            FailureKind::Timeout => "timeout",
            FailureKind::Reset => "reset",
            FailureKind::Closed => "closed",
            FailureKind::Tls => "tls",
            FailureKind::Http => "http",
            FailureKind::Protocol => "protocol",
            FailureKind::Io => "io",
            FailureKind::Script => "script",
            FailureKind::Refused => "refused",
            FailureKind::AckTimeout => "ack_timeout",
            FailureKind::Lost => "lost",
            FailureKind::Unsent => "unsent",
            FailureKind::TooManyRedirects => "too_many_redirects",
            FailureKind::TooLarge => "too_large",
            FailureKind::WebSocket => "websocket",
        }
    }
}

/// A failed request: its kind, and for HTTP failures the status, else a short detail.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Failure {
    pub kind: FailureKind,
    pub status: u16,
    pub detail: String,
}

impl Failure {
    pub fn new(kind: FailureKind, detail: impl Into<String>) -> Self {
        Failure { kind, status: 0, detail: detail.into() }
    }

    pub fn http(status: u16) -> Self {
        Failure { kind: FailureKind::Http, status, detail: String::new() }
    }

    /// The one-line message shown in error tables and the failures CSV.
    pub fn message(&self) -> String {
        match self.kind {
            FailureKind::Http => format!("HTTP {}", self.status),
            FailureKind::ConnectRefused => "connection refused".into(),
            FailureKind::ConnectTimeout => "connect timed out".into(),
            FailureKind::Timeout => "request timed out".into(),
            FailureKind::Reset => "connection reset by peer".into(),
            FailureKind::Closed if self.detail.is_empty() => "server closed the connection".into(),
            FailureKind::Closed => format!("server closed the connection {}", self.detail),
            FailureKind::Tls => format!("TLS error: {}", self.detail),
            FailureKind::Protocol => format!("invalid HTTP response: {}", self.detail),
            FailureKind::AckTimeout => "no acknowledgement within the timeout".into(),
            FailureKind::Lost => "published but never delivered to the subscriber".into(),
            FailureKind::TooManyRedirects => format!("exceeded {} redirects (TooManyRedirects)", self.detail),
            FailureKind::TooLarge => format!("too large: {}", self.detail),
            FailureKind::WebSocket => format!("WebSocket: {}", self.detail),
            FailureKind::Io | FailureKind::Script | FailureKind::Refused | FailureKind::Unsent => self.detail.clone(),
        }
    }
}

/// Whether a response of `status` is a failed request, as Locust and requests judge it (`ok` is
/// below 400): the one rule, for the stats here and for a script's `Response.ok` and the exception it
/// stands for (squall-py, squall.clients).
#[inline]
pub fn failed_status(status: u16) -> bool {
    status >= 400
}

/// What one request came to.
pub enum Outcome {
    /// A response arrived; a 4xx or 5xx status counts as a failure (`failed_status`). Status 0: a
    /// reply that has none (a WebSocket message), a success.
    Response {
        status: u16,
        body_bytes: u64,
        wire_bytes: u64,
    },
    Failed(Failure),
    /// The script judged the response itself (`catch_response`): a success whatever its status
    /// unless `failure` is given.
    Judged {
        status: u16,
        body_bytes: u64,
        failure: Option<Failure>,
    },
}

/// Counts and latency histogram of one endpoint over some time span.
#[derive(Clone, Debug)]
pub struct EndpointStats {
    pub hist: Hist,
    /// The exact fastest and slowest times (µs; `u64::MAX` and 0 while empty). The histogram knows
    /// them only to its bucket: at 3 digits a 300 ms request is somewhere in [299.776, 300.032) ms,
    /// and a reported minimum below a timeout every request waited out is a wrong number.
    pub min_us: u64,
    pub max_us: u64,
    pub requests: u64,
    pub failures: u64,
    pub body_bytes: u64,
    pub wire_bytes: u64,
    /// Status code counts; a handful of codes, so a small vector beats a map.
    pub status: Vec<(u16, u64)>,
    /// Server-Sent Events read (`streams`): counted as they arrive, not when their request ends.
    pub events: u64,
    /// A language model's output tokens read (`streams`), as they arrive.
    pub tokens: u64,
}

impl Default for EndpointStats {
    fn default() -> Self {
        EndpointStats {
            hist: Hist::new(),
            min_us: u64::MAX,
            max_us: 0,
            requests: 0,
            failures: 0,
            body_bytes: 0,
            wire_bytes: 0,
            status: Vec::new(),
            events: 0,
            tokens: 0,
        }
    }
}

impl EndpointStats {
    /// Whether it counted anything: a request, or an event of a stream still being read.
    pub fn has_counts(&self) -> bool {
        self.requests > 0 || self.events > 0 || self.tokens > 0
    }

    #[inline]
    pub fn record(&mut self, latency_us: u64, outcome: &Outcome) {
        // Failed requests keep their time too, as in Locust: a timeout is part of the tail users feel.
        let us = latency_us.max(1);
        self.hist.record(us);
        self.min_us = self.min_us.min(us);
        self.max_us = self.max_us.max(us);
        self.requests += 1;
        match outcome {
            Outcome::Response { status, body_bytes, wire_bytes } => {
                self.body_bytes += body_bytes;
                self.wire_bytes += wire_bytes;
                self.failures += failed_status(*status) as u64;
                if *status != 0 {
                    self.add_status(*status, 1); // 0: no status (a WebSocket message)
                }
            }
            Outcome::Failed(_) => self.failures += 1,
            Outcome::Judged { status, body_bytes, failure } => {
                self.body_bytes += body_bytes;
                self.wire_bytes += body_bytes;
                self.failures += failure.is_some() as u64;
                if *status != 0 {
                    self.add_status(*status, 1);
                }
            }
        }
    }

    fn add_status(&mut self, status: u16, n: u64) {
        match self.status.iter_mut().find(|(s, _)| *s == status) {
            Some((_, c)) => *c += n,
            None => self.status.push((status, n)),
        }
    }

    /// The histogram within the exact fastest and slowest times.
    pub fn within(&self) -> Within<'_> {
        if self.requests == 0 || self.hist.is_empty() {
            Within { hist: &self.hist, min_us: 0, max_us: 0 }
        } else {
            Within { hist: &self.hist, min_us: self.min_us, max_us: self.max_us }
        }
    }

    pub fn merge(&mut self, other: &EndpointStats) {
        self.hist.add(&other.hist);
        self.min_us = self.min_us.min(other.min_us);
        self.max_us = self.max_us.max(other.max_us);
        self.requests += other.requests;
        self.failures += other.failures;
        self.body_bytes += other.body_bytes;
        self.wire_bytes += other.wire_bytes;
        self.events += other.events;
        self.tokens += other.tokens;
        for &(s, n) in &other.status {
            self.add_status(s, n);
        }
    }
}

/// A histogram read within exact bounds. The histogram knows a value only to its bucket (a percentile
/// reads as the top of one); the bounds are exact, and every true percentile, and the mean, lies
/// within them. So its readings are clamped there, and the 100th percentile is the maximum, as in
/// Locust's table. Empty: every reading is 0.
#[derive(Clone, Copy)]
pub struct Within<'a> {
    hist: &'a Hist,
    pub min_us: u64,
    pub max_us: u64,
}

impl<'a> Within<'a> {
    /// A bare histogram: its bounds are known to the bucket only.
    pub fn histogram(hist: &'a Hist) -> Self {
        let (min_us, max_us) = if hist.is_empty() { (0, 0) } else { (hist.min(), hist.max()) };
        Within { hist, min_us, max_us }
    }

    pub fn is_empty(&self) -> bool {
        self.hist.is_empty()
    }

    pub fn histogram_ref(&self) -> &'a Hist {
        self.hist
    }

    pub fn percentile(&self, p: f64) -> u64 {
        if self.is_empty() {
            0
        } else {
            self.hist.value_at_percentile(p).clamp(self.min_us, self.max_us)
        }
    }

    pub fn mean(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.hist.mean().clamp(self.min_us as f64, self.max_us as f64)
        }
    }

    pub fn stdev(&self) -> f64 {
        if self.is_empty() {
            0.0
        } else {
            self.hist.stdev()
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ErrorKey {
    pub endpoint: EndpointId,
    pub failure: Failure,
}

#[derive(Clone, Copy, Debug)]
pub struct ErrorEntry {
    pub count: u64,
    /// Microseconds since the run started.
    pub first_us: u64,
    pub last_us: u64,
}

impl ErrorEntry {
    fn merge(&mut self, o: &ErrorEntry) {
        self.count += o.count;
        self.first_us = self.first_us.min(o.first_us);
        self.last_us = self.last_us.max(o.last_us);
    }
}

pub fn merge_errors(into: &mut HashMap<ErrorKey, ErrorEntry>, from: HashMap<ErrorKey, ErrorEntry>) {
    for (k, v) in from {
        into.entry(k).and_modify(|e| e.merge(&v)).or_insert(v);
    }
}

/// A second's endpoints packed for keeping: those with requests, each as a few variable-length
/// integers (its id, counts, bytes, exact bounds, status codes, and its histogram's buckets, or
/// HDR's serialization, V2 deflate, of one held as an array). A 30-minute run keeps 1,800 seconds
/// (`make soak` saw RSS grow 30-90 KB a second before published seconds were packed). Measured
/// (tests/memory.rs): an endpoint with a request or two in a second packs in about 20 bytes, where
/// in full it is a 112-byte `EndpointStats` and its list's and status codes' allocations.
#[derive(Clone, Debug, Default)]
pub struct PackedSecond(Box<[u8]>);

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn take(buf: &mut &[u8]) -> u64 {
    let (mut v, mut shift) = (0u64, 0);
    loop {
        let (&b, rest) = buf.split_first().expect("what `pack` wrote reads back");
        *buf = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

impl PackedSecond {
    pub fn pack(stats: &[EndpointStats]) -> PackedSecond {
        let mut out = Vec::new();
        let mut next = 0;
        for (id, s) in stats.iter().enumerate().filter(|(_, s)| s.has_counts()) {
            put(&mut out, (id - next) as u64);
            next = id + 1;
            let (min, max) = (s.min_us.wrapping_add(1), s.max_us);
            for v in [s.requests, s.failures, s.body_bytes, s.wire_bytes, min, max, s.events, s.tokens] {
                put(&mut out, v);
            }
            put(&mut out, s.status.len() as u64);
            for &(code, n) in &s.status {
                put(&mut out, code.into());
                put(&mut out, n);
            }
            match s.hist.listed() {
                Some(buckets) => {
                    put(&mut out, buckets.len() as u64 * 2);
                    let mut last = 0;
                    for &(k, n) in buckets {
                        put(&mut out, (k - last).into());
                        put(&mut out, n.into());
                        last = k;
                    }
                }
                None => {
                    let ser = deflated(&s.hist.dense());
                    put(&mut out, ser.len() as u64 * 2 + 1);
                    out.extend_from_slice(&ser);
                }
            }
        }
        PackedSecond(out.into_boxed_slice())
    }

    /// The bytes it holds.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The endpoints by id, as packed (those without requests: empty).
    pub fn unpack(&self) -> Vec<EndpointStats> {
        let mut buf = &self.0[..];
        let mut out: Vec<EndpointStats> = Vec::new();
        while !buf.is_empty() {
            let id = out.len() + take(&mut buf) as usize;
            out.resize_with(id, EndpointStats::default);
            let mut s = EndpointStats {
                requests: take(&mut buf),
                failures: take(&mut buf),
                body_bytes: take(&mut buf),
                wire_bytes: take(&mut buf),
                min_us: take(&mut buf).wrapping_sub(1),
                max_us: take(&mut buf),
                events: take(&mut buf),
                tokens: take(&mut buf),
                ..EndpointStats::default()
            };
            s.status = (0..take(&mut buf)).map(|_| (take(&mut buf) as u16, take(&mut buf))).collect();
            let tag = take(&mut buf);
            if tag.is_multiple_of(2) {
                let mut last = 0u32;
                let buckets = (0..tag / 2)
                    .map(|_| {
                        last += take(&mut buf) as u32;
                        (last, take(&mut buf) as u32)
                    })
                    .collect();
                s.hist = Hist::from_listed(buckets);
            } else {
                let (ser, rest) = buf.split_at((tag / 2) as usize);
                buf = rest;
                let mut h: Histogram<u64> =
                    Deserializer::new().deserialize(&mut &ser[..]).expect("what `pack` wrote reads back");
                h.auto(true);
                s.hist = Hist::from(h);
            }
            out.push(s);
        }
        out
    }
}

pub fn merge_vec(into: &mut Vec<EndpointStats>, from: &[EndpointStats]) {
    if into.len() < from.len() {
        into.resize_with(from.len(), EndpointStats::default);
    }
    for (a, b) in into.iter_mut().zip(from) {
        if b.has_counts() {
            a.merge(b);
        }
    }
}

/// One thread's recorder: totals, the current second, errors and connects. Not shared, so no locks on
/// the hot path; finished seconds go to the shared timeline.
pub struct Recorder {
    start: Instant,
    pub totals: Vec<EndpointStats>,
    second_idx: u64,
    second: Vec<EndpointStats>,
    pub errors: HashMap<ErrorKey, ErrorEntry>,
    /// The current second's errors, for the timeline's live totals.
    second_errors: HashMap<ErrorKey, ErrorEntry>,
    /// Paced loads: how late the sends went out, over the run and in the current second.
    pub lag: Lag,
    second_lag: Lag,
    pub connect: Histogram<u64>,
    /// Where the time of each endpoint's requests went (HTTP/1.1: `timing`), over the run.
    pub timings: Vec<TimingStats>,
    /// Each endpoint's event streams (`streams`), over the run.
    pub streams: Vec<StreamStats>,
    timeline: Arc<Timeline>,
    live: Arc<LiveCounters>,
    /// When the totals were last reset (`reset_totals`): the result's totals count from then.
    pub reset_at: Option<Instant>,
    /// The second whose start a reset asked for in the second before it takes effect at (`roll`).
    reset_from: Option<u64>,
}

impl Recorder {
    /// Forgets the run's totals and errors so far (Locust's `--reset-stats` and "Reset stats"): the run's
    /// result counts from the start of second `from` of the time series (the live totals' reset says
    /// which: `Timeline::reset_totals`, the next one), so that its totals are the sum of the seconds from
    /// there on, exactly (from the moment asked, the second it fell in would count its requests before
    /// the reset too: 19 of 100 in the history's totals of a 9 s run). The totals are emptied now, and
    /// again when that second comes (`roll`); a run that ends before it counts from the moment asked.
    /// The time series keeps every second.
    pub fn reset_totals(&mut self, from: u64) {
        self.clear_totals(Instant::now());
        self.reset_from = Some(from);
    }

    fn clear_totals(&mut self, at: Instant) {
        self.reset_at = Some(at);
        self.totals.iter_mut().for_each(|s| *s = EndpointStats::default());
        self.timings.clear();
        self.streams.clear();
        self.errors.clear();
    }

    /// A recorder feeding `timeline` (its counters join the run's live progress).
    pub fn new(timeline: Arc<Timeline>) -> Self {
        let live = timeline.register();
        Recorder {
            start: timeline.start,
            totals: Vec::new(),
            second_idx: 0,
            second: Vec::new(),
            errors: HashMap::new(),
            second_errors: HashMap::new(),
            lag: Lag::default(),
            second_lag: Lag::default(),
            connect: new_histogram(),
            timings: Vec::new(),
            streams: Vec::new(),
            timeline,
            live,
            reset_at: None,
            reset_from: None,
        }
    }

    fn since_start(&self, now: Instant) -> Duration {
        now.saturating_duration_since(self.start)
    }

    #[inline]
    pub fn record(&mut self, now: Instant, endpoint: EndpointId, latency: Duration, outcome: &Outcome) {
        self.roll(now);
        let us = latency.as_micros() as u64;
        if self.totals.len() <= endpoint {
            self.totals.resize_with(endpoint + 1, EndpointStats::default);
        }
        if self.second.len() <= endpoint {
            self.second.resize_with(endpoint + 1, EndpointStats::default);
        }
        self.totals[endpoint].record(us, outcome);
        self.second[endpoint].record(us, outcome);
        self.live.completed.fetch_add(1, Ordering::Relaxed);
        let failure = match outcome {
            Outcome::Failed(f) => Some(f.clone()),
            Outcome::Response { status, .. } if failed_status(*status) => Some(Failure::http(*status)),
            Outcome::Judged { failure, .. } => failure.clone(),
            _ => None,
        };
        if let Some(failure) = failure {
            self.live.failed.fetch_add(1, Ordering::Relaxed);
            self.note_error(now, ErrorKey { endpoint, failure }, 1);
        }
    }

    /// The endpoint's statistics in the totals and in the current second, made if new: where the counts
    /// without a latency go (`record`, the hot path, keeps its own two lookups, as measured).
    fn both(&mut self, endpoint: EndpointId) -> [&mut EndpointStats; 2] {
        for stats in [&mut self.totals, &mut self.second] {
            if stats.len() <= endpoint {
                stats.resize_with(endpoint + 1, EndpointStats::default);
            }
        }
        [&mut self.totals[endpoint], &mut self.second[endpoint]]
    }

    /// Counts a success that has no latency to measure (a message without a timestamp).
    pub fn count(&mut self, now: Instant, endpoint: EndpointId, body_bytes: u64) {
        self.roll(now);
        for s in self.both(endpoint) {
            s.requests += 1;
            s.body_bytes += body_bytes;
        }
        self.live.completed.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `n` failures that have no latency (a message never sent, or never delivered).
    pub fn fail_untimed(&mut self, now: Instant, endpoint: EndpointId, failure: Failure, n: u64) {
        if n == 0 {
            return;
        }
        self.roll(now);
        for s in self.both(endpoint) {
            s.requests += n;
            s.failures += n;
        }
        self.live.failed.fetch_add(n, Ordering::Relaxed);
        self.note_error(now, ErrorKey { endpoint, failure }, n);
    }

    /// Counts `n` failures of one kind in the totals and in the current second.
    fn note_error(&mut self, now: Instant, key: ErrorKey, n: u64) {
        let at = self.since_start(now).as_micros() as u64;
        for errors in [&mut self.second_errors, &mut self.errors] {
            match errors.get_mut(&key) {
                Some(e) => {
                    e.count += n;
                    e.last_us = at;
                }
                None => {
                    errors.insert(key.clone(), ErrorEntry { count: n, first_us: at, last_us: at });
                }
            }
        }
    }

    /// A paced send went out `lag` after its intended time (at `now`).
    #[inline]
    pub fn note_lag(&mut self, now: Instant, lag: Duration) {
        self.roll(now);
        self.lag.note(lag);
        self.second_lag.note(lag);
    }

    pub fn timeline(&self) -> &Arc<Timeline> {
        &self.timeline
    }

    /// Where the endpoint's time went so far (`timing`).
    #[inline]
    pub fn timing(&mut self, endpoint: EndpointId) -> &mut TimingStats {
        if self.timings.len() <= endpoint {
            self.timings.resize_with(endpoint + 1, TimingStats::default);
        }
        &mut self.timings[endpoint]
    }

    /// A request's phases (a script's, after its `record`).
    pub fn record_timing(&mut self, endpoint: EndpointId, phases: &Phases) {
        self.timing(endpoint).record(phases);
    }

    /// The endpoint's event streams so far (`streams`).
    #[inline]
    pub fn stream(&mut self, endpoint: EndpointId) -> &mut StreamStats {
        if self.streams.len() <= endpoint {
            self.streams.resize_with(endpoint + 1, StreamStats::default);
        }
        &mut self.streams[endpoint]
    }

    /// `n` events of a stream arrived at `now`, on `clock`, `tokens` among them: counted in the run's
    /// totals and the current second, and timed (`StreamClock::events`, `StreamClock::tokens`).
    pub fn events(&mut self, now: Instant, endpoint: EndpointId, n: u64, tokens: Tokens, clock: &mut StreamClock) {
        if n == 0 {
            return;
        }
        self.roll(now);
        let stream = self.stream(endpoint);
        clock.events(stream, n, now);
        let t = clock.tokens(&mut stream.tokens, tokens, now);
        self.count_streamed(endpoint, n, t);
    }

    /// A stream of `endpoint` ended at `now`, on `clock`: completed, or cut for `failure`'s reason
    /// (and the tokens its usage adds beyond its output events counted).
    pub fn stream_ended(
        &mut self,
        now: Instant,
        endpoint: EndpointId,
        clock: &mut StreamClock,
        failure: Option<&Failure>,
    ) {
        self.roll(now);
        let stream = self.stream(endpoint);
        match failure {
            None => stream.completed += 1,
            Some(f) => stream.cut(f.message()),
        }
        let more = clock.ended(&mut stream.tokens, now);
        self.count_streamed(endpoint, 0, more);
    }

    fn count_streamed(&mut self, endpoint: EndpointId, events: u64, tokens: u64) {
        if events == 0 && tokens == 0 {
            return;
        }
        for s in self.both(endpoint) {
            s.events += events;
            s.tokens += tokens;
        }
    }

    /// Bytes a request received without a response to count them with (an event stream cut or left
    /// open at the end): `body` of its body, `wire` on the wire (the body's, its head's and framing's),
    /// added to the endpoint's received bytes, no request counted.
    pub fn count_received(&mut self, now: Instant, endpoint: EndpointId, body: u64, wire: u64) {
        if wire == 0 {
            return;
        }
        self.roll(now);
        for s in self.both(endpoint) {
            s.body_bytes += body;
            s.wire_bytes += wire;
        }
    }

    pub fn record_connect(&mut self, took: Duration) {
        let _ = self.connect.record((took.as_micros() as u64).max(1));
    }

    /// Hands the current second to the timeline once the clock has moved past it.
    pub fn roll(&mut self, now: Instant) {
        let sec = self.since_start(now).as_secs();
        if sec != self.second_idx {
            self.flush();
            self.second_idx = sec;
            self.live.second.store(sec, Ordering::Release);
            if let Some(from) = self.reset_from.filter(|&from| sec >= from) {
                self.reset_from = None;
                self.clear_totals(self.start + Duration::from_secs(from));
            }
        }
    }

    /// The recorder's thread is done: its last second goes to the timeline, and it no longer holds
    /// back the publication of seconds.
    pub fn finish(&mut self) {
        self.flush();
        self.live.second.store(u64::MAX, Ordering::Release);
    }

    pub fn flush(&mut self) {
        if self.second.iter().any(EndpointStats::has_counts) || self.second_lag.sent > 0 {
            let filled = self.second.len();
            let done = std::mem::replace(&mut self.second, Vec::with_capacity(filled));
            let errors = std::mem::take(&mut self.second_errors);
            self.timeline.push(self.second_idx, done, errors, std::mem::take(&mut self.second_lag));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(status: u16) -> Outcome {
        Outcome::Response { status, body_bytes: 10, wire_bytes: 100 }
    }

    /// The reused compressor writes what `V2DeflateSerializer` writes, byte for byte, histogram after
    /// histogram (so a reset compressor carries nothing over), and it reads back as the histogram:
    /// empty, one value, many values spread over six decades, a histogram grown far.
    #[test]
    fn histograms_serialize_as_hdrs_deflate_serializer_does() {
        use hdrhistogram::serialization::V2DeflateSerializer;
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut cases = vec![new_histogram()];
        for n in [1usize, 10, 1_000, 100_000] {
            let mut h = new_histogram();
            for _ in 0..n {
                h.record(rng.random_range(1..2_000_000u64)).unwrap();
            }
            cases.push(h);
        }
        let mut far = new_histogram();
        far.record(3).unwrap();
        far.record(4_000_000_000).unwrap();
        cases.push(far);
        for h in cases.iter().chain(cases.iter().rev()) {
            let mut theirs = Vec::new();
            V2DeflateSerializer::new().serialize(h, &mut theirs).unwrap();
            use base64::Engine;
            let ours = base64::engine::general_purpose::STANDARD.decode(histogram_to_base64(h)).unwrap();
            assert_eq!(ours, theirs, "{} values", h.len());
            assert_eq!(&histogram_from_base64(&histogram_to_base64(h)).unwrap(), h);
        }
    }

    #[test]
    fn a_reset_counts_from_the_next_seconds_start_so_the_totals_are_the_seconds_sum() {
        let start = Instant::now() - Duration::from_millis(2500); // now is in second 2
        let timeline = Timeline::new(start);
        let mut r = Recorder::new(timeline.clone());
        let at = |ms: u64| start + Duration::from_millis(ms);
        for ms in [100, 1100, 2200] {
            r.record(at(ms), 0, Duration::from_millis(1), &ok(200));
        }
        let asked = Instant::now();
        r.reset_totals(timeline.reset_totals());
        assert_eq!(r.totals[0].requests, 0, "emptied at once");
        r.record(at(2700), 0, Duration::from_millis(1), &ok(200)); // the reset's second: not counted
        assert!(r.reset_at >= Some(asked), "a result made now counts from the moment asked");
        for ms in [3100, 3900, 4200] {
            r.record(at(ms), 0, Duration::from_millis(1), &ok(200));
        }
        r.finish();
        assert_eq!((r.totals[0].requests, r.reset_at), (3, Some(at(3000))));
        timeline.publish_until(5);
        let seconds = timeline.seconds_since(0, Duration::ZERO);
        let from_three: u64 = seconds[3..].iter().map(|s| s.endpoints()[0].requests).sum();
        assert_eq!((seconds[2].endpoints()[0].requests, from_three), (2, 3), "the series keeps every second");
        let live = timeline.totals();
        assert_eq!((live.since, live.endpoints[0].requests), (3, 3), "the live totals count the same seconds");
    }

    #[test]
    fn merge_is_lossless() {
        let mut a = EndpointStats::default();
        let mut b = EndpointStats::default();
        let mut both = EndpointStats::default();
        for i in 1..=1000u64 {
            let (target, o) = if i % 2 == 0 { (&mut a, ok(200)) } else { (&mut b, ok(503)) };
            target.record(i * 37, &o);
            both.record(i * 37, &o);
        }
        a.merge(&b);
        assert_eq!(a.hist, both.hist);
        assert_eq!(a.requests, 1000);
        assert_eq!(a.failures, 500);
        assert_eq!(a.status.len(), 2);
    }

    #[test]
    fn min_and_max_are_exact_not_their_buckets() {
        // At 3 digits 300_010 µs falls in the bucket [299_776, 300_032): the histogram alone would
        // report a minimum below 300 ms for requests that each waited out a 300 ms timeout.
        let mut a = EndpointStats::default();
        a.record(300_010, &ok(200));
        a.record(400_000, &ok(200));
        assert!(a.hist.min() < 300_000);
        let mut b = EndpointStats::default();
        b.record(1_234_567, &ok(200));
        assert!(b.hist.max() > 1_234_567);
        a.merge(&b);
        let s = result::summarize_stats(&PackedSecond::pack(std::slice::from_ref(&a)).unpack()[0]);
        assert_eq!((s.min_us, s.max_us, s.requests), (300_010, 1_234_567, 3));
        assert_eq!(s.percentiles_us["100"], 1_234_567, "the 100th percentile is the maximum");
        assert!(s.percentiles_us.values().all(|v| (300_010..=1_234_567).contains(v)), "{:?}", s.percentiles_us);
        let empty = result::summarize_stats(&EndpointStats::default());
        assert_eq!((empty.min_us, empty.max_us), (0, 0));
        let mut none = EndpointStats::default();
        none.merge(&EndpointStats::default());
        assert_eq!((none.min_us, none.max_us), (u64::MAX, 0));
    }

    #[test]
    fn histogram_round_trips_through_base64() {
        let mut s = EndpointStats::default();
        for v in [1u64, 5, 250, 70_000, 30_000_000] {
            s.record(v, &ok(200));
        }
        let back = histogram_from_base64(&hist_to_base64(&s.hist)).unwrap();
        assert_eq!(back, *s.hist.dense());
        assert_eq!(back.value_at_quantile(1.0), s.hist.value_at_quantile(1.0));
        assert_eq!(Hist::from(back), s.hist);
    }

    #[test]
    fn recorder_splits_seconds_and_counts_errors() {
        let start = Instant::now();
        let tl = Timeline::new(start);
        let mut r = Recorder::new(tl.clone());
        let refused = Outcome::Failed(Failure::new(FailureKind::ConnectRefused, ""));
        r.record(start, 0, Duration::from_micros(100), &ok(200));
        r.record(start + Duration::from_millis(1500), 0, Duration::from_micros(100), &refused);
        r.record(start + Duration::from_millis(1600), 0, Duration::from_micros(100), &ok(500));
        r.flush();
        let all = tl.all();
        assert_eq!(all.endpoints(0)[0].requests, 1);
        assert_eq!(all.endpoints(1)[0].requests, 2);
        assert_eq!(all.endpoints(1)[0].failures, 2);
        assert_eq!(tl.counts(), (3, 2));
        assert_eq!(r.errors.len(), 2);
        assert_eq!(r.totals[0].requests, 3);
    }

    #[test]
    fn failure_messages_are_one_line() {
        assert_eq!(Failure::http(503).message(), "HTTP 503");
        assert_eq!(
            Failure::new(FailureKind::Closed, "mid-response").message(),
            "server closed the connection mid-response"
        );
    }
}
