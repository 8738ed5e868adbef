//! The MQTT part of a run's result: rates over the measured time, per-client counts, how well the
//! schedule was kept, and delivery (published, delivered, lost, duplicated, out of order). The
//! latency tables (CONNECT, PUBLISH acknowledgements, DELIVER end to end) are the same HDR statistics
//! and JSON as HTTP runs.

use super::publisher::Client;
use super::run::{MqttShared, DELIVER};
use super::verify::Tracker;
use crate::result::{self, LoadReport, RunResult};
use crate::runner::{StopReason, LATE_AFTER};
use crate::stats::{self, Failure, FailureKind, Recorder};
use serde::Serialize;
use std::collections::HashMap;
use std::time::{Duration, Instant};

pub struct ClientCounts {
    index: usize,
    id: String,
    sent: u64,
    published: u64,
    failed: u64,
    unsent: u64,
}

impl ClientCounts {
    pub fn of(c: &Client) -> Self {
        ClientCounts {
            index: c.index,
            id: c.id.clone(),
            sent: c.sent.get(),
            published: c.published.get(),
            failed: c.failed.get(),
            unsent: c.unsent.get(),
        }
    }
}

pub struct ThreadSchedule {
    pub on_schedule: u64,
    pub late: u64,
    pub lag_sum_us: u64,
    pub lag_max_us: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Spread {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScheduleReport {
    /// Paced messages sent.
    pub paced: u64,
    /// Sent more than `late_after_ms` after their intended time (window full, or a busy generator).
    pub late: u64,
    pub late_after_ms: u64,
    pub mean_lag_us: f64,
    pub max_lag_us: u64,
}

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
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

#[derive(Debug, Clone, Serialize)]
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
    pub schedule: Option<ScheduleReport>,
    pub delivery: Option<DeliveryReport>,
    pub per_client: Vec<ClientReport>,
}

pub struct Inputs<'a> {
    pub shared: &'a MqttShared,
    pub reason: StopReason,
    pub load_start: Instant,
    pub measured: Duration,
    pub duration: Duration,
    pub outputs: Vec<(Recorder, Vec<ClientCounts>, ThreadSchedule)>,
    pub subscriber: Option<Recorder>,
    pub tracker: Option<Tracker>,
}

fn spread(mut v: Vec<f64>) -> Spread {
    if v.is_empty() {
        return Spread { min: 0.0, median: 0.0, max: 0.0 };
    }
    v.sort_by(f64::total_cmp);
    Spread { min: v[0], median: v[v.len() / 2], max: v[v.len() - 1] }
}

