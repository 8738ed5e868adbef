//! Runs a load: one tokio current-thread runtime per worker thread, connections spread over them,
//! the closed model (each connection sends its next request when the last one ends) or the open model
//! (a pacer thread issues intended send times; latency counts from them), and a coordinator that ends
//! the run, condenses old seconds, and merges what the threads measured.

use crate::config::BenchConfig;
use crate::h2client::request_template;
use crate::net::Connector;
use crate::pacer::{self, Schedule};
use crate::request::RequestSpec;
use crate::result::{self, RunResult};
use crate::stats::{self, LiveCounters, Timeline};
use crate::tls;
use crate::worker;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// Sent more than this after its intended time, an open-model request counts as late.
pub const LATE_AFTER: Duration = Duration::from_millis(10);

/// Why a run could not start. `Usage` is the caller's input; `Target` is the target being unusable.
#[derive(Debug)]
pub enum StartError {
    Usage(String),
    Target(String),
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StartError::Usage(m) | StartError::Target(m) => f.write_str(m),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum StopReason {
    Running = 0,
    Completed = 1,
    Deadline = 2,
    Interrupted = 3,
    DrainTimeout = 4,
}

impl StopReason {
    pub(crate) fn from_u8(v: u8) -> Self {
        match v {
            1 => StopReason::Completed,
            2 => StopReason::Deadline,
            3 => StopReason::Interrupted,
            4 => StopReason::DrainTimeout,
            _ => StopReason::Running,
        }
    }

    /// The inverse of `as_str` (for merging result documents).
    pub fn parse(s: &str) -> Self {
        match s {
            "duration" => StopReason::Deadline,
            "interrupted" => StopReason::Interrupted,
            "drain_timeout" => StopReason::DrainTimeout,
            _ => StopReason::Completed,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Running => "running",
            StopReason::Completed => "completed",
            StopReason::Deadline => "duration",
            StopReason::Interrupted => "interrupted",
            StopReason::DrainTimeout => "drain_timeout",
        }
    }
}

/// Open-model bookkeeping shared by the pacer and the workers.
pub struct OpenState {
    pub rx: async_channel::Receiver<Instant>,
    pub intended: AtomicU64,
    pub sent: AtomicU64,
    pub late: AtomicU64,
    pub lag_max_us: AtomicU64,
    pub lag_sum_us: AtomicU64,
    pub pacer_done: AtomicBool,
}

pub struct Shared {
    pub cfg: BenchConfig,
    pub spec: RequestSpec,
    pub start: Instant,
    pub start_unix: f64,
    pub threads: usize,
    pub(crate) stop_tx: watch::Sender<bool>,
    stopping: AtomicBool,
    reason: AtomicU8,
    pub live: Vec<Arc<LiveCounters>>,
    pub timeline: Arc<Timeline>,
    /// Closed model with a request count: requests claimed so far.
    pub(crate) issued: AtomicU64,
    pub open: Option<OpenState>,
}

impl Shared {
    /// The end of a closed-model run with a duration: completions after it are not counted.
    pub(crate) fn closed_deadline(&self) -> Option<Instant> {
        match (&self.open, self.cfg.duration()) {
            (None, Some(d)) => Some(self.start + d),
            _ => None,
        }
    }

    fn stop(&self, reason: StopReason) {
        if !self.stopping.swap(true, Ordering::SeqCst) {
            self.reason.store(reason as u8, Ordering::SeqCst);
        }
        self.stop_tx.send_replace(true);
    }

