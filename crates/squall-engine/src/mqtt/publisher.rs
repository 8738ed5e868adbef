//! The simulated devices: one tokio task per client on its thread's runtime. Each connects (at the
//! connect rate, reconnecting after a failure), waits for the load to start, then publishes on its own
//! schedule (or as fast as its in-flight window allows) and counts a message published only when it
//! is acknowledged: QoS 1 by PUBACK, QoS 2 by PUBCOMP, and QoS 0 by the PINGRESP to a PINGREQ sent
//! right after it. A broker answers a connection's packets in order, so that PINGRESP proves the broker
//! has read the messages before it, where counting them as written would count kernel buffers.

use super::codec::Hello;
use super::conn::Conn;
use super::header::{unix_us, Header};
use super::shared::{MqttShared, Phase, CONNECT, PUBLISH};
use crate::run::clock::Pacer;
use crate::stats::{Failure, FailureKind, Outcome, Recorder};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Messages encoded into one write when several are due at once.
const BATCH: usize = 64;
/// Connections handshaking at once per thread: a burst of thousands would overflow the broker's
/// listen backlog and turn into one-second SYN retries.
const CONNECTING_AT_ONCE: usize = 16;

/// One simulated device, as its thread's watchdog and the final report see it.
pub struct Client {
    pub index: usize,
    pub id: String,
    /// The topic when it doesn't change per message.
    topic: Option<String>,
    wake: Notify,
    /// Woken by the thread's pacer when the next message is due.
    pace: Rc<Notify>,
    /// Set by the watchdog: a message has waited longer than the timeout for its acknowledgement.
    timed_out: Cell<bool>,
    ping_due: Cell<bool>,
    last_write: Cell<Instant>,
    /// Send times of unacknowledged messages by slot (packet id - 1), with their QoS 2 stage.
    window: RefCell<Vec<Option<Slot>>>,
    /// PINGREQs awaiting their PINGRESP, oldest first, each with the QoS 0 messages it confirms.
    pings: RefCell<VecDeque<Ping>>,
    pub sent: Cell<u64>,
    pub published: Cell<u64>,
    pub failed: Cell<u64>,
    /// Due but never sent: the client had no connection, or the run ended first.
    pub unsent: Cell<u64>,
}

impl Client {
    /// An acknowledgement (or a PINGRESP) has been awaited longer than the timeout.
    fn overdue(&self, now: Instant, timeout: Duration) -> bool {
        self.window.borrow().iter().flatten().any(|s| now.duration_since(s.written_at) > timeout)
            || self.pings.borrow().front().is_some_and(|p| now.duration_since(p.sent_at) > timeout)
    }
}

struct Ping {
    sent_at: Instant,
    /// (send time, payload bytes) of each QoS 0 message written before this PINGREQ.
    messages: Vec<(Instant, u32)>,
}

#[derive(Clone, Copy)]
struct Slot {
    /// Intended send time when paced (latency counts from it), else the write time.
    sent_at: Instant,
    /// When it was written: the acknowledgement timeout counts from here, not from a schedule it was late for.
    written_at: Instant,
    /// QoS 2: PUBREC came, PUBCOMP awaited.
    released: bool,
    bytes: u32,
}

/// What one worker thread keeps: its clients, its recorder, and how the schedule was kept.
pub struct ThreadCtx {
    pub shared: Arc<MqttShared>,
    /// Paced runs: precise wake-ups at intended send times.
    pub pacer: Option<Rc<Pacer>>,
    pub recorder: RefCell<Recorder>,
    pub clients: RefCell<Vec<Rc<Client>>>,
    connecting: tokio::sync::Semaphore,
    /// When the last message was published (acknowledged, or written at QoS 0).
    pub last_publish: Cell<Option<Instant>>,
    /// When the last paced message was written: after the end if the generator fell behind.
    pub last_paced_send: Cell<Option<Instant>>,
}

impl ThreadCtx {
    pub fn new(shared: Arc<MqttShared>, recorder: Recorder, pacer: Option<Rc<Pacer>>) -> Self {
        ThreadCtx {
            shared,
            pacer,
            recorder: RefCell::new(recorder),
            clients: RefCell::new(Vec::new()),
            connecting: tokio::sync::Semaphore::new(CONNECTING_AT_ONCE),
            last_publish: Cell::new(None),
            last_paced_send: Cell::new(None),
        }
    }

