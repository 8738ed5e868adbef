//! MQTT for scripted users (`MqttUser` in a locustfile): each user's connection is a task on the
//! script session's engine thread. Operations come in batches from the script; the engine times them
//! (CONNACK, PUBACK/PUBCOMP or the PINGRESP after a QoS 0 message, SUBACK) and records them in the
//! session's statistics under Locust's names (`MQTT connect`, `MQTT publish:1:topic`, ...), so MQTT,
//! REST and GraphQL users share one table. Messages that arrive for a user's subscriptions go back to
//! the script.

use super::codec::{Hello, Incoming, Version};
use super::conn::Conn;
use crate::net::Connector;
use crate::stats::{Failure, FailureKind, Outcome};
use bytes::Bytes;
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// One operation a script asks for. A publish's or subscription's `name` is its name in the statistics
/// when the script gives one (a client's own `_generate_event_name`), else Locust's `publish:QOS:TOPIC`
/// or `subscribe:QOS:FILTER`.
pub enum Op {
    Connect { id: u64, broker: String, hello: OwnedHello, version: Version, timeout: Duration, insecure: bool },
    Publish { id: u64, topic: String, payload: Bytes, qos: u8, retain: bool, name: Option<String> },
    Subscribe { id: u64, filter: String, qos: u8, name: Option<String> },
    Disconnect { id: u64 },
}

pub struct OwnedHello {
    pub client_id: String,
    pub keepalive: u16,
    pub clean: bool,
    pub login: Option<(String, String)>,
}

/// What the engine reports back: an operation's end, or a message for the user.
pub enum Event {
    Done { id: u64, elapsed_us: u64, error: Option<String> },
    Message { user: u64, topic: String, payload: Vec<u8>, qos: u8 },
}

/// The session's side: records a timed outcome under (method, name) and hands events to the script.
pub trait Sink {
    fn record(&self, method: &str, name: &str, latency: Duration, outcome: &Outcome);
    fn event(&self, e: Event);
}

/// The channel into one user's connection task.
pub type UserTx = mpsc::UnboundedSender<Op>;

enum Waiting {
    Publish { id: u64, name: String, at: Instant, bytes: u64 },
    Subscribe { id: u64, name: String, at: Instant },
}