    pub fn reason(&self) -> StopReason {
        StopReason::from_u8(self.reason.load(Ordering::SeqCst))
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Progress {
    pub elapsed: f64,
    pub completed: u64,
    pub failed: u64,
    pub finished: bool,
}

/// A run in progress.
pub struct Run {
    shared: Arc<Shared>,
    coordinator: Option<JoinHandle<RunResult>>,
}

impl Run {
    /// Checks the configuration, resolves and (by default) connects to the target once, then starts.
    pub fn start(cfg: BenchConfig, body: Vec<u8>) -> Result<Run, StartError> {
        cfg.validate().map_err(StartError::Usage)?;
        let mut spec = RequestSpec::new(&cfg, body).map_err(StartError::Usage)?;
        let h2_template = if cfg.http2 { Some(request_template(&spec).map_err(StartError::Usage)?) } else { None };
        spec.resolve().map_err(StartError::Target)?;
        let alpn: &[&[u8]] = if cfg.http2 { &[b"h2"] } else { &[b"http/1.1"] };
        let tls = spec.https.then(|| (tls::client_config(cfg.insecure, alpn), spec.host.as_str()));
        let connector = Connector::new(spec.addrs.clone(), tls).map_err(StartError::Usage)?;
        if cfg.preflight {
            preflight(&connector, &spec, cfg.timeout(), cfg.insecure)?;
        }

        let threads = cfg
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1))
            .clamp(1, cfg.connections);
        let (stop_tx, _) = watch::channel(false);
        let (open, pacer_tx) = match cfg.rate {
            Some(_) => {
                let (tx, rx) = async_channel::unbounded();
                let state = OpenState {
                    rx,
                    intended: AtomicU64::new(0),
                    sent: AtomicU64::new(0),
                    late: AtomicU64::new(0),
                    lag_max_us: AtomicU64::new(0),
                    lag_sum_us: AtomicU64::new(0),
                    pacer_done: AtomicBool::new(false),
                };
                (Some(state), Some(tx))
            }
            None => (None, None),
        };
        let start = Instant::now();
        let start_unix = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let shared = Arc::new(Shared {
            threads,
            live: (0..threads).map(|_| Arc::new(LiveCounters::default())).collect(),
            timeline: Timeline::new(),
            stop_tx,
            stopping: AtomicBool::new(false),
            reason: AtomicU8::new(StopReason::Running as u8),
            issued: AtomicU64::new(0),
            open,
            start,
            start_unix,
            spec,
            cfg,
        });

        let mut workers = Vec::with_capacity(threads);
        for t in 0..threads {
            let (shared, connector, template) = (shared.clone(), connector.clone(), h2_template.clone());
            let handle = std::thread::Builder::new()
                .name(format!("squall-worker-{t}"))
                .spawn(move || worker::worker_thread(shared, connector, template, t))
                .map_err(|e| StartError::Target(format!("cannot start a worker thread: {e}")))?;
            workers.push(handle);
        }
        let pacer = pacer_tx.map(|tx| {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("squall-pacer".into())
                .spawn(move || {
                    let c = &shared.cfg;
                    let schedule = Schedule::new(c.rate.unwrap(), c.arrival, c.ramp(), c.requests, c.duration());
                    let open = shared.open.as_ref().unwrap();
                    pacer::run(schedule, shared.start, tx, &shared.stopping, &open.intended);
                    open.pacer_done.store(true, Ordering::SeqCst);
                })
                .expect("spawning the pacer thread")
        });
        let coordinator = {
            let shared = shared.clone();
            std::thread::Builder::new()
                .name("squall-coordinator".into())
                .spawn(move || coordinate(shared, workers, pacer))
                .map_err(|e| StartError::Target(format!("cannot start the coordinator: {e}")))?
        };
        Ok(Run { shared, coordinator: Some(coordinator) })
    }

    /// Stops the run early (Ctrl-C); what was measured so far is still reported.
    pub fn stop(&self) {
        if self.shared.reason() == StopReason::Running {
            self.shared.stop(StopReason::Interrupted);
        }
    }

    pub fn progress(&self) -> Progress {
        let (mut completed, mut failed) = (0, 0);
        for c in &self.shared.live {
            completed += c.completed.load(Ordering::Relaxed);
            failed += c.failed.load(Ordering::Relaxed);
        }
        Progress { elapsed: self.shared.start.elapsed().as_secs_f64(), completed, failed, finished: self.is_finished() }
    }