pub fn build(inp: Inputs) -> RunResult {
    let s = inp.shared;
    let cfg = &s.cfg;
    let measured = inp.measured.as_secs_f64();
    let per_second = |n: u64| if measured > 0.0 { n as f64 / measured } else { 0.0 };

    let mut recorders = Vec::new();
    let mut clients: Vec<ClientCounts> = Vec::new();
    let mut sched = ThreadSchedule { on_schedule: 0, late: 0, lag_sum_us: 0, lag_max_us: 0 };
    for (r, c, t) in inp.outputs {
        recorders.push(r);
        clients.extend(c);
        sched.on_schedule += t.on_schedule;
        sched.late += t.late;
        sched.lag_sum_us += t.lag_sum_us;
        sched.lag_max_us = sched.lag_max_us.max(t.lag_max_us);
    }
    clients.sort_by_key(|c| c.index);

    let mut per_client: Vec<ClientReport> = clients
        .iter()
        .map(|c| ClientReport {
            index: c.index,
            id: c.id.clone(),
            sent: c.sent,
            published: c.published,
            failed: c.failed,
            unsent: c.unsent,
            rate: per_second(c.published),
            delivered: None,
            lost: None,
            duplicated: None,
            out_of_order: None,
        })
        .collect();

    let mut delivery = None;
    let mut subscriber = inp.subscriber;
    if let Some(t) = &inp.tracker {
        let mut d = DeliveryReport {
            sent: 0,
            delivered: 0,
            lost: 0,
            duplicated: 0,
            out_of_order: 0,
            received: t.received,
            foreign: t.foreign,
            senders: t.senders.len() as u64,
        };
        if cfg.verify {
            for (report, seen) in per_client.iter_mut().zip(&t.clients) {
                // Sequence numbers of never-sent messages can't arrive, so they don't count as lost.
                let sent = report.sent - report.unsent;
                let delivered = seen.delivered_below(report.sent);
                let lost = sent.saturating_sub(delivered);
                report.delivered = Some(delivered);
                report.lost = Some(lost);
                report.duplicated = Some(seen.duplicated);
                report.out_of_order = Some(seen.out_of_order);
                d.sent += sent;
                d.delivered += delivered;
                d.lost += lost;
                d.duplicated += seen.duplicated;
                d.out_of_order += seen.out_of_order;
            }
            if let Some(r) = subscriber.as_mut() {
                r.fail_untimed(Instant::now(), DELIVER, Failure::new(FailureKind::Lost, ""), d.lost);
            }
        } else {
            // Subscribe-only: a gap in a sender's sequence numbers is a loss.
            for seen in t.senders.values() {
                let expected = seen.highest().map_or(0, |h| h + 1);
                d.sent += expected;
                d.delivered += seen.unique;
                d.lost += expected.saturating_sub(seen.unique);
                d.duplicated += seen.duplicated;
                d.out_of_order += seen.out_of_order;
            }
        }
        delivery = Some(d);
    }
    if let Some(r) = subscriber {
        recorders.push(r);
    }

    let mut totals = Vec::new();
    let mut errors = HashMap::new();
    let mut connect = stats::new_histogram();
    for mut r in recorders {
        r.flush();
        stats::merge_vec(&mut totals, &r.totals);
        stats::merge_errors(&mut errors, r.errors);
        connect.add(&r.connect).expect("auto-resizing histograms always merge");
    }

    let publishing = cfg.subscribe_only.is_none();
    let filter = cfg.subscribe_only.clone().or_else(|| cfg.verify.then(|| s.topic.filter()));
    let names = vec![
        ("CONNECT".to_string(), cfg.broker.clone()),
        ("PUBLISH".to_string(), cfg.topic.clone()),
        (if publishing { "DELIVER" } else { "RECEIVE" }.to_string(), filter.clone().unwrap_or_default()),
    ];
    let ramp = cfg.connect_rate;
    let n = cfg.clients as u64;
    let users_at = |t: u64| match ramp {
        Some(r) if publishing => n.min(((t + 1) as f64 * r).ceil() as u64),
        _ if publishing => n,
        _ => cfg.subscribers as u64,
    };
    let mut doc = result::build(result::Inputs {
        kind: "mqtt",
        url: cfg.broker.clone(),
        method: "PUBLISH".into(),
        start_unix: s.start_unix,
        load: LoadReport {
            model: if cfg.rate.is_some() { "open" } else { "closed" }.into(),
            connections: if publishing { cfg.clients } else { cfg.subscribers },
            threads: s.threads,
            requests: cfg.messages,
            duration_s: cfg.duration,
            ramp_s: None,
            http2: false,
            keepalive: true,
            timeout_s: cfg.timeout,
        },
        names,
        users_at: &users_at,
        open_model: None,
        reason: inp.reason,
        duration: inp.duration,
        totals,
        errors,
        connect,
        timeline: s.timeline.take_all(),
        abandoned: 0,
    });
    doc.endpoints.retain(|e| e.summary.requests > 0 || (publishing && e.method == "PUBLISH"));

    let published: u64 = clients.iter().map(|c| c.published).sum();
    doc.mqtt = Some(MqttReport {
        broker: cfg.broker.clone(),
        mqtt_version: if s.version == super::codec::Version::V5 { "5" } else { "3.1.1" }.into(),
        qos: cfg.qos,
        topic: cfg.topic.clone(),
        filter,
        clients: if publishing { cfg.clients } else { 0 },
        first_client: cfg.first_client,
        rate_per_client: cfg.rate,
        inflight: cfg.inflight,
        retain: cfg.retain,
        verify: cfg.verify,
        subscribe_only: !publishing,
        connect_phase_s: inp.load_start.duration_since(s.start).as_secs_f64(),
        measured_s: measured,
        sent: clients.iter().map(|c| c.sent).sum(),
        published,
        failed: clients.iter().map(|c| c.failed).sum(),
        unsent: clients.iter().map(|c| c.unsent).sum(),
        publish_rate: per_second(published),
        client_rate: spread(per_client.iter().map(|c| c.rate).collect()),
        schedule: cfg.rate.map(|_| ScheduleReport {
            paced: sched.on_schedule,
            late: sched.late,
            late_after_ms: LATE_AFTER.as_millis() as u64,
            mean_lag_us: if sched.on_schedule == 0 { 0.0 } else { sched.lag_sum_us as f64 / sched.on_schedule as f64 },
            max_lag_us: sched.lag_max_us,
        }),
        delivery,
        per_client,
    });
    doc
}
