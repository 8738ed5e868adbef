//! The MQTT part of a run's result: rates over the measured time, per-client counts, how well the
//! schedule was kept, and delivery (published, delivered, lost, duplicated, out of order). The
//! latency tables (CONNECT, PUBLISH acknowledgements, DELIVER end to end) are the same HDR statistics
//! and JSON as HTTP runs.

use super::config::MqttConfig;
use super::delivery::Tracker;
use super::message::TopicTemplate;
use super::publisher::Client;
use super::shared::{MqttShared, CONNECT, DELIVER, PUBLISH};
use crate::stats::lag::{Lag, ScheduleReport};
use crate::stats::result::{self, ClientReport, DeliveryReport, LoadReport, MqttReport, RunResult, Spread};
use crate::stats::{self, Failure, FailureKind, Recorder};
use crate::types::StopReason;
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

pub struct Inputs<'a> {
    pub shared: &'a MqttShared,
    pub reason: StopReason,
    pub load_start: Instant,
    pub measured: Duration,
    pub duration: Duration,
    pub outputs: Vec<(Recorder, Vec<ClientCounts>)>,
    pub subscriber: Option<Recorder>,
    pub tracker: Option<Tracker>,
}

/// What the verifying (or `--subscribe-only`) subscribers subscribe to; None when nothing subscribes.
pub fn subscription(cfg: &MqttConfig, topic: &TopicTemplate) -> Option<String> {
    cfg.subscribe_only.clone().or_else(|| cfg.verify.then(|| topic.filter()))
}

/// The statistics' endpoints by id (`CONNECT`, `PUBLISH`, `DELIVER`): named once, for the live stream
/// from the start of the run and for the result at its end, so that both show the same rows.
pub fn endpoint_names(cfg: &MqttConfig, topic: &TopicTemplate) -> Vec<(String, String)> {
    let delivered = if cfg.subscribe_only.is_none() { "DELIVER" } else { "RECEIVE" };
    let mut names = vec![(String::new(), String::new()); DELIVER + 1];
    names[CONNECT] = ("CONNECT".to_string(), cfg.broker.clone());
    names[PUBLISH] = ("PUBLISH".to_string(), cfg.topic.clone());
    names[DELIVER] = (delivered.to_string(), subscription(cfg, topic).unwrap_or_default());
    names
}

pub fn build(inp: Inputs) -> RunResult {
    let s = inp.shared;
    let cfg = &s.cfg;
    let measured = inp.measured.as_secs_f64();
    let per_second = |n: u64| if measured > 0.0 { n as f64 / measured } else { 0.0 };

    let mut recorders = Vec::new();
    let mut clients: Vec<ClientCounts> = Vec::new();
    let mut lag = Lag::default();
    for (r, c) in inp.outputs {
        lag.add(&r.lag);
        recorders.push(r);
        clients.extend(c);
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
    let filter = subscription(cfg, &s.topic);
    let names = endpoint_names(cfg, &s.topic);
    let mut doc = result::build(result::Inputs {
        kind: "mqtt".into(),
        url: cfg.broker.clone(),
        method: "PUBLISH".into(),
        start_unix: s.core.start_unix,
        load: LoadReport {
            model: if cfg.rate.is_some() { "open" } else { "closed" }.into(),
            connections: if publishing { cfg.clients } else { cfg.subscribers },
            threads: s.threads,
            requests: cfg.messages,
            duration_s: cfg.duration,
            ramp_s: None,
            http2: false,
            keepalive: true,
            timeout_s: Some(cfg.timeout),
        },
        names,
        schedule: cfg.rate.map(|rate| {
            let unsent: u64 = clients.iter().map(|c| c.unsent).sum();
            ScheduleReport::new(rate * cfg.clients as f64, "constant", lag.sent + unsent, &lag, unsent)
        }),
        reason: inp.reason,
        duration: inp.duration,
        reset: None,
        totals,
        timings: Vec::new(), // MQTT has no request and response to break down
        streams: Vec::new(),
        errors,
        connect,
        seconds: s.core.timeline.all(),
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
        client_rate: Spread::of(per_client.iter().map(|c| c.rate).collect()),
        delivery,
        per_client,
    });
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(extra: &str) -> Vec<(String, String)> {
        let cfg = MqttConfig::from_json(&format!(r#"{{"broker": "mqtt://b:1883", "topic": "t/{{client}}/x"{extra}}}"#))
            .unwrap();
        endpoint_names(&cfg, &TopicTemplate::parse(&cfg.topic).unwrap())
    }

    #[test]
    fn the_endpoints_are_named_by_their_ids_for_the_stream_and_the_result() {
        let n = names(r#", "verify": true"#);
        assert_eq!(n[CONNECT], ("CONNECT".into(), "mqtt://b:1883".into()));
        assert_eq!(n[PUBLISH], ("PUBLISH".into(), "t/{client}/x".into()));
        assert_eq!(n[DELIVER], ("DELIVER".into(), "t/+/x".into()), "what the verifying subscriber subscribes to");
        assert_eq!(names("")[DELIVER], ("DELIVER".into(), String::new()), "nothing subscribes");
        assert_eq!(names(r#", "subscribe_only": "a/#""#)[DELIVER], ("RECEIVE".into(), "a/#".into()));
    }
}
