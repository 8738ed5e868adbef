//! An MQTT load on the run core: engine threads with the clients dealt round-robin over them, a
//! subscriber thread when delivery is verified, and the run's phases (connecting, running, draining,
//! closed), which the core's coordinator moves it through (`Load::tick`).

use super::codec::{Hello, Version};
use super::config::MqttConfig;
use super::conn::Conn;
use super::delivery::{Seen, Tracker};
use super::message::{Payloads, TopicTemplate};
use super::publisher::{self, ThreadCtx};
use super::report::{self, ClientCounts};
use super::shared::{MqttShared, Phase};
use super::verify::{self, SubCtx};
use crate::net::{tls, Connector};
use crate::run::{self, Load, MqttCounts, Progress, Run, RunCore};
use crate::stats::lag::LATE_AFTER;
use crate::stats::result::RunResult;
use crate::stats::Recorder;
use crate::types::{StartError, StopReason};
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

pub type MqttRun = Run<MqttShared>;

pub struct ThreadOutput {
    recorder: Recorder,
    clients: Vec<ClientCounts>,
    last_publish: Option<Instant>,
    last_paced_send: Option<Instant>,
}

/// Checks the configuration, connects once to the broker, subscribes when delivery is verified, then starts.
pub fn start(cfg: MqttConfig) -> Result<MqttRun, StartError> {
    cfg.validate().map_err(StartError::Usage)?;
    let version = cfg.version().map_err(StartError::Usage)?;
    let topic = TopicTemplate::parse(&cfg.topic).map_err(StartError::Usage)?;
    let (tls_on, host, port) = broker_address(&cfg.broker).map_err(StartError::Usage)?;
    let addrs = crate::net::resolve(&host, port).map_err(StartError::Target)?;
    let tls = tls_on.then(|| (tls::client_config(cfg.insecure, &[b"mqtt"]), host.as_str()));
    let connector = Connector::new(addrs, tls).map_err(StartError::Usage)?;
    preflight(&connector, version, &cfg, &host, port)?;

    let publishing = cfg.subscribe_only.is_none();
    let threads = run::thread_count(cfg.threads, if publishing { cfg.clients } else { 1 });
    let core = RunCore::new();
    // Named before anything is recorded: the live stream's seconds and totals list each endpoint by name.
    core.timeline.set_names(report::endpoint_names(&cfg, &topic));
    let (phase_tx, _) = watch::channel(Phase::Connecting);
    let shared = Arc::new(MqttShared {
        version,
        payloads: Payloads::new(&cfg),
        topic,
        connector,
        start: core.start,
        core: core.clone(),
        threads,
        phase: AtomicU8::new(Phase::Connecting as u8),
        phase_tx,
        load_start: Mutex::new(None),
        subscriber: Mutex::new(None),
        drain_since: Mutex::new(None),
        connected: AtomicU64::new(0),
        first_attempt_done: AtomicUsize::new(0),
        sent: AtomicU64::new(0),
        published: AtomicU64::new(0),
        failed: AtomicU64::new(0),
        unsent: AtomicU64::new(0),
        delivered: AtomicU64::new(0),
        subscribed: AtomicUsize::new(0),
        subscriber_error: Mutex::new(None),
        cfg,
    });

    let subscriber = if shared.cfg.verify || !publishing {
        let s = shared.clone();
        let handle = std::thread::Builder::new()
            .name("squall-subscriber".into())
            .spawn(move || subscriber_thread(s))
            .map_err(|e| StartError::Target(format!("cannot start the subscriber thread: {e}")))?;
        // Publishing starts only once every subscription is in place, or nothing would prove delivery.
        let deadline = Instant::now() + shared.cfg.timeout();
        while shared.subscribed.load(Ordering::SeqCst) < shared.cfg.subscribers {
            let failed = shared.subscriber_error.lock().unwrap().clone();
            if failed.is_some() || Instant::now() > deadline {
                shared.set_phase(Phase::Closed);
                let _ = handle.join();
                let why = failed.unwrap_or_else(|| "no SUBACK within the timeout".into());
                return Err(StartError::Target(format!("cannot subscribe at {}: {why}", shared.cfg.broker)));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Some(handle)
    } else {
        None
    };
    *shared.subscriber.lock().unwrap() = subscriber;
    let s = shared.clone();
    Run::start(core, shared, "squall-mqtt", if publishing { threads } else { 0 }, move |t| worker_thread(s.clone(), t))
}

/// `mqtt://host[:1883]` or `mqtts://host[:8883]` (TLS): (tls, host, port).
pub fn broker_address(raw: &str) -> Result<(bool, String, u16), String> {
    let bad = |why: &str| format!("invalid broker URL '{raw}': {why}");
    let with_scheme = if raw.contains("://") { raw.to_string() } else { format!("mqtt://{raw}") };
    let url = url::Url::parse(&with_scheme).map_err(|e| bad(&e.to_string()))?;
    let tls = match url.scheme() {
        "mqtt" | "tcp" => false,
        "mqtts" | "ssl" => true,
        other => return Err(bad(&format!("unsupported scheme '{other}' (use mqtt:// or mqtts://)"))),
    };
    let host = url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| bad("no host"))?;
    let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
    Ok((tls, host, url.port().unwrap_or(if tls { 8883 } else { 1883 })))
}

/// One connection before the run, so an unreachable broker or bad credentials give one clear error.
fn preflight(
    connector: &Connector,
    version: Version,
    cfg: &MqttConfig,
    host: &str,
    port: u16,
) -> Result<(), StartError> {
    let rt = run::runtime();
    let id = format!("{}preflight-{}", cfg.client_id_prefix, cfg.first_client);
    let login = cfg.username.as_deref().map(|u| (u, cfg.password.as_deref().unwrap_or("")));
    let hello = Hello { client_id: &id, keepalive: cfg.keepalive, clean: true, login, max_packet: cfg.max_incoming() };
    rt.block_on(async {
        match Conn::open(connector, 0, version, &hello, cfg.timeout()).await {
            Ok(conn) => {
                conn.close().await;
                Ok(())
            }
            Err(f) => {
                let hint = tls::hint(&f.kind, cfg.insecure);
                let at = crate::net::host_port(host, port);
                Err(StartError::Target(format!("cannot connect to the broker at {at}: {}{hint}", f.message())))
            }
        }
    })
}

fn worker_thread(shared: Arc<MqttShared>, t: usize) -> ThreadOutput {
    let rt = run::runtime();
    let local = tokio::task::LocalSet::new();
    let recorder = Recorder::new(shared.core.timeline.clone());
    let pacer = shared.cfg.rate.map(|_| {
        let _in_runtime = rt.enter();
        Rc::new(crate::run::clock::Pacer::new().expect("a timerfd for the pacer"))
    });
    let ctx = Rc::new(ThreadCtx::new(shared.clone(), recorder, pacer.clone()));
    local.block_on(&rt, async {
        let cfg = &shared.cfg;
        if let Some(p) = pacer {
            tokio::task::spawn_local(p.run());
        }
        let clients: Vec<_> =
            (t..cfg.clients).step_by(shared.threads).map(|i| ctx.add_client(cfg.first_client + i)).collect();
        tokio::task::spawn_local(ctx.clone().watchdog());
        let mut rx = shared.phase_rx();
        let control = ctx.clone();
        tokio::task::spawn_local(async move {
            while rx.changed().await.is_ok() {
                control.wake_all();
            }
        });
        let tasks: Vec<_> =
            clients.into_iter().map(|c| tokio::task::spawn_local(publisher::run_client(ctx.clone(), c))).collect();
        for task in tasks {
            let _ = task.await;
        }
    });
    drop(local);
    let ctx = Rc::try_unwrap(ctx).ok().expect("the thread's tasks are gone");
    let mut recorder = ctx.recorder.into_inner();
    recorder.finish();
    let clients = ctx.clients.into_inner().iter().map(|c| ClientCounts::of(c)).collect();
    ThreadOutput { recorder, clients, last_publish: ctx.last_publish.get(), last_paced_send: ctx.last_paced_send.get() }
}

fn subscriber_thread(shared: Arc<MqttShared>) -> (Recorder, Tracker) {
    let rt = run::runtime();
    let local = tokio::task::LocalSet::new();
    let recorder = Recorder::new(shared.core.timeline.clone());
    let cfg = &shared.cfg;
    let tracker =
        Tracker { clients: vec![Seen::default(); if cfg.verify { cfg.clients } else { 0 }], ..Tracker::default() };
    let ctx =
        Rc::new(SubCtx { shared: shared.clone(), recorder: RefCell::new(recorder), tracker: RefCell::new(tracker) });
    let filter = cfg.subscribe_only.clone().unwrap_or_else(|| shared.topic.filter());
    let filter = if cfg.subscribers > 1 {
        format!("$share/squall-{:08x}-{}/{filter}", cfg.run_tag, cfg.first_client)
    } else {
        filter
    };
    local.block_on(&rt, async {
        let subs: Vec<_> = (0..cfg.subscribers)
            .map(|k| tokio::task::spawn_local(verify::subscriber(ctx.clone(), k, filter.clone())))
            .collect();
        for s in subs {
            let _ = s.await;
        }
    });
    drop(local);
    let ctx = Rc::try_unwrap(ctx).ok().expect("the subscriber tasks are gone");
    let mut recorder = ctx.recorder.into_inner();
    recorder.finish();
    (recorder, ctx.tracker.into_inner())
}

impl MqttShared {
    fn publishing(&self) -> bool {
        self.cfg.subscribe_only.is_none()
    }

    /// Clients (or subscribers) at `elapsed`: ramped by the connect rate.
    fn users_at(&self, elapsed: Duration) -> u64 {
        let cfg = &self.cfg;
        let n = cfg.clients as u64;
        match cfg.connect_rate {
            _ if !self.publishing() => cfg.subscribers as u64,
            Some(r) => n.min(((elapsed.as_secs() + 1) as f64 * r).ceil() as u64),
            None => n,
        }
    }
}

impl Load for MqttShared {
    type Thread = ThreadOutput;

    fn tick(&self, core: &RunCore, now: Instant, threads_done: bool) -> bool {
        let cfg = &self.cfg;
        let publishing = self.publishing();
        core.timeline.set_users(self.users_at(now.saturating_duration_since(core.start)));
        if !publishing && self.phase() == Phase::Connecting {
            self.set_phase(Phase::Running);
        }
        match self.phase() {
            Phase::Connecting => {
                let all_tried = self.first_attempt_done.load(Ordering::SeqCst) >= cfg.clients;
                if all_tried || cfg.connect_rate.is_some() {
                    let load_start = if cfg.connect_rate.is_some() { self.start } else { now };
                    *self.load_start.lock().unwrap() = Some(load_start);
                    self.set_phase(Phase::Running);
                }
            }
            Phase::Running => {
                // Paced clients stop by themselves after their last message due before the end, late if the
                // generator was starved; the coordinator only stops unpaced ones, or stragglers one timeout on.
                let load_start = self.load_start.lock().unwrap().unwrap_or(self.start);
                let grace = if cfg.rate.is_some() { cfg.timeout() } else { Duration::ZERO };
                if cfg.duration().is_some_and(|d| now >= load_start + d + grace) {
                    self.stop_with(StopReason::Deadline, Phase::Draining);
                }
                if !publishing && cfg.messages.is_some_and(|n| self.delivered.load(Ordering::Relaxed) >= n) {
                    self.stop_with(StopReason::Completed, Phase::Closed);
                }
            }
            Phase::Draining => {
                // In-flight acknowledgements get one timeout (a short one after Ctrl-C) to arrive.
                let since = *self.drain_since.lock().unwrap().get_or_insert(now);
                let grace = if self.reason() == StopReason::Interrupted {
                    cfg.timeout().min(Duration::from_secs(2))
                } else {
                    cfg.timeout()
                };
                if now.duration_since(since) > grace + Duration::from_millis(500) {
                    self.stop_with(StopReason::DrainTimeout, Phase::Closed);
                }
                if !publishing {
                    self.set_phase(Phase::Closed);
                }
            }
            Phase::Closed => {}
        }
        publishing && threads_done || self.phase() == Phase::Closed
    }

    /// Stops early (Ctrl-C): no new messages, a short drain, and what was measured is reported.
    fn interrupt(&self, _core: &RunCore) {
        self.stop_with(StopReason::Interrupted, Phase::Draining);
    }

    fn progress(&self, _core: &RunCore, p: &mut Progress) {
        p.phase = self.phase().as_str();
        p.mqtt = Some(MqttCounts {
            connected: self.connected.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            published: self.published.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            delivered: self.delivered.load(Ordering::Relaxed),
        });
    }

    fn finish(&self, _core: &RunCore, outputs: Vec<ThreadOutput>) -> RunResult {
        let cfg = &self.cfg;
        let publishing = self.publishing();
        let subscriber = self.subscriber.lock().unwrap().take();
        let load_start = self.load_start.lock().unwrap().unwrap_or(self.start);
        let published_until = outputs.iter().filter_map(|o| o.last_publish).max();
        let paced_until = outputs.iter().filter_map(|o| o.last_paced_send).max();
        // Deliveries still on their way may arrive until `verify_wait` passes without one: a broker
        // working through a backlog is slow, not losing messages.
        if publishing && subscriber.is_some() {
            let expected = self.sent.load(Ordering::SeqCst); // written: unsent messages are not in it
            let wait = Duration::from_secs_f64(cfg.verify_wait);
            let (mut delivered, mut until) = (self.delivered.load(Ordering::Relaxed), Instant::now() + wait);
            while delivered < expected && Instant::now() < until && self.reason() != StopReason::Interrupted {
                std::thread::sleep(Duration::from_millis(10));
                self.core.timeline.publish_ready(Instant::now());
                let now_delivered = self.delivered.load(Ordering::Relaxed);
                if now_delivered > delivered {
                    (delivered, until) = (now_delivered, Instant::now() + wait);
                }
            }
        }
        let end = Instant::now();
        self.set_phase(Phase::Closed);
        let (sub_recorder, tracker) = match subscriber.map(|s| s.join().expect("the subscriber thread does not panic"))
        {
            Some((r, t)) => (Some(r), Some(t)),
            None => (None, None),
        };
        // A paced schedule spans the whole duration even though its clients finish a moment before the end.
        let paced_to_end = match (cfg.rate, cfg.duration) {
            (Some(rate), Some(d)) => cfg.messages.is_none_or(|n| n as f64 / rate >= d),
            _ => false,
        };
        let ran_out = paced_to_end || cfg.duration().is_some_and(|d| end >= load_start + d);
        let reason = match self.reason() {
            StopReason::Running if ran_out && publishing => StopReason::Deadline,
            StopReason::Running => StopReason::Completed,
            r => r,
        };
        let measured = match (reason, cfg.duration()) {
            // A generator that fell behind sent the schedule's last messages late, after the end: rates count that time.
            (StopReason::Deadline, Some(d)) => match paced_until.map(|t| t.saturating_duration_since(load_start)) {
                Some(sent_for) if sent_for > d + LATE_AFTER => sent_for,
                _ => d,
            },
            _ => published_until.unwrap_or(end).saturating_duration_since(load_start),
        };
        report::build(report::Inputs {
            shared: self,
            reason,
            load_start,
            measured,
            duration: end.duration_since(self.start),
            outputs: outputs.into_iter().map(|o| (o.recorder, o.clients)).collect(),
            subscriber: sub_recorder,
            tracker,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::broker_address;

    #[test]
    fn broker_urls() {
        assert_eq!(broker_address("mqtt://127.0.0.1:1884").unwrap(), (false, "127.0.0.1".into(), 1884));
        assert_eq!(broker_address("mqtts://broker.test").unwrap(), (true, "broker.test".into(), 8883));
        assert_eq!(broker_address("localhost").unwrap(), (false, "localhost".into(), 1883));
        assert_eq!(broker_address("mqtt://[::1]:1883").unwrap(), (false, "::1".into(), 1883));
        assert!(broker_address("http://x").unwrap_err().contains("unsupported scheme 'http'"));
    }
}
