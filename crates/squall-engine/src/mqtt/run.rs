//! Runs an MQTT load: worker threads with one tokio current-thread runtime each (the clients dealt
//! round-robin over them), a subscriber thread when delivery is verified, and a coordinator that moves
//! the run through its phases (connecting, running, draining, closed) and builds the result.

use super::codec::{Hello, Version};
use super::config::MqttConfig;
use super::conn::Conn;
use super::message::{Payloads, TopicTemplate};
use super::publisher::{self, ThreadCtx};
use super::report::{self, ClientCounts, ThreadSchedule};
use super::verify::{self, Seen, SubCtx, Tracker};
use crate::net::Connector;
use crate::result::RunResult;
use crate::runner::{StartError, StopReason};
use crate::stats::{LiveCounters, Recorder, Timeline};
use crate::tls;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{watch, Notify};

/// Endpoint ids in the statistics.
pub const CONNECT: usize = 0;
pub const PUBLISH: usize = 1;
pub const DELIVER: usize = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// Clients connect; nothing is published yet.
    Connecting = 0,
    Running = 1,
    /// No new messages; acknowledgements still in flight are awaited.
    Draining = 2,
    Closed = 3,
}

impl Phase {
    fn from_u8(v: u8) -> Phase {
        match v {
            0 => Phase::Connecting,
            1 => Phase::Running,
            2 => Phase::Draining,
            _ => Phase::Closed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Connecting => "connecting",
            Phase::Running => "running",
            Phase::Draining => "draining",
            Phase::Closed => "closed",
        }
    }
}

pub struct MqttShared {
    pub cfg: MqttConfig,
    pub version: Version,
    pub topic: TopicTemplate,
    pub payloads: Payloads,
    pub connector: Connector,
    pub start: Instant,
    pub start_unix: f64,
    pub threads: usize,
    pub timeline: Arc<Timeline>,
    phase: AtomicU8,
    phase_tx: watch::Sender<Phase>,
    load_start: Mutex<Option<Instant>>,
    reason: AtomicU8,
    pub connected: AtomicU64,
    pub first_attempt_done: AtomicUsize,
    /// Messages written to a connection.
    pub sent: AtomicU64,
    pub published: AtomicU64,
    pub failed: AtomicU64,
    /// Messages that fell due but were never written: no connection, or the run ended first (not part of `sent`).
    pub unsent: AtomicU64,
    pub delivered: AtomicU64,
    pub subscribed: AtomicUsize,
    subscriber_error: Mutex<Option<String>>,
}

impl MqttShared {
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    pub fn phase_rx(&self) -> watch::Receiver<Phase> {
        self.phase_tx.subscribe()
    }

    fn set_phase(&self, p: Phase) {
        if p > self.phase() {
            self.phase.store(p as u8, Ordering::Release);
            self.phase_tx.send_replace(p);
        }
    }

    fn stop_with(&self, reason: StopReason, phase: Phase) {
        let _ =
            self.reason.compare_exchange(StopReason::Running as u8, reason as u8, Ordering::SeqCst, Ordering::SeqCst);
        self.set_phase(phase);
    }

    /// Why the run is stopping; `Running` until something stops it.
    pub fn reason(&self) -> StopReason {
        StopReason::from_u8(self.reason.load(Ordering::SeqCst))
    }

    /// When the measured time began, once clients may publish; None if the run closed first.
    pub async fn wait_for_load(&self, wake: &Notify) -> Option<Instant> {
        loop {
            match self.phase() {
                Phase::Connecting => wake.notified().await,
                Phase::Closed => return None,
                _ => return *self.load_start.lock().unwrap(),
            }
        }
    }

    pub fn note_subscriber_error(&self, f: &crate::stats::Failure) {
        self.subscriber_error.lock().unwrap().get_or_insert_with(|| f.message());
    }
}

#[derive(Debug, Clone, Copy)]
pub struct MqttProgress {
    pub elapsed: f64,
    pub phase: Phase,
    pub connected: u64,
    pub sent: u64,
    pub published: u64,
    pub failed: u64,
    pub delivered: u64,
    pub finished: bool,
}

pub struct MqttRun {
    shared: Arc<MqttShared>,
    coordinator: Option<JoinHandle<RunResult>>,
}

struct ThreadOutput {
    recorder: Recorder,
    clients: Vec<ClientCounts>,
    schedule: ThreadSchedule,
    last_publish: Option<Instant>,
    last_paced_send: Option<Instant>,
}