/// One user's MQTT connection: runs its operations in order of arrival until the user disconnects
/// or the session ends.
pub async fn user_task<S: Sink>(sink: std::rc::Rc<S>, user: u64, mut rx: mpsc::UnboundedReceiver<Op>) {
    let mut conn: Option<Conn> = None;
    let mut next_pkid: u16 = 0;
    let mut waiting: HashMap<u16, Waiting> = HashMap::new();
    let mut pings: VecDeque<Vec<(u64, String, Instant, u64)>> = VecDeque::new();
    let mut keepalive = Duration::from_secs(60);
    let mut last_write = Instant::now();
    loop {
        let op = match conn.as_mut() {
            None => match rx.recv().await {
                Some(op) => op,
                None => return,
            },
            Some(c) => {
                let ping_at = last_write + keepalive / 2;
                tokio::select! {
                    biased;
                    op = rx.recv() => match op {
                        Some(op) => op,
                        None => return conn.take().unwrap().close().await,
                    },
                    r = c.fill() => {
                        let mut broken = r.err();
                        while broken.is_none() {
                            match c.decoded() {
                                Ok(Some(p)) => on_packet(&*sink, user, c, p, &mut waiting, &mut pings),
                                Ok(None) => break,
                                Err(f) => broken = Some(f),
                            }
                        }
                        if let Err(f) = c.flush().await {
                            broken.get_or_insert(f);
                        }
                        if let Some(f) = broken {
                            fail_all(&*sink, f, &mut waiting, &mut pings);
                            conn = None;
                        }
                        continue;
                    }
                    _ = tokio::time::sleep_until(ping_at.into()), if !keepalive.is_zero() => {
                        c.version.pingreq(&mut c.wbuf);
                        pings.push_back(Vec::new());
                        last_write = Instant::now();
                        if let Err(f) = c.flush().await {
                            fail_all(&*sink, f, &mut waiting, &mut pings);
                            conn = None;
                        }
                        continue;
                    }
                }
            }
        };
        match op {
            Op::Connect { id, broker, hello, version, timeout, insecure } => {
                let t0 = Instant::now();
                let result = connect(&broker, &hello, version, timeout, insecure).await;
                let took = t0.elapsed();
                let error = result.as_ref().err().map(Failure::message);
                let outcome = match &result {
                    Ok(_) => Outcome::Judged { status: 0, body_bytes: 0, failure: None },
                    Err(f) => Outcome::Failed(f.clone()),
                };
                sink.record("MQTT", "connect", took, &outcome);
                sink.event(Event::Done { id, elapsed_us: took.as_micros() as u64, error });
                if let Ok(c) = result {
                    keepalive = Duration::from_secs(hello.keepalive as u64);
                    last_write = Instant::now();
                    conn = Some(c);
                }
            }
            Op::Disconnect { id } => {
                if let Some(c) = conn.take() {
                    c.close().await;
                }
                fail_all(
                    &*sink,
                    Failure::new(FailureKind::Closed, "(the script disconnected)"),
                    &mut waiting,
                    &mut pings,
                );
                sink.event(Event::Done { id, elapsed_us: 0, error: None });
            }
            Op::Publish { id, topic, payload, qos, retain, name } => {
                let name = name.unwrap_or_else(|| format!("publish:{qos}:{topic}"));
                let Some(c) = conn.as_mut() else {
                    not_connected(&*sink, id, &name);
                    continue;
                };
                let bytes = payload.len() as u64;
                let at = Instant::now();
                next_pkid = next_pkid.checked_add(1).unwrap_or(1);
                c.version.publish(&mut c.wbuf, &topic, qos, retain, next_pkid, payload);
                if qos == 0 {
                    // Confirmed by the PINGRESP to this PINGREQ: the broker read the message.
                    c.version.pingreq(&mut c.wbuf);
                    pings.push_back(vec![(id, name, at, bytes)]);
                } else {
                    waiting.insert(next_pkid, Waiting::Publish { id, name, at, bytes });
                }
                last_write = at;
                if let Err(f) = c.flush().await {
                    fail_all(&*sink, f, &mut waiting, &mut pings);
                    conn = None;
                }
            }
            Op::Subscribe { id, filter, qos, name } => {
                let name = name.unwrap_or_else(|| format!("subscribe:{qos}:{filter}"));
                let Some(c) = conn.as_mut() else {
                    not_connected(&*sink, id, &name);
                    continue;
                };
                next_pkid = next_pkid.checked_add(1).unwrap_or(1);
                c.version.subscribe(&mut c.wbuf, next_pkid, std::slice::from_ref(&filter), qos);
                waiting.insert(next_pkid, Waiting::Subscribe { id, name, at: Instant::now() });
                last_write = Instant::now();
                if let Err(f) = c.flush().await {
                    fail_all(&*sink, f, &mut waiting, &mut pings);
                    conn = None;
                }
            }
        }
    }
}

async fn connect(
    broker: &str,
    hello: &OwnedHello,
    version: Version,
    timeout: Duration,
    insecure: bool,
) -> Result<Conn, Failure> {
    let io = |m: String| Failure::new(FailureKind::Io, m);
    let (tls_on, host, port) = super::run::broker_address(broker).map_err(io)?;
    let addrs = crate::net::resolve_async(&host, port).await.map_err(io)?;
    let tls = tls_on.then(|| (crate::net::tls::client_config(insecure, &[b"mqtt"]), host.as_str()));
    let connector = Connector::new(addrs, tls).map_err(io)?;
    let login = hello.login.as_ref().map(|(u, p)| (u.as_str(), p.as_str()));
    let max_packet = super::codec::MAX_INCOMING;
    let h = Hello { client_id: &hello.client_id, keepalive: hello.keepalive, clean: hello.clean, login, max_packet };
    Conn::open(&connector, 0, version, &h, timeout).await
}

