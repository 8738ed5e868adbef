//! Merging the results of several processes (or machines) into one, losslessly: histograms are
//! decoded and added, seconds are aligned on wall-clock time, and the merged document is built by
//! the same code as a single run's. Typed end to end: a field missing from a document is a
//! deserialization error, not a silent zero.

use super::histogram_from_base64;
use super::lag::{Lag, ScheduleReport};
use super::result::{self, ClientReport, ErrorReport, LoadReport, MqttReport, RunResult, Summary};
use super::stream::AllSeconds;
use super::streams::StreamStats;
use super::timing::TimingStats;
use super::{new_histogram, EndpointStats, PackedSecond};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

/// The counts and histogram of one endpoint entry (whole-run or one second's).
fn stats_of(
    name: &str,
    histogram: &str,
    s: &Summary,
    status_codes: &BTreeMap<String, u64>,
) -> Result<EndpointStats, String> {
    let hist: super::Hist =
        histogram_from_base64(histogram).map_err(|m| format!("bad histogram of '{name}': {m}"))?.into();
    let timed = s.requests > 0 && !hist.is_empty();
    Ok(EndpointStats {
        hist,
        min_us: if timed { s.min_us } else { u64::MAX },
        max_us: if timed { s.max_us } else { 0 },
        requests: s.requests,
        failures: s.failures,
        body_bytes: s.body_bytes,
        wire_bytes: s.wire_bytes,
        status: status_codes.iter().filter_map(|(k, n)| Some((k.parse().ok()?, *n))).collect(),
        events: s.events,
        tokens: s.tokens,
    })
}

/// Endpoint ids by (method, name), in order of first appearance.
#[derive(Default)]
struct Names {
    ids: HashMap<(String, String), usize>,
    list: Vec<(String, String)>,
}

impl Names {
    fn id(&mut self, method: &str, name: &str) -> usize {
        let key = (method.to_string(), name.to_string());
        if let Some(&id) = self.ids.get(&key) {
            return id;
        }
        self.list.push(key.clone());
        self.ids.insert(key, self.list.len() - 1);
        self.list.len() - 1
    }
}

fn slot(v: &mut Vec<EndpointStats>, id: usize) -> &mut EndpointStats {
    if v.len() <= id {
        v.resize_with(id + 1, EndpointStats::default);
    }
    &mut v[id]
}

