//! `squall bench`: one URL over N connections. A `Load` on the run core: each engine thread runs its
//! share of the connections (one worker task each, or one per HTTP/2 stream); in the closed model each
//! worker sends its next request when the last one ends, in the open model a feeder thread issues
//! intended send times (latency counts from them) that the threads' dispatchers hand to idle workers.
//! A `ws://` URL is the same run of WebSocket exchanges: each a message sent and its reply, on a
//! connection opened by the handshake (timed as the connect).

pub mod config;
mod streams;
pub mod worker;

use crate::http::h2::request_template;
use crate::http::h2lean::encode_head;
use crate::http::request::RequestSpec;
use crate::net::{tls, Connector};
use crate::run::schedule::{self, Schedule};
use crate::run::{self, Load, Progress, Run, RunCore};
use crate::stats;
use crate::stats::lag::{Lag, ScheduleReport};
use crate::stats::result::{self, RunResult};
use crate::types::{StartError, StopReason};
use crate::ws::{self, Handshake};
pub use config::BenchConfig;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The open model's queue of intended send times, shared by the feeder and the threads.
pub struct OpenState {
    pub rx: async_channel::Receiver<Instant>,
    pub intended: AtomicU64,
    pub feeder_done: AtomicBool,
    feeder_stop: AtomicBool,
}

pub struct Bench {
    pub cfg: BenchConfig,
    pub spec: RequestSpec,
    /// A WebSocket run's handshake (`ws://` and `wss://` URLs); its message is the body.
    pub handshake: Option<Handshake>,
    pub threads: usize,
    pub core: Arc<RunCore>,
    /// Closed model with a request count: requests claimed so far.
    pub(crate) issued: AtomicU64,
    /// Open model: connections started so far (workers start as the rate needs them, up to `-c`, and
    /// keep their connection: the connections the run used, not the cap).
    pub(crate) conns_started: AtomicU64,
    pub open: Option<OpenState>,
    feeder: Mutex<Option<JoinHandle<()>>>,
    /// When the open model's feeder was first seen done.
    drain_since: Mutex<Option<Instant>>,
    stopped_at: Mutex<Option<Instant>>,
    /// Event streams being read, over every thread (`streams::BenchStreams`).
    pub(crate) streams_open: AtomicU64,
}

impl Bench {
    /// The end of a closed-model run with a duration: completions after it are not counted.
    pub(crate) fn closed_deadline(&self) -> Option<Instant> {
        match (&self.open, self.cfg.duration()) {
            (None, Some(d)) => Some(self.core.start + d),
            _ => None,
        }
    }

    /// Connections at second `t`: ramped linearly in the closed model, those started so far in the
    /// open model.
    fn users_at(&self, elapsed: Duration) -> u64 {
        let ramp = self.cfg.ramp().as_secs_f64();
        let c = self.cfg.connections as f64;
        if self.open.is_some() {
            self.conns_started.load(Ordering::Relaxed)
        } else if ramp > 0.0 {
            (c * ((elapsed.as_secs() as f64 + 1.0) / ramp).min(1.0)).ceil() as u64
        } else {
            c as u64
        }
    }
}