    pub fn add_client(&self, index: usize) -> Rc<Client> {
        let s = &self.shared;
        let id = format!("{}{}", s.cfg.client_id_prefix, index);
        let topic = (!s.topic.has_seq()).then(|| s.topic.render(index, &id, 0));
        let c = Rc::new(Client {
            index,
            id,
            topic,
            wake: Notify::new(),
            pace: Rc::new(Notify::new()),
            timed_out: Cell::new(false),
            ping_due: Cell::new(false),
            last_write: Cell::new(Instant::now()),
            window: RefCell::new(Vec::new()),
            pings: RefCell::new(VecDeque::new()),
            sent: Cell::new(0),
            published: Cell::new(0),
            failed: Cell::new(0),
            unsent: Cell::new(0),
        });
        self.clients.borrow_mut().push(c.clone());
        c
    }

    fn record(&self, endpoint: usize, latency: Duration, outcome: &Outcome) {
        let now = Instant::now();
        if endpoint == PUBLISH {
            self.last_publish.set(Some(now));
        }
        self.recorder.borrow_mut().record(now, endpoint, latency, outcome);
    }

    /// Wakes every client so it sees a new phase.
    pub fn wake_all(&self) {
        for c in self.clients.borrow().iter() {
            c.wake.notify_one();
        }
    }

    /// Every 100 ms: flags clients whose oldest message is past the timeout, or that owe a PINGREQ.
    pub async fn watchdog(self: Rc<Self>) {
        let timeout = self.shared.cfg.timeout();
        let keepalive = Duration::from_secs(self.shared.cfg.keepalive as u64);
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        loop {
            tick.tick().await;
            if self.shared.phase() == Phase::Closed {
                return;
            }
            let now = Instant::now();
            for c in self.clients.borrow().iter() {
                let late = c.overdue(now, timeout);
                let idle = !keepalive.is_zero() && now.duration_since(c.last_write.get()) > keepalive / 2;
                if late || idle {
                    c.timed_out.set(c.timed_out.get() | late);
                    c.ping_due.set(c.ping_due.get() | idle);
                    c.wake.notify_one();
                }
            }
        }
    }
}

/// Why a connected session ended.
enum End {
    /// Nothing more to send, nothing in flight.
    Done,
    Broken(Failure),
}

/// A client's publishing schedule and sequence.
struct Plan {
    /// Next intended send time (paced runs).
    due: Option<Instant>,
    interval: Duration,
    /// Paced runs with a duration: nothing is due at or after this.
    until: Option<Instant>,
}