/// Parses result documents (JSON) and merges them.
pub fn merge_json(docs: &[String]) -> Result<RunResult, String> {
    let results = docs
        .iter()
        .map(|d| serde_json::from_str::<RunResult>(d).map_err(|e| format!("not a squall result: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    merge(results)
}

/// The value every document has, if they agree.
fn same<T: PartialEq>(docs: &[RunResult], of: impl Fn(&RunResult) -> T) -> Option<T> {
    let first = of(docs.first()?);
    docs.iter().skip(1).all(|d| of(d) == first).then_some(first)
}

pub fn merge(docs: Vec<RunResult>) -> Result<RunResult, String> {
    let first = docs.first().ok_or("nothing to merge")?;
    let start = docs.iter().map(|d| d.start_unix).fold(f64::INFINITY, f64::min);
    let mut names = Names::default();
    let mut totals: Vec<EndpointStats> = Vec::new();
    let mut timings: Vec<TimingStats> = Vec::new();
    let mut streams: Vec<StreamStats> = Vec::new();
    let mut seconds: BTreeMap<u64, Vec<EndpointStats>> = BTreeMap::new();
    let mut users: BTreeMap<u64, u64> = BTreeMap::new();
    let mut connections: Option<BTreeMap<u64, u64>> = None;
    let mut connect = new_histogram();
    let mut end = 0.0f64;
    let (mut abandoned, mut reason) = (0, first.stop_reason);
    let mut errors: BTreeMap<(String, String, String, String), ErrorReport> = BTreeMap::new();
    let mut schedule: Option<ScheduleReport> = None;
    let mut lags: BTreeMap<u64, Lag> = BTreeMap::new();
    let mut mqtt: Option<MqttReport> = None;

    for doc in &docs {
        let offset = (doc.start_unix - start).round() as u64;
        end = end.max(doc.start_unix - start + doc.duration_s);
        abandoned += doc.abandoned;
        reason = reason.combine(doc.stop_reason);
        let h = histogram_from_base64(&doc.connect_histogram).map_err(|m| format!("bad connect histogram: {m}"))?;
        connect.add(h).map_err(|e| format!("{e:?}"))?;
        for e in &doc.endpoints {
            let id = names.id(&e.method, &e.name);
            slot(&mut totals, id).merge(&stats_of(&e.name, &e.histogram, &e.summary, &e.status_codes)?);
            if let Some(t) = &e.timings {
                if timings.len() <= id {
                    timings.resize_with(id + 1, TimingStats::default);
                }
                timings[id].merge(&TimingStats::from_report(t).map_err(|m| format!("{m} of '{}'", e.name))?);
            }
            if let Some(t) = &e.stream {
                if streams.len() <= id {
                    streams.resize_with(id + 1, StreamStats::default);
                }
                streams[id].merge(&StreamStats::from_report(t).map_err(|m| format!("{m} of '{}'", e.name))?);
            }
        }
        for sec in &doc.timeseries {
            let t = sec.t + offset;
            *users.entry(t).or_default() += sec.users;
            if let Some(n) = sec.connections {
                *connections.get_or_insert_default().entry(t).or_default() += n;
            }
            if let Some(s) = &sec.schedule {
                lags.entry(t).or_default().add(&s.lag());
            }
            for e in &sec.endpoints {
                let id = names.id(&e.method, &e.name);
                let part = stats_of(&e.name, &e.histogram, &e.summary, &e.status_codes)?;
                slot(seconds.entry(t).or_default(), id).merge(&part);
            }
        }
        for e in &doc.errors {
            let key = (e.method.clone(), e.name.clone(), e.kind.clone(), e.message.clone());
            let (first_seen, last_seen) = (e.first_seen_s + offset as f64, e.last_seen_s + offset as f64);
            errors
                .entry(key)
                .and_modify(|m| {
                    m.count += e.count;
                    m.first_seen_s = m.first_seen_s.min(first_seen);
                    m.last_seen_s = m.last_seen_s.max(last_seen);
                })
                .or_insert_with(|| ErrorReport { first_seen_s: first_seen, last_seen_s: last_seen, ..e.clone() });
        }
        match (&mut schedule, &doc.schedule) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => schedule = Some(b.clone()),
            _ => {}
        }
        match (&mut mqtt, &doc.mqtt) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => mqtt = Some(b.clone()),
            _ => {}
        }
    }
    if let Some(m) = mqtt.as_mut() {
        m.rates();
    }
    totals.resize_with(names.list.len(), EndpointStats::default);
    let load = LoadReport {
        model: first.load.model.clone(),
        // The closed model's connections are the most seen at once; the open model's `-c` is a cap
        // (its seconds count the connections opened), and each process had its own.
        connections: if first.load.model == "open" {
            docs.iter().map(|d| d.load.connections).sum()
        } else {
            users.values().copied().max().unwrap_or(0) as usize
        },
        threads: docs.len(),
        // What was asked, as a single run's load says it: the processes' shares of `-n` added up, and
        // `-t` and `--ramp` when they all had the same (a process's measured time is the result's
        // `duration_s`); else (documents of different runs) the span the documents cover.
        requests: docs.iter().map(|d| d.load.requests).sum(),
        duration_s: same(&docs, |d| d.load.duration_s).unwrap_or(Some(end)),
        ramp_s: same(&docs, |d| d.load.ramp_s).flatten(),
        http2: first.load.http2,
        keepalive: first.load.keepalive,
        timeout_s: first.load.timeout_s,
    };
    // Each process's totals count from its own reset, if any: the merged ones from the mean of those
    // moments (the processes reset as their users have all started, within a second of each other),
    // and from the start if any process did not reset.
    let resets: Option<Vec<f64>> = docs.iter().map(|d| d.reset_s.map(|r| d.start_unix - start + r)).collect();
    let reset = resets.map(|r| Duration::from_secs_f64((r.iter().sum::<f64>() / r.len() as f64).max(0.0)));
    let mut merged = result::build(result::Inputs {
        kind: first.kind.clone(),
        url: first.url.clone(),
        method: first.method.clone(),
        start_unix: start,
        load,
        names: names.list,
        schedule,
        reason,
        duration: Duration::from_secs_f64(end.max(0.0)),
        reset,
        totals,
        timings,
        streams,
        errors: HashMap::new(),
        connect,
        seconds: AllSeconds {
            seconds: seconds.iter().map(|(&t, v)| (t, PackedSecond::pack(v))).collect(),
            users,
            connections,
            lag: lags,
        },
        abandoned,
    });
    let mut errors: Vec<ErrorReport> = errors.into_values().collect();
    errors.sort_by(|a, b| b.count.cmp(&a.count).then(a.message.cmp(&b.message)));
    merged.errors = errors;
    if let Some(m) = &mqtt {
        // A subscribe-only or verify-less run has no DELIVER counts: as in a single run's document.
        let publishing = !m.subscribe_only;
        merged.endpoints.retain(|e| e.summary.requests > 0 || (publishing && e.method == "PUBLISH"));
    }
    merged.mqtt = mqtt;
    Ok(merged)
}

impl MqttReport {
    /// Adds another process's share of the same run (its own clients).
    pub fn merge(&mut self, o: &MqttReport) {
        self.sent += o.sent;
        self.published += o.published;
        self.failed += o.failed;
        self.unsent += o.unsent;
        self.clients += o.clients;
        self.first_client = self.first_client.min(o.first_client);
        self.measured_s = self.measured_s.max(o.measured_s);
        self.connect_phase_s = self.connect_phase_s.max(o.connect_phase_s);
        self.per_client.extend(o.per_client.iter().cloned());
        self.per_client.sort_by_key(|c| c.index);
        match (&mut self.delivery, &o.delivery) {
            (Some(a), Some(b)) => {
                a.sent += b.sent;
                a.delivered += b.delivered;
                a.lost += b.lost;
                a.duplicated += b.duplicated;
                a.out_of_order += b.out_of_order;
                a.received += b.received;
                a.foreign += b.foreign;
                a.senders += b.senders;
            }
            (None, Some(b)) => self.delivery = Some(b.clone()),
            _ => {}
        }
    }

    /// Rates over the measured time, from the counts (after a merge).
    pub fn rates(&mut self) {
        let per_second = |n: u64, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
        for c in &mut self.per_client {
            c.rate = per_second(c.published, self.measured_s);
        }
        self.publish_rate = per_second(self.published, self.measured_s);
        self.client_rate = result::Spread::of(self.per_client.iter().map(|c: &ClientReport| c.rate).collect());
    }
}