/// Checks the configuration, resolves and (by default) connects to the target once, then starts.
pub fn start(cfg: BenchConfig, body: Vec<u8>) -> Result<Run<Bench>, StartError> {
    cfg.validate().map_err(StartError::Usage)?;
    let websocket = ws::is_ws_url(&cfg.url);
    if let Ok(u) = url::Url::parse(&cfg.url).as_ref().map(url::Url::scheme) {
        if !websocket && !matches!(u, "http" | "https") {
            let raw = &cfg.url;
            return Err(StartError::Usage(format!("invalid URL '{raw}': scheme '{u}' is not http, https, ws or wss")));
        }
    }
    let (url, method) = match websocket {
        true => (ws::http_url(&cfg.url), "GET"),
        false => (cfg.url.clone(), cfg.method.as_str()),
    };
    let mut spec = RequestSpec::new(&url, method, &cfg.headers, cfg.name.as_deref(), cfg.keepalive, body)
        .map_err(StartError::Usage)?;
    let handshake = match websocket {
        true => Some(Handshake::new(&spec.url, &cfg.headers).map_err(StartError::Usage)?),
        false => None,
    };
    if websocket {
        spec.method = "WS".into(); // the statistics' method: Locust's socket users use it too
    }
    let h2_head = match cfg.http2 {
        true => Some(encode_head(&request_template(&spec).map_err(StartError::Usage)?)),
        false => None,
    };
    spec.resolve().map_err(StartError::Target)?;
    let alpn: &[&[u8]] = if cfg.http2 { &[b"h2"] } else { &[b"http/1.1"] };
    let tls = spec.https.then(|| (tls::client_config(cfg.insecure, alpn), spec.host.as_str()));
    let connector = Connector::new(spec.addrs.clone(), tls).map_err(StartError::Usage)?;
    if cfg.preflight {
        preflight(&connector, &spec, handshake.as_ref(), cfg.timeout(), (cfg.insecure, cfg.http2))?;
    }

    let threads = run::thread_count(cfg.threads, cfg.connections);
    let (open, feeder_tx) = match cfg.rate {
        Some(_) => {
            let (tx, rx) = async_channel::unbounded();
            let state = OpenState {
                rx,
                intended: AtomicU64::new(0),
                feeder_done: AtomicBool::new(false),
                feeder_stop: AtomicBool::new(false),
            };
            (Some(state), Some(tx))
        }
        None => (None, None),
    };
    let core = RunCore::new();
    core.timeline.set_names(vec![(spec.method.clone(), spec.name.clone())]);
    let bench = Arc::new(Bench {
        threads,
        core: core.clone(),
        issued: AtomicU64::new(0),
        conns_started: AtomicU64::new(0),
        open,
        feeder: Mutex::new(None),
        drain_since: Mutex::new(None),
        stopped_at: Mutex::new(None),
        streams_open: AtomicU64::new(0),
        spec,
        handshake,
        cfg,
    });
    core.timeline.set_users(bench.users_at(Duration::ZERO));
    if let Some(tx) = feeder_tx {
        let b = bench.clone();
        let handle = std::thread::Builder::new()
            .name("squall-feeder".into())
            .spawn(move || {
                let c = &b.cfg;
                let schedule = Schedule::new(c.rate.unwrap(), c.arrival, c.ramp(), c.requests, c.duration());
                let open = b.open.as_ref().unwrap();
                schedule::feed(schedule, b.core.start, tx, &open.feeder_stop, &open.intended);
                open.feeder_done.store(true, Ordering::SeqCst);
            })
            .map_err(|e| StartError::Target(format!("cannot start the feeder thread: {e}")))?;
        *bench.feeder.lock().unwrap() = Some(handle);
    }
    let b = bench.clone();
    Run::start(core, bench, "squall-worker", threads, move |t| {
        worker::worker_thread(b.clone(), connector.clone(), h2_head.clone(), t)
    })
}

/// One connection (and TLS handshake, and WebSocket handshake, or HTTP/2's preface) before the run, so
/// that a dead target, a path that is no WebSocket or a server that does not speak HTTP/2 is one clear
/// error.
fn preflight(
    connector: &Connector,
    spec: &RequestSpec,
    handshake: Option<&Handshake>,
    timeout: Duration,
    (insecure, http2): (bool, bool),
) -> Result<(), StartError> {
    let target = crate::net::host_port(&spec.host, spec.port);
    let open = async {
        let mut io = connector.connect(0).await.map_err(Refused::Connect)?;
        if let Some(h) = handshake {
            // Opened as the run's are, and closed with a goodbye (close 1000): a server logged each
            // run's check as an abnormal closure (1006).
            let mut ws = crate::ws::WsConn::open(io, h).await.map_err(Refused::WebSocket)?;
            ws.close().await;
        } else if http2 {
            crate::http::h2lean::speaks_h2(&mut io, spec.https).await.map_err(Refused::Http2)?;
        }
        Ok(())
    };
    let outcome = run::runtime().block_on(async { tokio::time::timeout(timeout, open).await });
    let Ok(opened) = outcome else {
        return Err(StartError::Target(format!("cannot connect to {target}: timed out after {timeout:?}")));
    };
    opened.map_err(|refused| {
        StartError::Target(match refused {
            Refused::Connect(f) => {
                format!("cannot connect to {target}: {}{}", f.message(), tls::hint(&f.kind, insecure))
            }
            Refused::WebSocket(f) => format!("{target}{} did not open a WebSocket: {}", spec.name, f.message()),
            Refused::Http2(why) => {
                let how = if spec.https { "over TLS" } else { "without TLS (prior knowledge)" };
                format!("{target} does not speak HTTP/2 {how}: {why}; run without --http2 for HTTP/1.1")
            }
        })
    })
}

/// Why the preflight's connection did not serve: its connect (or TLS handshake), its WebSocket
/// handshake, or HTTP/2 (`speaks_h2`'s reason).
enum Refused {
    Connect(stats::Failure),
    WebSocket(stats::Failure),
    Http2(String),
}

impl Load for Bench {
    type Thread = worker::ThreadOutput;