    pub fn is_finished(&self) -> bool {
        self.coordinator.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Waits for the end of the run and returns its result.
    pub fn wait(mut self) -> RunResult {
        self.coordinator.take().expect("wait is called once").join().expect("the coordinator does not panic")
    }
}

/// One connection (and TLS handshake) before the run, so that a dead target is one clear error.
fn preflight(connector: &Connector, spec: &RequestSpec, timeout: Duration, insecure: bool) -> Result<(), StartError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let target = format!("{}:{}", spec.host, spec.port);
    let outcome = rt.block_on(async { tokio::time::timeout(timeout, connector.connect(0)).await });
    match outcome {
        Ok(Ok(_)) => Ok(()),
        Err(_) => Err(StartError::Target(format!("cannot connect to {target}: timed out after {timeout:?}"))),
        Ok(Err(f)) => {
            let hint = if f.kind == stats::FailureKind::Tls && !insecure {
                " (use --insecure to skip certificate verification)"
            } else {
                ""
            };
            Err(StartError::Target(format!("cannot connect to {target}: {}{hint}", f.message())))
        }
    }
}

/// Ends the run when its duration is up (or the open model has drained), condenses finished seconds
/// as it goes, then merges the threads' statistics into the result.
fn coordinate(
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<worker::ThreadOutput>>,
    pacer: Option<JoinHandle<()>>,
) -> RunResult {
    let closed_deadline = shared.closed_deadline();
    let mut drain_since: Option<Instant> = None;
    let mut stopped_at: Option<Instant> = None;
    while !workers.iter().all(|w| w.is_finished()) {
        let now = Instant::now();
        let sec = now.saturating_duration_since(shared.start).as_secs();
        shared.timeline.close_before(sec.saturating_sub(2));
        if closed_deadline.is_some_and(|d| now >= d) && shared.reason() == StopReason::Running {
            shared.stop(StopReason::Deadline);
        }
        if let Some(open) = &shared.open {
            // The pacer's sender is gone once it is done, so workers end when the queue is empty;
            // a backlog that does not drain within one timeout is reported as dropped.
            if open.pacer_done.load(Ordering::SeqCst) {
                let since = *drain_since.get_or_insert(now);
                if now.duration_since(since) > shared.cfg.timeout() && shared.reason() == StopReason::Running {
                    shared.stop(StopReason::DrainTimeout);
                }
            }
        }
        if shared.stopping.load(Ordering::SeqCst) {
            stopped_at.get_or_insert(now);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if let Some(p) = pacer {
        shared.stopping.store(true, Ordering::SeqCst);
        let _ = p.join();
    }
    if shared.reason() == StopReason::Running {
        let ran_out = closed_deadline.is_some_and(|d| Instant::now() >= d);
        let reason = if ran_out { StopReason::Deadline } else { StopReason::Completed };
        shared.reason.store(reason as u8, Ordering::SeqCst);
    }
    let outputs: Vec<worker::ThreadOutput> =
        workers.into_iter().map(|w| w.join().expect("worker threads do not panic")).collect();
    let reason = shared.reason();
    let end = match reason {
        StopReason::Deadline => closed_deadline.unwrap(),
        StopReason::Interrupted => stopped_at.unwrap_or_else(Instant::now),
        _ => outputs.iter().filter_map(|o| o.last_completion).max().unwrap_or_else(Instant::now),
    };
    let mut merged = Vec::new();
    let mut errors = HashMap::new();
    let mut connect = stats::new_histogram();
    let mut abandoned = 0;
    for o in outputs {
        stats::merge_vec(&mut merged, &o.recorder.totals);
        stats::merge_errors(&mut errors, o.recorder.errors);
        connect.add(&o.recorder.connect).expect("auto-resizing histograms always merge");
        abandoned += o.abandoned;
    }
    let cfg = &shared.cfg;
    let open_model = shared.open.as_ref().map(|o| {
        let sent = o.sent.load(Ordering::Relaxed);
        result::OpenModelReport {
            rate: cfg.rate.unwrap_or(0.0),
            arrival: format!("{:?}", cfg.arrival).to_lowercase(),
            intended: o.intended.load(Ordering::Relaxed),
            sent,
            late: o.late.load(Ordering::Relaxed),
            late_after_ms: LATE_AFTER.as_millis() as u64,
            mean_lag_us: if sent == 0 { 0.0 } else { o.lag_sum_us.load(Ordering::Relaxed) as f64 / sent as f64 },
            max_lag_us: o.lag_max_us.load(Ordering::Relaxed),
            dropped: o.rx.len() as u64,
        }
    });
    // Concurrency at second t: the connections, ramped linearly in the closed model.
    let ramp = cfg.ramp().as_secs_f64();
    let ramped = shared.open.is_none() && ramp > 0.0;
    let users_at = |t: u64| {
        let c = cfg.connections as f64;
        if ramped {
            (c * ((t as f64 + 1.0) / ramp).min(1.0)).ceil() as u64
        } else {
            c as u64
        }
    };
    result::build(result::Inputs {
        kind: "http",
        url: cfg.url.clone(),
        method: shared.spec.method.clone(),
        start_unix: shared.start_unix,
        load: result::LoadReport {
            model: if shared.open.is_some() { "open" } else { "closed" }.into(),
            connections: cfg.connections,
            threads: shared.threads,
            requests: cfg.requests,
            duration_s: cfg.duration,
            ramp_s: cfg.ramp,
            http2: cfg.http2,
            keepalive: cfg.keepalive,
            timeout_s: cfg.timeout,
        },
        names: vec![(shared.spec.method.clone(), shared.spec.name.clone())],
        users_at: &users_at,
        open_model,
        reason,
        duration: end.saturating_duration_since(shared.start),
        totals: merged,
        errors,
        connect,
        timeline: shared.timeline.take_all(),
        abandoned,
    })
}