impl MqttRun {
    pub fn start(cfg: MqttConfig) -> Result<MqttRun, StartError> {
        cfg.validate().map_err(StartError::Usage)?;
        let version = cfg.version().map_err(StartError::Usage)?;
        let topic = TopicTemplate::parse(&cfg.topic).map_err(StartError::Usage)?;
        let (tls_on, host, port) = broker_address(&cfg.broker).map_err(StartError::Usage)?;
        let addrs = crate::request::resolve(&host, port).map_err(StartError::Target)?;
        let tls = tls_on.then(|| (tls::client_config(cfg.insecure, &[b"mqtt"]), host.as_str()));
        let connector = Connector::new(addrs, tls).map_err(StartError::Usage)?;
        preflight(&connector, version, &cfg, &host, port)?;

        let publishing = cfg.subscribe_only.is_none();
        let threads = cfg
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
            .clamp(1, if publishing { cfg.clients } else { 1 });
        let (phase_tx, _) = watch::channel(Phase::Connecting);
        let shared = Arc::new(MqttShared {
            version,
            payloads: Payloads::new(&cfg),
            topic,
            connector,
            start: Instant::now(),
            start_unix: SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0),
            threads,
            timeline: Timeline::new(),
            phase: AtomicU8::new(Phase::Connecting as u8),
            phase_tx,
            load_start: Mutex::new(None),
            reason: AtomicU8::new(StopReason::Running as u8),
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
        let mut workers = Vec::new();
        if publishing {
            for t in 0..threads {
                let s = shared.clone();
                let handle = std::thread::Builder::new()
                    .name(format!("squall-mqtt-{t}"))
                    .spawn(move || worker_thread(s, t))
                    .map_err(|e| StartError::Target(format!("cannot start a worker thread: {e}")))?;
                workers.push(handle);
            }
        }
        let coordinator = {
            let s = shared.clone();
            std::thread::Builder::new()
                .name("squall-coordinator".into())
                .spawn(move || coordinate(s, workers, subscriber))
                .map_err(|e| StartError::Target(format!("cannot start the coordinator: {e}")))?
        };
        Ok(MqttRun { shared, coordinator: Some(coordinator) })
    }

    /// Stops early (Ctrl-C): no new messages, a short drain, and what was measured is reported.
    pub fn stop(&self) {
        self.shared.stop_with(StopReason::Interrupted, Phase::Draining);
    }

    pub fn progress(&self) -> MqttProgress {
        let s = &self.shared;
        MqttProgress {
            elapsed: s.start.elapsed().as_secs_f64(),
            phase: s.phase(),
            connected: s.connected.load(Ordering::Relaxed),
            sent: s.sent.load(Ordering::Relaxed),
            published: s.published.load(Ordering::Relaxed),
            failed: s.failed.load(Ordering::Relaxed),
            delivered: s.delivered.load(Ordering::Relaxed),
            finished: self.is_finished(),
        }
    }

    pub fn is_finished(&self) -> bool {
        self.coordinator.as_ref().is_none_or(|h| h.is_finished())
    }

    pub fn wait(mut self) -> RunResult {
        self.coordinator.take().expect("wait is called once").join().expect("the coordinator does not panic")
    }
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
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let id = format!("{}preflight-{}", cfg.client_id_prefix, cfg.first_client);
    let login = cfg.username.as_deref().map(|u| (u, cfg.password.as_deref().unwrap_or("")));
    let hello = Hello { client_id: &id, keepalive: cfg.keepalive, clean: true, login };
    rt.block_on(async {
        match Conn::open(connector, 0, version, &hello, cfg.timeout()).await {
            Ok(conn) => {
                conn.close().await;
                Ok(())
            }
            Err(f) => {
                let hint = if f.kind == crate::stats::FailureKind::Tls && !cfg.insecure {
                    " (use --insecure to skip certificate verification)"
                } else {
                    ""
                };
                Err(StartError::Target(format!("cannot connect to the broker at {host}:{port}: {}{hint}", f.message())))
            }
        }
    })
}

fn worker_thread(shared: Arc<MqttShared>, t: usize) -> ThreadOutput {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let local = tokio::task::LocalSet::new();
    let recorder = Recorder::new(shared.start, shared.timeline.clone(), Arc::new(LiveCounters::default()));
    let pacer = shared.cfg.rate.map(|_| {
        let _in_runtime = rt.enter();
        Rc::new(super::pace::Pacer::new().expect("a timerfd for the pacer"))
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
    recorder.flush();
    let clients = ctx.clients.into_inner().iter().map(|c| ClientCounts::of(c)).collect();
    ThreadOutput {
        recorder,
        clients,
        schedule: ThreadSchedule {
            on_schedule: ctx.on_schedule.get(),
            late: ctx.late.get(),
            lag_sum_us: ctx.lag_sum_us.get(),
            lag_max_us: ctx.lag_max_us.get(),
        },
        last_publish: ctx.last_publish.get(),
        last_paced_send: ctx.last_paced_send.get(),
    }
}

fn subscriber_thread(shared: Arc<MqttShared>) -> (Recorder, Tracker) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let local = tokio::task::LocalSet::new();
    let recorder = Recorder::new(shared.start, shared.timeline.clone(), Arc::new(LiveCounters::default()));
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
    (ctx.recorder.into_inner(), ctx.tracker.into_inner())
}

fn coordinate(
    shared: Arc<MqttShared>,
    workers: Vec<JoinHandle<ThreadOutput>>,
    subscriber: Option<JoinHandle<(Recorder, Tracker)>>,
) -> RunResult {
    let cfg = &shared.cfg;
    let publishing = cfg.subscribe_only.is_none();
    let mut load_start = shared.start;
    let mut drain_since: Option<Instant> = None;
    if !publishing {
        shared.set_phase(Phase::Running);
    }
    loop {
        let now = Instant::now();
        shared.timeline.close_before(now.duration_since(shared.start).as_secs().saturating_sub(2));
        match shared.phase() {
            Phase::Connecting => {
                let all_tried = shared.first_attempt_done.load(Ordering::SeqCst) >= cfg.clients;
                if all_tried || cfg.connect_rate.is_some() {
                    load_start = if cfg.connect_rate.is_some() { shared.start } else { now };
                    *shared.load_start.lock().unwrap() = Some(load_start);
                    shared.set_phase(Phase::Running);
                }
            }
            Phase::Running => {
                // Paced clients stop by themselves after their last message due before the end, late if the
                // generator was starved; the coordinator only stops unpaced ones, or stragglers one timeout on.
                let grace = if cfg.rate.is_some() { cfg.timeout() } else { Duration::ZERO };
                if cfg.duration().is_some_and(|d| now >= load_start + d + grace) {
                    shared.stop_with(StopReason::Deadline, Phase::Draining);
                }
                if !publishing && cfg.messages.is_some_and(|n| shared.delivered.load(Ordering::Relaxed) >= n) {
                    shared.stop_with(StopReason::Completed, Phase::Closed);
                }
            }
            Phase::Draining => {
                // In-flight acknowledgements get one timeout (a short one after Ctrl-C) to arrive.
                let since = *drain_since.get_or_insert(now);
                let grace = if shared.reason() == StopReason::Interrupted {
                    cfg.timeout().min(Duration::from_secs(2))
                } else {
                    cfg.timeout()
                };
                if now.duration_since(since) > grace + Duration::from_millis(500) {
                    shared.stop_with(StopReason::DrainTimeout, Phase::Closed);
                }
                if !publishing {
                    shared.set_phase(Phase::Closed);
                }
            }
            Phase::Closed => {}
        }
        if publishing && workers.iter().all(|w| w.is_finished()) || shared.phase() == Phase::Closed {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let outputs: Vec<ThreadOutput> =
        workers.into_iter().map(|w| w.join().expect("worker threads do not panic")).collect();
    let published_until = outputs.iter().filter_map(|o| o.last_publish).max();
    let paced_until = outputs.iter().filter_map(|o| o.last_paced_send).max();
    // Deliveries still on their way may arrive until `verify_wait` passes without one: a broker
    // working through a backlog is slow, not losing messages.
    if publishing && subscriber.is_some() {
        let expected = shared.sent.load(Ordering::SeqCst); // written: unsent messages are not in it
        let wait = Duration::from_secs_f64(cfg.verify_wait);
        let (mut delivered, mut until) = (shared.delivered.load(Ordering::Relaxed), Instant::now() + wait);
        while delivered < expected && Instant::now() < until && shared.reason() != StopReason::Interrupted {
            std::thread::sleep(Duration::from_millis(10));
            let now_delivered = shared.delivered.load(Ordering::Relaxed);
            if now_delivered > delivered {
                (delivered, until) = (now_delivered, Instant::now() + wait);
            }
        }
    }
    let end = Instant::now();
    shared.set_phase(Phase::Closed);
    let (sub_recorder, tracker) = match subscriber.map(|s| s.join().expect("the subscriber thread does not panic")) {
        Some((r, t)) => (Some(r), Some(t)),
        None => (None, None),
    };
    // A paced schedule spans the whole duration even though its clients finish a moment before the end.
    let paced_to_end = match (cfg.rate, cfg.duration) {
        (Some(rate), Some(d)) => cfg.messages.is_none_or(|n| n as f64 / rate >= d),
        _ => false,
    };
    let ran_out = paced_to_end || cfg.duration().is_some_and(|d| end >= load_start + d);
    let reason = match shared.reason() {
        StopReason::Running if ran_out && publishing => StopReason::Deadline,
        StopReason::Running => StopReason::Completed,
        r => r,
    };
    let measured = match (reason, cfg.duration()) {
        // A generator that fell behind sent the schedule's last messages late, after the end: rates count that time.
        (StopReason::Deadline, Some(d)) => match paced_until.map(|t| t.saturating_duration_since(load_start)) {
            Some(sent_for) if sent_for > d + crate::runner::LATE_AFTER => sent_for,
            _ => d,
        },
        _ => published_until.unwrap_or(end).saturating_duration_since(load_start),
    };
    report::build(report::Inputs {
        shared: &shared,
        reason,
        load_start,
        measured,
        duration: end.duration_since(shared.start),
        outputs: outputs.into_iter().map(|o| (o.recorder, o.clients, o.schedule)).collect(),
        subscriber: sub_recorder,
        tracker,
    })
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
