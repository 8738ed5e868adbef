//! Delivery verification: subscriber connections on the published topics read each message's header
//! (run tag, client, sequence number, send time) and note it in the run's `delivery::Tracker`.

use super::codec::{Hello, Incoming};
use super::conn::Conn;
use super::delivery::Tracker;
use super::header::{unix_us, Header};
use super::shared::{MqttShared, Phase, DELIVER};
use crate::stats::{Failure, FailureKind, Outcome, Recorder};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub struct SubCtx {
    pub shared: Arc<MqttShared>,
    pub recorder: RefCell<Recorder>,
    pub tracker: RefCell<Tracker>,
}

impl SubCtx {
    fn on_message(&self, payload: &[u8]) {
        let s = &self.shared;
        let now = Instant::now();
        let mut t = self.tracker.borrow_mut();
        let header = Header::parse(payload);
        let local = header.map(|h| (h.client as usize).wrapping_sub(s.cfg.first_client));
        let ours = header.is_some_and(|h| h.run_tag == s.cfg.run_tag);
        if s.cfg.subscribe_only.is_none() {
            // Every process of a run (`--processes`, a distributed run's workers) subscribes to every
            // topic, so each message reaches each of them; each counts its own clients' messages, and
            // the process with the first clients the foreign ones: merged, `received` counts each once.
            if ours && local >= Some(s.cfg.clients) {
                return; // another process of this run publishes these clients: its subscriber counts them
            }
            if !ours && s.cfg.first_client != 0 {
                return;
            }
        }
        t.received += 1;
        let seen = match header {
            Some(h) if s.cfg.subscribe_only.is_some() => Some(t.senders.entry((h.run_tag, h.client)).or_default()),
            Some(_) if ours => t.clients.get_mut(local.unwrap()),
            _ => None,
        };
        let mut rec = self.recorder.borrow_mut();
        match (header, seen) {
            (Some(h), Some(seen)) => {
                s.delivered.fetch_add(1, Ordering::Relaxed);
                seen.observe(h.seq);
                let e2e = Duration::from_micros(unix_us().saturating_sub(h.sent_unix_us));
                rec.record(
                    now,
                    DELIVER,
                    e2e,
                    &Outcome::Judged { status: 0, body_bytes: payload.len() as u64, failure: None },
                );
            }
            _ if s.cfg.subscribe_only.is_some() => {
                s.delivered.fetch_add(1, Ordering::Relaxed);
                rec.count(now, DELIVER, payload.len() as u64)
            }
            _ => t.foreign += 1,
        }
    }
}

/// One subscriber connection, reconnecting after a failure, until the run is closed.
pub async fn subscriber(ctx: Rc<SubCtx>, k: usize, filter: String) {
    let s = ctx.shared.clone();
    let cfg = &s.cfg;
    // Unique per process too: `--processes` workers share the prefix and each verifies its own clients.
    let id = format!("{}verify-{}-{k}", cfg.client_id_prefix, cfg.first_client);
    let login = cfg.username.as_deref().map(|u| (u, cfg.password.as_deref().unwrap_or("")));
    let hello = Hello { client_id: &id, keepalive: cfg.keepalive, clean: true, login, max_packet: cfg.max_incoming() };
    let mut first = true;
    while s.phase() != Phase::Closed {
        if !first {
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        first = false;
        let mut conn = match Conn::open(&s.connector, k, s.version, &hello, cfg.timeout()).await {
            Ok(c) => c,
            Err(f) => {
                s.note_subscriber_error(&f);
                continue;
            }
        };
        conn.version.subscribe(&mut conn.wbuf, 1, std::slice::from_ref(&filter), cfg.qos);
        match receive(&ctx, &mut conn).await {
            Ok(()) => return conn.close().await,
            Err(f) => s.note_subscriber_error(&f),
        }
    }
}

async fn receive(ctx: &SubCtx, conn: &mut Conn) -> Result<(), Failure> {
    let s = &ctx.shared;
    let mut closed = s.phase_rx();
    // A subscriber mostly listens, so it owes the broker a PINGREQ within each keepalive.
    let every = Duration::from_secs(s.cfg.keepalive.max(2) as u64 / 2);
    let mut keepalive = tokio::time::interval_at((Instant::now() + every).into(), every);
    loop {
        conn.flush().await?;
        tokio::select! {
            biased;
            r = conn.fill() => r?,
            _ = closed.wait_for(|p| *p == Phase::Closed) => return Ok(()),
            _ = keepalive.tick(), if s.cfg.keepalive > 0 => {
                conn.version.pingreq(&mut conn.wbuf);
                continue;
            }
        }
        while let Some(packet) = conn.decoded()? {
            match packet {
                Incoming::SubAck { granted, .. } => {
                    if granted.first().copied().flatten().is_none() {
                        let f = Failure::new(FailureKind::Refused, "the broker refused the verification subscription");
                        s.note_subscriber_error(&f);
                        return Err(f);
                    }
                    s.subscribed.fetch_add(1, Ordering::SeqCst);
                }
                Incoming::Publish { qos, pkid, payload, .. } => {
                    ctx.on_message(&payload);
                    match qos {
                        1 => conn.version.puback(&mut conn.wbuf, pkid),
                        2 => conn.version.pubrec(&mut conn.wbuf, pkid),
                        _ => {}
                    }
                }
                Incoming::PubRel(pkid) => conn.version.pubcomp(&mut conn.wbuf, pkid),
                Incoming::Disconnect(reason) => {
                    return Err(Failure::new(FailureKind::Closed, format!("with reason: {reason}")))
                }
                _ => {}
            }
        }
    }
}