pub async fn run_client(ctx: Rc<ThreadCtx>, c: Rc<Client>) {
    let s = ctx.shared.clone();
    let cfg = &s.cfg;
    if let Some(rate) = cfg.connect_rate {
        let local = c.index - cfg.first_client;
        tokio::time::sleep_until((s.start + Duration::from_secs_f64(local as f64 / rate)).into()).await;
    }
    let mut conn = connect(&ctx, &c).await;
    s.first_attempt_done.fetch_add(1, Ordering::SeqCst);
    let load_start = s.wait_for_load(&c.wake).await;
    let Some(load_start) = load_start else { return close(conn).await };

    let mut plan = Plan { due: None, interval: Duration::ZERO, until: None };
    if let Some(rate) = cfg.rate {
        // Clients are spread evenly over one interval so that they don't all publish in the same instant.
        plan.interval = Duration::from_secs_f64(1.0 / rate);
        let local = (c.index - cfg.first_client) as f64 / cfg.clients as f64;
        let begin = if cfg.connect_rate.is_some() { Instant::now().max(load_start) } else { load_start };
        plan.due = Some(begin + plan.interval.mul_f64(local));
        plan.until = cfg.duration().map(|d| load_start + d);
    }
    let window = cfg.inflight.min(65_535);
    loop {
        if let Some(mut live) = conn.take() {
            let w = live.receive_max.map_or(window, |m| window.min(m as usize).max(1));
            *c.window.borrow_mut() = vec![None; if cfg.qos == 0 { 0 } else { w }];
            match publish(&ctx, &c, &mut live, &mut plan).await {
                End::Done => {
                    // Stopped while behind schedule (the generator was starved past the end's grace, or Ctrl-C):
                    // what was due is counted, not silently left out.
                    skip_missed(&ctx, &c, &mut plan, BEHIND);
                    return close(Some(live)).await;
                }
                End::Broken(f) => fail_in_flight(&ctx, &c, f),
            }
        }
        if s.phase() >= Phase::Draining || finished_sending(&ctx, &c, &plan) {
            skip_missed(&ctx, &c, &mut plan, DISCONNECTED); // what fell due while disconnected, up to the end
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
        conn = connect(&ctx, &c).await;
        skip_missed(&ctx, &c, &mut plan, DISCONNECTED);
    }
}

async fn close(conn: Option<Conn>) {
    if let Some(conn) = conn {
        conn.close().await;
    }
}

/// One connection attempt, recorded as a CONNECT request.
async fn connect(ctx: &ThreadCtx, c: &Client) -> Option<Conn> {
    let s = &ctx.shared;
    let cfg = &s.cfg;
    let _permit = ctx.connecting.acquire().await.ok()?;
    if s.phase() >= Phase::Draining {
        return None;
    }
    let login = cfg.username.as_deref().map(|u| (u, cfg.password.as_deref().unwrap_or("")));
    let hello = Hello {
        client_id: &c.id,
        keepalive: cfg.keepalive,
        clean: cfg.clean_session,
        login,
        max_packet: cfg.max_incoming(),
    };
    let t0 = Instant::now();
    let r = Conn::open(&s.connector, c.index, s.version, &hello, cfg.timeout()).await;
    let took = t0.elapsed();
    match r {
        Ok(conn) => {
            ctx.recorder.borrow_mut().record_connect(took);
            ctx.record(CONNECT, took, &Outcome::Judged { status: 0, body_bytes: 0, failure: None });
            s.connected.fetch_add(1, Ordering::Relaxed);
            c.last_write.set(Instant::now());
            Some(conn)
        }
        Err(f) => {
            ctx.record(CONNECT, took, &Outcome::Failed(f));
            None
        }
    }
}

fn finished_sending(ctx: &ThreadCtx, c: &Client, plan: &Plan) -> bool {
    let s = &ctx.shared;
    s.cfg.messages.is_some_and(|n| c.sent.get() >= n)
        || s.phase() >= Phase::Draining
        || matches!((plan.due, plan.until), (Some(d), Some(u)) if d >= u)
}

const DISCONNECTED: &str = "not sent: no connection when it fell due";
const BEHIND: &str = "not sent: the run ended with the generator behind schedule";

/// Messages that fell due but were never sent (an outage, or the run's end): counted as unsent failures.
fn skip_missed(ctx: &ThreadCtx, c: &Client, plan: &mut Plan, why: &'static str) {
    let Some(mut due) = plan.due else { return };
    let now = Instant::now();
    let mut missed = 0;
    while due < now
        && plan.until.is_none_or(|u| due < u)
        && ctx.shared.cfg.messages.is_none_or(|n| c.sent.get() + missed < n)
    {
        due += plan.interval;
        missed += 1;
    }
    plan.due = Some(due);
    if missed > 0 {
        c.unsent.set(c.unsent.get() + missed);
        c.failed.set(c.failed.get() + missed);
        c.sent.set(c.sent.get() + missed); // their sequence numbers are used up: a gap, not a loss
        ctx.shared.unsent.fetch_add(missed, Ordering::Relaxed);
        let f = Failure::new(FailureKind::Unsent, why);
        ctx.recorder.borrow_mut().fail_untimed(now, PUBLISH, f, missed);
    }
}

/// The connection broke (or timed out): what was in flight failed with it.
fn fail_in_flight(ctx: &ThreadCtx, c: &Client, f: Failure) {
    let now = Instant::now();
    let mut slots: Vec<(Instant, u32)> =
        c.window.borrow_mut().iter_mut().filter_map(Option::take).map(|s| (s.sent_at, s.bytes)).collect();
    slots.extend(c.pings.borrow_mut().drain(..).flat_map(|p| p.messages));
    if slots.is_empty() {
        // Nothing was in flight: the break itself is what failed.
        ctx.recorder.borrow_mut().fail_untimed(now, CONNECT, f, 1);
        return;
    }
    for (sent_at, _) in slots {
        ctx.record(PUBLISH, now.duration_since(sent_at), &Outcome::Failed(f.clone()));
        c.failed.set(c.failed.get() + 1);
        ctx.shared.failed.fetch_add(1, Ordering::Relaxed);
    }
}

fn acknowledged(ctx: &ThreadCtx, c: &Client, sent_at: Instant, bytes: u32, refused: Option<String>) {
    let took = Instant::now().duration_since(sent_at);
    let failure = refused.map(|r| Failure::new(FailureKind::Refused, format!("publish refused: {r}")));
    if failure.is_some() {
        c.failed.set(c.failed.get() + 1);
        ctx.shared.failed.fetch_add(1, Ordering::Relaxed);
    } else {
        c.published.set(c.published.get() + 1);
        ctx.shared.published.fetch_add(1, Ordering::Relaxed);
    }
    ctx.record(PUBLISH, took, &Outcome::Judged { status: 0, body_bytes: bytes as u64, failure });
}

/// Publishes on one live connection until there is nothing left to send and nothing in flight.
async fn publish(ctx: &ThreadCtx, c: &Client, conn: &mut Conn, plan: &mut Plan) -> End {
    let s = &ctx.shared;
    let cfg = &s.cfg;
    let qos = cfg.qos;
    let mut armed_for = None;
    let mut free: Vec<u16> = (1..=c.window.borrow().len() as u16).rev().collect();
    // QoS 0: messages written but not yet confirmed by a PINGRESP, and those of the current write.
    let mut unconfirmed = 0usize;
    let mut written: Vec<(Instant, u32)> = Vec::new();
    let window_free =
        |free: &Vec<u16>, unconfirmed: usize| if qos == 0 { unconfirmed < cfg.inflight } else { !free.is_empty() };
    loop {
        if c.timed_out.take() {
            let timeout = cfg.timeout();
            let now = Instant::now();
            if c.overdue(now, timeout) {
                // the watchdog's flag is checked again: the answer may have come since
                return End::Broken(Failure::new(FailureKind::AckTimeout, ""));
            }
        }
        if c.ping_due.take() {
            conn.version.pingreq(&mut conn.wbuf);
            c.pings.borrow_mut().push_back(Ping { sent_at: Instant::now(), messages: Vec::new() });
        }
        if s.phase() == Phase::Closed {
            return End::Broken(Failure::new(FailureKind::Closed, "when the run ended"));
        }
        // Encode whatever is due.
        let now = Instant::now();
        let mut batch = 0;
        while batch < BATCH && !finished_sending(ctx, c, plan) && window_free(&free, unconfirmed + written.len()) {
            // Latency counts from the intended send time when paced, so a message held back by a full
            // window or a busy generator carries its wait: a stalled broker can't hide (coordinated omission).
            let mut sent_at = now;
            if let Some(due) = plan.due {
                if due > now {
                    break;
                }
                sent_at = due;
                ctx.recorder.borrow_mut().note_lag(now, now.duration_since(due));
                ctx.last_paced_send.set(Some(now));
                plan.due = Some(due + plan.interval);
            }
            let seq = c.sent.get();
            c.sent.set(seq + 1);
            s.sent.fetch_add(1, Ordering::Relaxed);
            let value = s.payloads.value(c.index, seq);
            let payload = if cfg.verify {
                let sent_unix_us = unix_us().saturating_sub(now.duration_since(sent_at).as_micros() as u64);
                Header { run_tag: cfg.run_tag, client: c.index as u32, seq, sent_unix_us }.prepend(value)
            } else {
                value.clone()
            };
            let bytes = payload.len() as u32;
            let pkid = if qos == 0 { 0 } else { free.pop().unwrap() };
            let rendered;
            let topic = match &c.topic {
                Some(t) => t.as_str(),
                None => {
                    rendered = s.topic.render(c.index, &c.id, seq);
                    rendered.as_str()
                }
            };
            conn.version.publish(&mut conn.wbuf, topic, qos, cfg.retain, pkid, payload);
            if qos == 0 {
                written.push((sent_at, bytes));
            } else {
                c.window.borrow_mut()[pkid as usize - 1] =
                    Some(Slot { sent_at, written_at: now, released: false, bytes });
            }
            batch += 1;
        }
        if !written.is_empty() {
            // The PINGRESP to this PINGREQ will confirm the broker read the messages before it.
            conn.version.pingreq(&mut conn.wbuf);
            unconfirmed += written.len();
            c.pings.borrow_mut().push_back(Ping { sent_at: now, messages: std::mem::take(&mut written) });
        }
        if !conn.wbuf.is_empty() {
            if let Err(f) = conn.flush().await {
                return End::Broken(f);
            }
            c.last_write.set(Instant::now());
        }
        let sending = !finished_sending(ctx, c, plan);
        if !sending && free.len() == c.window.borrow().len() && c.pings.borrow().is_empty() {
            return End::Done;
        }
        let can_send = sending && window_free(&free, unconfirmed);
        if can_send && plan.due != armed_for {
            if let (Some(due), Some(pacer)) = (plan.due, &ctx.pacer) {
                pacer.wake_at(due, &c.pace);
            }
            armed_for = plan.due;
        }
        tokio::select! {
            biased;
            r = conn.fill() => {
                if let Err(f) = r {
                    return End::Broken(f);
                }
                loop {
                    let packet = match conn.decoded() {
                        Ok(Some(p)) => p,
                        Ok(None) => break,
                        Err(f) => return End::Broken(f),
                    };
                    if let super::codec::Incoming::PingResp = packet {
                        unconfirmed -= confirm(ctx, c);
                    } else if let Some(end) = on_packet(ctx, c, conn, &mut free, packet) {
                        return end;
                    }
                }
            }
            _ = c.wake.notified() => {}
            _ = c.pace.notified(), if can_send && plan.due.is_some() => {}
            _ = std::future::ready(()), if can_send && plan.due.is_none() => {}
        }
    }
}

/// A PINGRESP: the QoS 0 messages written before its PINGREQ are published. Returns how many.
fn confirm(ctx: &ThreadCtx, c: &Client) -> usize {
    let Some(ping) = c.pings.borrow_mut().pop_front() else { return 0 };
    for &(sent_at, bytes) in &ping.messages {
        acknowledged(ctx, c, sent_at, bytes, None);
    }
    ping.messages.len()
}

fn on_packet(
    ctx: &ThreadCtx,
    c: &Client,
    conn: &mut Conn,
    free: &mut Vec<u16>,
    packet: super::codec::Incoming,
) -> Option<End> {
    use super::codec::Incoming::*;
    let qos = ctx.shared.cfg.qos;
    let take = |pkid: u16, want_released: bool| -> Option<Slot> {
        let mut w = c.window.borrow_mut();
        let slot = w.get_mut((pkid as usize).checked_sub(1)?)?;
        match slot {
            Some(s) if s.released == want_released => slot.take(),
            _ => None,
        }
    };
    match packet {
        PubAck { pkid, refused } if qos == 1 => {
            if let Some(slot) = take(pkid, false) {
                free.push(pkid);
                acknowledged(ctx, c, slot.sent_at, slot.bytes, refused);
            }
        }
        PubRec { pkid, refused } if qos == 2 => {
            if let Some(mut slot) = take(pkid, false) {
                if refused.is_some() {
                    free.push(pkid);
                    acknowledged(ctx, c, slot.sent_at, slot.bytes, refused);
                } else {
                    slot.released = true;
                    c.window.borrow_mut()[pkid as usize - 1] = Some(slot);
                    conn.version.pubrel(&mut conn.wbuf, pkid);
                }
            }
        }
        PubComp(pkid) if qos == 2 => {
            if let Some(slot) = take(pkid, true) {
                free.push(pkid);
                acknowledged(ctx, c, slot.sent_at, slot.bytes, None);
            }
        }
        Disconnect(reason) => {
            return Some(End::Broken(Failure::new(FailureKind::Closed, format!("with reason: {reason}"))));
        }
        _ => {}
    }
    None
}
