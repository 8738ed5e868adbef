//! The result of a run, as the JSON document `squall bench --json` writes and the reports read:
//! summaries with exact HDR percentiles, the per-second time series, errors, and every histogram
//! serialized losslessly (HdrHistogram V2 + deflate, base64) so results can be merged later.

use crate::stats::lag::{Lag, ScheduleReport, SecondSchedule};
pub use crate::stats::stream::Cumulative;
use crate::stats::stream::{AllSeconds, Second};
use crate::stats::streams::{StreamReport, StreamStats};
use crate::stats::timing::{TimingStats, TimingsReport};
use crate::stats::{self, percentile_label, EndpointStats, ErrorEntry, ErrorKey, Hist, Within, PERCENTILES};
use crate::types::StopReason;
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub requests: u64,
    pub failures: u64,
    pub body_bytes: u64,
    pub wire_bytes: u64,
    pub min_us: u64,
    pub max_us: u64,
    pub mean_us: f64,
    pub stdev_us: f64,
    /// Exact HDR values at 50, 66, 75, 80, 90, 95, 98, 99, 99.9, 99.99 and 100 percent.
    pub percentiles_us: BTreeMap<String, u64>,
    /// Server-Sent Events read (`stats::streams`), counted as they arrive; absent when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub events: u64,
    /// A language model's output tokens read (`stats::streams`), as they arrive; absent when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The summary of a bare histogram: its minimum and maximum are known to the bucket only.
pub fn summarize(hist: &Histogram<u64>, requests: u64, failures: u64, body_bytes: u64, wire_bytes: u64) -> Summary {
    summary_within(Within::histogram(&Hist::from(hist.clone())), requests, failures, body_bytes, wire_bytes)
}

/// The summary of an endpoint's statistics, with its exact minimum and maximum.
pub fn summarize_stats(s: &EndpointStats) -> Summary {
    Summary {
        events: s.events,
        tokens: s.tokens,
        ..summary_within(s.within(), s.requests, s.failures, s.body_bytes, s.wire_bytes)
    }
}