    fn tick(&self, core: &RunCore, now: Instant, threads_done: bool) -> bool {
        core.timeline.set_users(self.users_at(now.saturating_duration_since(core.start)));
        if self.closed_deadline().is_some_and(|d| now >= d) && core.reason() == StopReason::Running {
            core.stop(StopReason::Deadline);
        }
        if let Some(open) = &self.open {
            // The feeder's sender is gone once it is done, so workers end when the queue is empty;
            // a backlog that does not drain within one timeout is reported as dropped.
            if open.feeder_done.load(Ordering::SeqCst) {
                // Event streams need not end (docs/sse.md): once every request still in flight is one,
                // the run is over at its end, not one timeout later (`finish`: as a duration's end).
                let streams = self.streams_open.load(Ordering::SeqCst);
                let sent = open.intended.load(Ordering::SeqCst).saturating_sub(open.rx.len() as u64);
                let only_streams = streams > 0 && sent.saturating_sub(core.timeline.counts().0) <= streams;
                if only_streams && core.reason() == StopReason::Running {
                    let ended = if self.cfg.duration.is_some() { StopReason::Deadline } else { StopReason::Completed };
                    core.stop(ended);
                }
                let since = *self.drain_since.lock().unwrap().get_or_insert(now);
                if now.duration_since(since) > self.cfg.timeout() && core.reason() == StopReason::Running {
                    core.stop(StopReason::DrainTimeout);
                }
            }
        }
        if core.stopping() {
            self.stopped_at.lock().unwrap().get_or_insert(now);
        }
        threads_done
    }

    fn progress(&self, _core: &RunCore, _p: &mut Progress) {}

    fn finish(&self, core: &RunCore, outputs: Vec<worker::ThreadOutput>) -> RunResult {
        if let Some(open) = &self.open {
            open.feeder_stop.store(true, Ordering::SeqCst);
        }
        if let Some(f) = self.feeder.lock().unwrap().take() {
            let _ = f.join();
        }
        let closed_deadline = self.closed_deadline();
        let cfg_end = self.cfg.duration().map(|d| core.start + d);
        if core.reason() == StopReason::Running {
            let ran_out = closed_deadline.is_some_and(|d| Instant::now() >= d);
            core.set_reason(if ran_out { StopReason::Deadline } else { StopReason::Completed });
        }
        let reason = core.reason();
        let end = match reason {
            // (the open model's Deadline: its streams were all that was left when its schedule ended, `tick`)
            StopReason::Deadline => closed_deadline.or(cfg_end).unwrap_or_else(Instant::now),
            StopReason::Interrupted => self.stopped_at.lock().unwrap().unwrap_or_else(Instant::now),
            _ => outputs.iter().filter_map(|o| o.last_completion).max().unwrap_or_else(Instant::now),
        };
        let mut merged = Vec::new();
        let mut timings = Vec::new();
        let mut streams = Vec::new();
        let mut errors = HashMap::new();
        let mut connect = stats::new_histogram();
        let (mut abandoned, mut lag) = (0, Lag::default());
        for o in outputs {
            stats::merge_vec(&mut merged, &o.recorder.totals);
            stats::timing::merge_vec(&mut timings, &o.recorder.timings);
            stats::streams::merge_vec(&mut streams, &o.recorder.streams);
            stats::merge_errors(&mut errors, o.recorder.errors);
            connect.add(&o.recorder.connect).expect("auto-resizing histograms always merge");
            abandoned += o.abandoned;
            lag.add(&o.recorder.lag);
        }
        let cfg = &self.cfg;
        let schedule = self.open.as_ref().map(|o| {
            let arrival = format!("{:?}", cfg.arrival).to_lowercase();
            ScheduleReport::new(
                cfg.rate.unwrap_or(0.0),
                &arrival,
                o.intended.load(Ordering::Relaxed),
                &lag,
                o.rx.len() as u64,
            )
        });
        result::build(result::Inputs {
            kind: "http".into(),
            url: cfg.url.clone(),
            method: self.spec.method.clone(),
            start_unix: core.start_unix,
            load: result::LoadReport {
                model: if self.open.is_some() { "open" } else { "closed" }.into(),
                connections: cfg.connections,
                threads: self.threads,
                requests: cfg.requests,
                duration_s: cfg.duration,
                ramp_s: cfg.ramp,
                http2: cfg.http2,
                keepalive: cfg.keepalive,
                timeout_s: Some(cfg.timeout),
            },
            names: vec![(self.spec.method.clone(), self.spec.name.clone())],
            schedule,
            reason,
            duration: end.saturating_duration_since(core.start),
            reset: None,
            totals: merged,
            timings,
            streams,
            errors,
            connect,
            seconds: core.timeline.all(),
            abandoned,
        })
    }
}