fn not_connected<S: Sink>(sink: &S, id: u64, name: &str) {
    let f = Failure::new(FailureKind::Closed, "(not connected)");
    sink.record("MQTT", name, Duration::ZERO, &Outcome::Failed(f.clone()));
    sink.event(Event::Done { id, elapsed_us: 0, error: Some(f.message()) });
}

fn done<S: Sink>(sink: &S, id: u64, name: &str, at: Instant, bytes: u64, failure: Option<Failure>) {
    let took = at.elapsed();
    let error = failure.as_ref().map(Failure::message);
    sink.record("MQTT", name, took, &Outcome::Judged { status: 0, body_bytes: bytes, failure });
    sink.event(Event::Done { id, elapsed_us: took.as_micros() as u64, error });
}

fn fail_all<S: Sink>(
    sink: &S,
    f: Failure,
    waiting: &mut HashMap<u16, Waiting>,
    pings: &mut VecDeque<Vec<(u64, String, Instant, u64)>>,
) {
    for (_, w) in waiting.drain() {
        match w {
            Waiting::Publish { id, name, at, bytes } => done(sink, id, &name, at, bytes, Some(f.clone())),
            Waiting::Subscribe { id, name, at } => done(sink, id, &name, at, 0, Some(f.clone())),
        }
    }
    for (id, name, at, bytes) in pings.drain(..).flatten() {
        done(sink, id, &name, at, bytes, Some(f.clone()));
    }
}

fn on_packet<S: Sink>(
    sink: &S,
    user: u64,
    c: &mut Conn,
    p: Incoming,
    waiting: &mut HashMap<u16, Waiting>,
    pings: &mut VecDeque<Vec<(u64, String, Instant, u64)>>,
) {
    let refused =
        |what: &str, r: Option<String>| r.map(|r| Failure::new(FailureKind::Refused, format!("{what} refused: {r}")));
    match p {
        Incoming::PubAck { pkid, refused: r } | Incoming::PubRec { pkid, refused: r @ Some(_) } => {
            if let Some(Waiting::Publish { id, name, at, bytes }) = waiting.remove(&pkid) {
                done(sink, id, &name, at, bytes, refused("publish", r));
            }
        }
        Incoming::PubRec { pkid, refused: None } => c.version.pubrel(&mut c.wbuf, pkid),
        Incoming::PubComp(pkid) => {
            if let Some(Waiting::Publish { id, name, at, bytes }) = waiting.remove(&pkid) {
                done(sink, id, &name, at, bytes, None);
            }
        }
        Incoming::SubAck { pkid, granted } => {
            if let Some(Waiting::Subscribe { id, name, at }) = waiting.remove(&pkid) {
                let f = granted
                    .first()
                    .copied()
                    .flatten()
                    .is_none()
                    .then(|| Failure::new(FailureKind::Refused, "subscription refused"));
                done(sink, id, &name, at, 0, f);
            }
        }
        Incoming::PingResp => {
            for (id, name, at, bytes) in pings.pop_front().unwrap_or_default() {
                done(sink, id, &name, at, bytes, None);
            }
        }
        Incoming::Publish { qos, pkid, payload, topic } => {
            match qos {
                1 => c.version.puback(&mut c.wbuf, pkid),
                2 => c.version.pubrec(&mut c.wbuf, pkid),
                _ => {}
            }
            sink.event(Event::Message { user, topic, payload: payload.to_vec(), qos });
        }
        Incoming::PubRel(pkid) => c.version.pubcomp(&mut c.wbuf, pkid),
        _ => {}
    }
}