fn summary_within(w: Within<'_>, requests: u64, failures: u64, body_bytes: u64, wire_bytes: u64) -> Summary {
    Summary {
        requests,
        failures,
        body_bytes,
        wire_bytes,
        min_us: w.min_us,
        max_us: w.max_us,
        mean_us: w.mean(),
        stdev_us: w.stdev(),
        percentiles_us: if w.is_empty() {
            BTreeMap::new()
        } else {
            PERCENTILES.iter().map(|&p| (percentile_label(p), w.percentile(p))).collect()
        },
        events: 0,
        tokens: 0,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EndpointReport {
    pub method: String,
    pub name: String,
    #[serde(flatten)]
    pub summary: Summary,
    pub status_codes: BTreeMap<String, u64>,
    /// The percentile spectrum, `[percentile, µs]` pairs (see `spectrum`).
    #[serde(default)]
    pub spectrum: Vec<(f64, u64)>,
    /// `[upper bound µs, requests at most that long]` at Prometheus' usual bounds (`BUCKETS_US`), for
    /// its histograms (the dashboard's /metrics).
    #[serde(default)]
    pub buckets: Vec<(u64, u64)>,
    /// The response-time distribution chart's bars, `[from µs, to µs, requests]` (see `distribution`);
    /// results before it lack it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distribution: Vec<(u64, u64, u64)>,
    /// Where the time went: connect, TLS, waiting, receiving (HTTP/1.1 only: `stats::timing`); absent
    /// where nothing was timed, and in the live totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timings: Option<TimingsReport>,
    /// Its event streams: time to first event, gaps, how they ended (HTTP/1.1 `text/event-stream`
    /// responses: `stats::streams`); absent where none was read, and in the live totals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<StreamReport>,
    pub histogram: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorReport {
    pub method: String,
    pub name: String,
    pub kind: String,
    pub status: Option<u16>,
    pub message: String,
    pub count: u64,
    pub first_seen_s: f64,
    pub last_seen_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondReport {
    /// Seconds since the start of the run.
    pub t: u64,
    /// Unix time of the start of this second.
    pub unix: f64,
    /// Connections (closed model: ramped; open model: started so far, up to the cap), users or MQTT
    /// clients at this second.
    pub users: u64,
    /// The engine's connections open during this second (the most seen; TCP, with TLS and a
    /// WebSocket's over it: `net::open_connections`); absent from results that did not count them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    #[serde(flatten)]
    pub summary: Summary,
    pub endpoints: Vec<SecondEndpoint>,
    /// Everything from the start of the run up to the end of this second.
    pub cumulative: Cumulative,
    /// Paced loads: this second's sends and their lag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<SecondSchedule>,
    /// Empty in the live stream (a dashboard has no use for it), set in results.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub histogram: String,
}

/// One bar of the console's latency histogram: requests that took at most `upper_us`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Bucket {
    pub upper_us: u64,
    pub count: u64,
}

/// Ten log-spaced buckets from the fastest to the slowest request: tails stay visible.
pub fn buckets(h: &Hist) -> Vec<Bucket> {
    let mut out: Vec<Bucket> = Vec::new();
    if h.is_empty() {
        return out;
    }
    let (lo, hi) = (h.min().max(1) as f64, h.max().max(1) as f64);
    let mut below = 0; // requests counted in earlier buckets
    for i in 1..=10 {
        // An edge is the top of HDR's bucket it falls in: finer edges split no count, only left every
        // other bucket empty (latencies of 1001-1003 ms, whose HDR buckets are half a millisecond).
        let edge = (lo * (hi / lo).powf(i as f64 / 10.0)).round() as u64;
        let upper = if i == 10 { h.max() } else { h.highest_equivalent(edge).min(h.max()) };
        if out.last().is_some_and(|b| upper <= b.upper_us) {
            continue;
        }
        let upto = h.count_between(0, upper);
        out.push(Bucket { upper_us: upper, count: upto - below });
        below = upto;
    }
    out
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondEndpoint {
    pub method: String,
    pub name: String,
    #[serde(flatten)]
    pub summary: Summary,
    pub status_codes: BTreeMap<String, u64>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub histogram: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadReport {
    pub model: String,
    pub connections: usize,
    pub threads: usize,
    pub requests: Option<u64>,
    pub duration_s: Option<f64>,
    pub ramp_s: Option<f64>,
    pub http2: bool,
    pub keepalive: bool,
    /// The request timeout; null for locustfiles, whose requests each carry their own.
    pub timeout_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunResult {
    pub squall_version: String,
    pub kind: String,
    pub url: String,
    pub method: String,
    pub start_unix: f64,
    pub duration_s: f64,
    /// The totals (aggregate, endpoints, errors) count from this many seconds into the run: their last
    /// reset (Locust's `--reset-stats`, the dashboard's Reset, `stats.reset_all()`), over whose
    /// remaining time `duration_s - reset_s` their rates are taken. Absent: from the start. The time
    /// series keeps every second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_s: Option<f64>,
    /// completed, duration, interrupted or drain_timeout.
    pub stop_reason: StopReason,
    pub load: LoadReport,
    pub aggregate: EndpointReport,
    pub endpoints: Vec<EndpointReport>,
    pub errors: Vec<ErrorReport>,
    pub connect: Summary,
    pub connect_histogram: String,
    /// Paced runs (bench's open model, MQTT's rate): how the schedule was kept.
    pub schedule: Option<ScheduleReport>,
    /// In flight when the run ended (duration up, or interrupted): sent, but not counted.
    pub abandoned: u64,
    pub latency_histogram: Vec<Bucket>,
    pub timeseries: Vec<SecondReport>,
    /// MQTT runs: rates, per-client counts and delivery.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[serde(default)]
    pub mqtt: Option<MqttReport>,
}

pub struct Inputs {
    pub kind: String,
    pub url: String,
    pub method: String,
    pub start_unix: f64,
    pub load: LoadReport,
    /// (method, name) of each endpoint id.
    pub names: Vec<(String, String)>,
    pub schedule: Option<ScheduleReport>,
    pub reason: StopReason,
    pub duration: Duration,
    /// When the totals were last reset, since the start (`RunResult::reset_s`).
    pub reset: Option<Duration>,
    pub totals: Vec<EndpointStats>,
    /// Per endpoint id, where the time went (empty when nothing was timed).
    pub timings: Vec<TimingStats>,
    /// Per endpoint id, its event streams (empty when none was read).
    pub streams: Vec<StreamStats>,
    pub errors: HashMap<ErrorKey, ErrorEntry>,
    pub connect: Histogram<u64>,
    /// The per-second statistics and users.
    pub seconds: AllSeconds,
    pub abandoned: u64,
}

pub fn merged(stats: &[EndpointStats]) -> EndpointStats {
    let mut all = EndpointStats::default();
    for s in stats {
        all.merge(s);
    }
    all
}

fn status_codes(s: &EndpointStats) -> BTreeMap<String, u64> {
    s.status.iter().map(|(c, n)| (c.to_string(), *n)).collect()
}

/// The percentile spectrum of a histogram, as HdrHistogram's percentile distribution prints it:
/// five steps per halving of the distance to 100% (50%, 75%, 87.5%, ... each split in five), up to
/// the maximum, so that a chart on a log axis of 1 / (1 - p) shows the tail to 99.999% and beyond
/// with about 100 points. Values are exact to the histogram's 3 significant digits.
pub fn spectrum(h: &Histogram<u64>) -> Vec<(f64, u64)> {
    spectrum_of(&Hist::from(h.clone()))
}

/// `spectrum` of a `Hist`.
pub fn spectrum_of(h: &Hist) -> Vec<(f64, u64)> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(f64, u64)> = Vec::new();
    for (q, v) in h.quantile_steps(5) {
        let p = q * 100.0;
        let value = h.highest_equivalent(v);
        if out.last().is_some_and(|l| l.0 >= p) {
            continue;
        }
        out.push((p, value));
    }
    out
}

/// Bars of the response-time distribution.
pub const DISTRIBUTION_BINS: usize = 50;

/// The response-time distribution as bars, `[from µs, to µs, requests]`: up to `DISTRIBUTION_BINS`
/// log-spaced bins from the fastest request to the slowest (exact bounds), so that a narrow peak and
/// a long tail both show. A bin holds the requests above its `from` and at most its `to` (the first
/// from the fastest, inclusive). Bin edges are HDR buckets' tops, so every bucket falls in one bin and
/// the counts add up to the histogram's, exactly. Bins without requests are left out (a gap between
/// two bars; the first and the last always have some): the chart draws none for them, and an endpoint
/// with a few requests had 50 bars nearly all empty, each a Python tuple in every live reading and in
/// the result (with 5,000 such names, 30 MB of a result's 65 MB as Python objects).
pub fn distribution(w: Within<'_>) -> Vec<(u64, u64, u64)> {
    let h = w.histogram_ref();
    if w.is_empty() {
        return Vec::new();
    }
    let (lo, hi) = (w.min_us.max(1), w.max_us.max(1));
    let mut edges: Vec<u64> = Vec::with_capacity(DISTRIBUTION_BINS);
    for k in 1..=DISTRIBUTION_BINS {
        let e = if k == DISTRIBUTION_BINS {
            hi
        } else {
            (lo as f64 * (hi as f64 / lo as f64).powf(k as f64 / DISTRIBUTION_BINS as f64)).round() as u64
        };
        let top = h.highest_equivalent(e);
        if edges.last().is_none_or(|&l| top > l) {
            edges.push(top);
        }
    }
    let top = h.highest_equivalent(h.max());
    if edges.last().is_some_and(|&l| l < top) {
        *edges.last_mut().unwrap() = top; // the slowest bucket's top (its max is within it)
    }
    let mut counts = vec![0u64; edges.len()];
    let mut k = 0;
    for (value, n) in h.iter_recorded() {
        while k + 1 < edges.len() && value > edges[k] {
            k += 1;
        }
        counts[k] += n;
    }
    let mut from = w.min_us;
    edges
        .iter()
        .zip(counts)
        .map(|(&e, n)| {
            let to = e.clamp(w.min_us, w.max_us);
            let bar = (from, to, n);
            from = to;
            bar
        })
        .filter(|bar| bar.2 > 0)
        .collect()
}

/// Prometheus' default bucket bounds (5 ms to 10 s) and a few below, in microseconds.
pub const BUCKETS_US: [u64; 14] = [
    500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000, 1_000_000, 2_500_000, 5_000_000,
    10_000_000,
];

/// Requests at most each bound long (cumulative, as Prometheus counts `le`); exact to the histogram's
/// resolution (a value in the same 0.1% bucket as the bound counts as at most it).
pub fn le_buckets(h: &Histogram<u64>) -> Vec<(u64, u64)> {
    le_buckets_of(&Hist::from(h.clone()))
}

/// `le_buckets` of a `Hist`.
pub fn le_buckets_of(h: &Hist) -> Vec<(u64, u64)> {
    BUCKETS_US.iter().map(|&le| (le, if h.is_empty() { 0 } else { h.count_between(0, le) })).collect()
}

/// An endpoint's report; `histogram` false leaves the serialized histogram out (live totals).
pub fn endpoint_report_with(method: &str, name: &str, s: &EndpointStats, histogram: bool) -> EndpointReport {
    EndpointReport {
        method: method.to_string(),
        name: name.to_string(),
        summary: summarize_stats(s),
        status_codes: status_codes(s),
        spectrum: spectrum_of(&s.hist),
        buckets: le_buckets_of(&s.hist),
        distribution: distribution(s.within()),
        timings: None,
        stream: None,
        histogram: if histogram { stats::hist_to_base64(&s.hist) } else { String::new() },
    }
}

pub fn endpoint_report(method: &str, name: &str, s: &EndpointStats) -> EndpointReport {
    endpoint_report_with(method, name, s, true)
}

/// The error table, most frequent first.
pub fn error_reports(errors: &HashMap<ErrorKey, ErrorEntry>, names: &[(String, String)]) -> Vec<ErrorReport> {
    let mut out: Vec<ErrorReport> = errors
        .iter()
        .map(|(k, e)| {
            let (m, n) = names.get(k.endpoint).map_or(("", ""), |(m, n)| (m.as_str(), n.as_str()));
            ErrorReport {
                method: m.to_string(),
                name: n.to_string(),
                kind: k.failure.kind.as_str().to_string(),
                status: (k.failure.status != 0).then_some(k.failure.status),
                message: k.failure.message(),
                count: e.count,
                first_seen_s: e.first_us as f64 / 1e6,
                last_seen_s: e.last_us as f64 / 1e6,
            }
        })
        .collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.message.cmp(&b.message)));
    out
}

/// What a second of the time series says besides its endpoints.
pub struct SecondHead {
    pub t: u64,
    pub unix: f64,
    pub users: u64,
    pub connections: Option<u64>,
    pub cumulative: Cumulative,
    pub lag: Option<Lag>,
}

/// One second of the time series: the aggregate and each endpoint that saw requests; serialized
/// histograms only when `histograms` (results, not the live stream).
pub fn second_report(
    head: SecondHead,
    per: &[EndpointStats],
    names: &[(String, String)],
    histograms: bool,
) -> SecondReport {
    let all = merged(per);
    let hist = |h: &Hist| if histograms { stats::hist_to_base64(h) } else { String::new() };
    SecondReport {
        t: head.t,
        unix: head.unix,
        users: head.users,
        connections: head.connections,
        summary: summarize_stats(&all),
        endpoints: per
            .iter()
            .zip(names.iter())
            .filter(|(s, _)| s.has_counts())
            .map(|(s, (m, n))| SecondEndpoint {
                method: m.clone(),
                name: n.clone(),
                summary: summarize_stats(s),
                status_codes: status_codes(s),
                histogram: hist(&s.hist),
            })
            .collect(),
        cumulative: head.cumulative,
        schedule: head.lag.as_ref().and_then(SecondSchedule::of),
        histogram: hist(&all.hist),
    }
}

/// A published second of the live stream, as the result's time series has it; its histograms only when
/// asked (a distributed worker's stream: its driver merges them, exactly).
pub fn live_second(s: &Second, names: &[(String, String)], start_unix: f64, histograms: bool) -> SecondReport {
    let head = SecondHead {
        t: s.t,
        unix: start_unix + s.t as f64,
        users: s.users,
        connections: s.connections,
        cumulative: s.cumulative.clone(),
        lag: Some(s.lag),
    };
    second_report(head, &s.endpoints(), names, histograms)
}

/// The live totals as the result has them: the aggregate, each endpoint, the errors.
pub struct LiveTotals {
    pub aggregate: EndpointReport,
    pub endpoints: Vec<EndpointReport>,
    pub errors: Vec<ErrorReport>,
}

/// The live totals; their histograms (cumulative) only when asked, as for `live_second`.
pub fn live_totals(totals: &stats::stream::Totals, names: &[(String, String)], histograms: bool) -> LiveTotals {
    let endpoints = totals
        .endpoints
        .iter()
        .zip(names.iter())
        .filter(|(s, _)| s.has_counts())
        .map(|(s, (m, n))| endpoint_report_with(m, n, s, histograms))
        .collect();
    let aggregate = endpoint_report_with("", "Aggregated", &merged(&totals.endpoints), histograms);
    LiveTotals { aggregate, endpoints, errors: error_reports(&totals.errors, names) }
}

pub fn build(inp: Inputs) -> RunResult {
    let names = &inp.names;
    let mut totals = inp.totals;
    totals.resize_with(names.len().max(totals.len()), EndpointStats::default);
    // A script's endpoint exists from its first request's start; one whose every request was dropped
    // unjudged (an exception in a `catch_response` block, as Locust drops it) has no row, as in Locust.
    let script = inp.kind == "script";
    let none = TimingStats::default();
    let timing = |id: usize| inp.timings.get(id).unwrap_or(&none).report();
    let no_streams = StreamStats::default();
    let stream = |id: usize, events| inp.streams.get(id).unwrap_or(&no_streams).report(events, inp.duration);
    let endpoints: Vec<EndpointReport> = totals
        .iter()
        .zip(names.iter())
        .enumerate()
        .filter(|(_, (s, _))| !script || s.has_counts())
        .map(|(id, (s, (m, n)))| EndpointReport {
            timings: timing(id),
            stream: stream(id, s.events),
            ..endpoint_report(m, n, s)
        })
        .collect();
    let all = merged(&totals);
    let mut all_timings = TimingStats::default();
    for t in &inp.timings {
        all_timings.merge(t);
    }
    let mut all_streams = StreamStats::default();
    for t in &inp.streams {
        all_streams.merge(t);
    }
    let aggregate = EndpointReport {
        timings: all_timings.report(),
        stream: all_streams.report(all.events, inp.duration),
        ..endpoint_report("", "Aggregated", &all)
    };

    let errors = error_reports(&inp.errors, names);

    // Every second of the run gets a row, empty ones included: a stalled server shows as a gap of zeros.
    let last_sec = inp.duration.as_secs_f64().ceil().max(1.0) as u64 - 1;
    let last_sec = last_sec.max(inp.seconds.seconds.keys().next_back().copied().unwrap_or(0));
    let mut running = EndpointStats::default();
    let timeseries = (0..=last_sec)
        .map(|t| {
            let per = &inp.seconds.endpoints(t);
            running.merge(&merged(per));
            let head = SecondHead {
                t,
                unix: inp.start_unix + t as f64,
                users: inp.seconds.users_at(t),
                connections: inp.seconds.connections_at(t),
                cumulative: Cumulative::of(&running),
                lag: inp.seconds.lag.get(&t).copied(),
            };
            second_report(head, per, names, true)
        })
        .collect();

    RunResult {
        squall_version: crate::types::VERSION.to_string(),
        kind: inp.kind,
        url: inp.url,
        method: inp.method,
        start_unix: inp.start_unix,
        duration_s: inp.duration.as_secs_f64(),
        reset_s: inp.reset.map(|r| r.min(inp.duration).as_secs_f64()),
        stop_reason: inp.reason,
        load: inp.load,
        aggregate,
        endpoints,
        errors,
        connect: summarize(&inp.connect, inp.connect.len(), 0, 0, 0),
        connect_histogram: stats::histogram_to_base64(&inp.connect),
        schedule: inp.schedule,
        abandoned: inp.abandoned,
        latency_histogram: buckets(&all.hist),
        timeseries,
        mqtt: None,
    }
}

// The MQTT part of a result (built by mqtt::report).

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    pub fn of(mut v: Vec<f64>) -> Spread {
        if v.is_empty() {
            return Spread { min: 0.0, median: 0.0, max: 0.0 };
        }
        v.sort_by(f64::total_cmp);
        Spread { min: v[0], median: v[v.len() / 2], max: v[v.len() - 1] }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeliveryReport {
    /// Messages put on the wire (never-sent messages excluded).
    pub sent: u64,
    /// Distinct messages the subscribers saw.
    pub delivered: u64,
    pub lost: u64,
    pub duplicated: u64,
    pub out_of_order: u64,
    /// Everything that arrived, duplicates and other publishers' messages included.
    pub received: u64,
    /// Messages without this run's header (another publisher on the same topics).
    pub foreign: u64,
    /// Subscribe-only: distinct senders seen (by their squall header).
    pub senders: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientReport {
    pub index: usize,
    pub id: String,
    pub sent: u64,
    pub published: u64,
    pub failed: u64,
    pub unsent: u64,
    /// Published per second of measured time.
    pub rate: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivered: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duplicated: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MqttReport {
    pub broker: String,
    pub mqtt_version: String,
    pub qos: u8,
    pub topic: String,
    /// The subscription of `--verify` or `--subscribe-only`.
    pub filter: Option<String>,
    pub clients: usize,
    pub first_client: usize,
    pub rate_per_client: Option<f64>,
    pub inflight: usize,
    pub retain: bool,
    pub verify: bool,
    pub subscribe_only: bool,
    /// Seconds spent connecting before the measured time began.
    pub connect_phase_s: f64,
    /// The measured time: from the start of publishing to its end (the duration, or the last
    /// acknowledgement of a run with a message count; a paced run whose generator fell behind runs
    /// to its last late send).
    pub measured_s: f64,
    /// Messages given sequence numbers: sent, or due but never sent (`unsent`).
    pub sent: u64,
    /// Acknowledged (QoS 1 and 2) or written (QoS 0).
    pub published: u64,
    pub failed: u64,
    pub unsent: u64,
    /// Published per second of measured time.
    pub publish_rate: f64,
    pub client_rate: Spread,
    pub delivery: Option<DeliveryReport>,
    pub per_client: Vec<ClientReport>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn histogram_buckets_are_no_finer_than_hdrs() {
        let mut h = Hist::new();
        for v in [1_001_000u64, 1_001_300, 1_001_900, 1_002_200, 1_002_800, 1_003_100] {
            h.record(v);
        }
        let b = buckets(&h);
        assert!(b.iter().all(|b| b.count > 0), "{b:?}");
        assert!(b.windows(2).all(|w| w[0].upper_us < w[1].upper_us), "{b:?}");
        assert_eq!(b.iter().map(|b| b.count).sum::<u64>(), 6);
        assert_eq!(b.last().unwrap().upper_us, h.max());
    }

    use super::*;

    #[test]
    fn the_distribution_counts_every_request_once() {
        // A narrow peak, a tail three decades out, and a bin edge between two values in one HDR bucket.
        let mut s = EndpointStats::default();
        let ok = stats::Outcome::Response { status: 200, body_bytes: 0, wire_bytes: 0 };
        for i in 0..10_000u64 {
            s.record(1_000 + i % 50, &ok);
        }
        for v in [250_000u64, 1_000_000, 1_000_001] {
            s.record(v, &ok);
        }
        let d = distribution(s.within());
        // 50 bins over three decades, 15% each: the peak (1,000-1,049 µs) fills the first, 250 ms and
        // the two slowest one each; the 47 empty ones between are left out.
        assert_eq!(d.len(), 3, "{d:?}");
        assert_eq!(d.iter().map(|b| b.2).sum::<u64>(), 10_003);
        assert_eq!((d[0].0, d.last().unwrap().1), (1_000, 1_000_001), "exact fastest and slowest");
        assert!(d.windows(2).all(|w| w[0].1 <= w[1].0 && w[0].0 <= w[0].1), "in order: {d:?}");
        assert!(d.iter().all(|b| b.2 > 0), "bars with requests only: {d:?}");
        assert_eq!(d.last().unwrap().2, 2, "the two slowest share the last bucket");
        // One value: one bar.
        let mut one = EndpointStats::default();
        one.record(777, &ok);
        assert_eq!(distribution(one.within()), vec![(777, 777, 1)]);
        assert!(distribution(EndpointStats::default().within()).is_empty());
    }

    #[test]
    fn the_spectrum_climbs_to_the_maximum_and_agrees_with_the_percentiles() {
        let mut h = Hist::new();
        for v in 1..=100_000u64 {
            h.record(v);
        }
        let s = spectrum_of(&h);
        assert!(s.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1), "increasing");
        assert_eq!(*s.last().unwrap(), (100.0, h.highest_equivalent(100_000)));
        assert!(s.iter().any(|&(p, _)| p > 99.999), "the tail is there");
        // 5 steps per halving of the distance to 100%: about 5 x log2(100,000) points.
        assert!((60..=120).contains(&s.len()), "{}", s.len());
        let (p, v) = s.iter().copied().find(|&(p, _)| p >= 50.0).unwrap();
        assert_eq!(v, h.highest_equivalent(h.value_at_percentile(p)));
        assert!(spectrum(&stats::new_histogram()).is_empty());
        assert_eq!(spectrum(&h.dense()), s, "HDR's own histogram: the same spectrum");
    }
}
