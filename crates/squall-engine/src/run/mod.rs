//! The run core: one lifecycle for every kind of load. A run is a load model (closed, open with a
//! schedule, or a shape) driving one kind of virtual user (an HTTP connection, a scripted user, an
//! MQTT client); the kinds plug in through `Load`, and share
//! - the start (engine threads, each a tokio current-thread runtime, then a coordinator thread),
//! - the stop (one reason, the first one wins, seen by every thread through one signal),
//! - the live statistics (one `Timeline`: per-second stats published as a stream, and progress),
//! - the end (the threads joined, then one typed `RunResult`).
//!
//! The coordinator wakes every 10 ms: it publishes finished seconds and lets the load decide
//! whether the run is over (a deadline, a drained backlog, a phase change).

pub mod clock;
pub mod dispatch;
pub mod schedule;

use crate::stats::result::RunResult;
use crate::stats::stream::{Second, Timeline};
use crate::types::{StartError, StopReason};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// How often the coordinator wakes.
const TICK: Duration = Duration::from_millis(10);

/// What every kind of load shares while it runs: the clock's origin, the stop, the statistics.
pub struct RunCore {
    pub start: Instant,
    pub start_unix: f64,
    pub timeline: Arc<Timeline>,
    reason: AtomicU8,
    stop_tx: watch::Sender<bool>,
}

impl RunCore {
    pub fn new() -> Arc<RunCore> {
        let start = Instant::now();
        Arc::new(RunCore {
            start,
            start_unix: unix_now(),
            timeline: Timeline::new(start),
            reason: AtomicU8::new(StopReason::Running as u8),
            stop_tx: watch::channel(false).0,
        })
    }

    /// Stops the run for `reason` (the first reason given wins); every thread sees it through `stopped`.
    pub fn stop(&self, reason: StopReason) {
        self.set_reason(reason);
        self.stop_tx.send_replace(true);
    }

    /// Records why the run ends without signalling the threads (they are ending by themselves).
    pub fn set_reason(&self, reason: StopReason) {
        let running = StopReason::Running as u8;
        let _ = self.reason.compare_exchange(running, reason as u8, Ordering::SeqCst, Ordering::SeqCst);
    }

    pub fn reason(&self) -> StopReason {
        StopReason::from_u8(self.reason.load(Ordering::SeqCst))
    }

    pub fn stopping(&self) -> bool {
        *self.stop_tx.borrow()
    }

    /// Resolves once the run is told to stop.
    pub fn stopped(&self) -> impl std::future::Future<Output = ()> + 'static {
        let mut rx = self.stop_tx.subscribe();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }
}

pub fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Live numbers of a run, for progress lines.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    pub elapsed: f64,
    pub completed: u64,
    pub failed: u64,
    /// Virtual users now: connections, users or clients.
    pub users: u64,
    pub finished: bool,
    /// `running`, or the load's own phase (MQTT: connecting, running, draining, closed).
    pub phase: &'static str,
    pub mqtt: Option<MqttCounts>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct MqttCounts {
    pub connected: u64,
    pub sent: u64,
    pub published: u64,
    pub failed: u64,
    pub delivered: u64,
}

/// A kind of load the run core drives.
pub trait Load: Send + Sync + 'static {
    /// What each engine thread hands back when it ends.
    type Thread: Send + 'static;

    /// Called by the coordinator every 10 ms: stops the run when its end has come (`core.stop`) and
    /// keeps the users gauge. Returns true when the run is over (`threads_done`: every engine thread
    /// has ended); the threads are then joined and `finish` builds the result.
    fn tick(&self, core: &RunCore, now: Instant, threads_done: bool) -> bool;

    /// The load's own live numbers (the core fills in elapsed, counts and `finished`).
    fn progress(&self, _core: &RunCore, _p: &mut Progress) {}

    /// Stops the run early (Ctrl-C, a driver's stop): what was measured is still reported.
    fn interrupt(&self, core: &RunCore) {
        if core.reason() == StopReason::Running {
            core.stop(StopReason::Interrupted);
        }
    }

    /// Builds the result once every thread has been joined.
    fn finish(&self, core: &RunCore, threads: Vec<Self::Thread>) -> RunResult;
}

/// A run in progress.
pub struct Run<L: Load> {
    core: Arc<RunCore>,
    load: Arc<L>,
    coordinator: Option<JoinHandle<RunResult>>,
}

impl<L: Load> Run<L> {
    /// Starts `threads` engine threads, named `name-0`, `name-1`, ..., each running `body(index)`,
    /// and the coordinator.
    pub fn start(
        core: Arc<RunCore>,
        load: Arc<L>,
        name: &str,
        threads: usize,
        body: impl Fn(usize) -> L::Thread + Send + Sync + 'static,
    ) -> Result<Run<L>, StartError> {
        let body = Arc::new(body);
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let body = body.clone();
            let handle = std::thread::Builder::new()
                .name(format!("{name}-{t}"))
                .spawn(move || body(t))
                .map_err(|e| StartError::Target(format!("cannot start an engine thread: {e}")))?;
            handles.push(handle);
        }
        let coordinator = {
            let (core, load) = (core.clone(), load.clone());
            std::thread::Builder::new()
                .name("squall-coordinator".into())
                .spawn(move || coordinate(&core, &*load, handles))
                .map_err(|e| StartError::Target(format!("cannot start the coordinator: {e}")))?
        };
        Ok(Run { core, load, coordinator: Some(coordinator) })
    }

    pub fn core(&self) -> &Arc<RunCore> {
        &self.core
    }

    pub fn load(&self) -> &Arc<L> {
        &self.load
    }

    /// Stops the run early; the result still holds everything measured so far.
    pub fn stop(&self) {
        self.load.interrupt(&self.core);
    }

    pub fn progress(&self) -> Progress {
        let (completed, failed) = self.core.timeline.counts();
        let mut p = Progress {
            elapsed: self.core.elapsed().as_secs_f64(),
            completed,
            failed,
            users: self.core.timeline.users(),
            finished: self.is_finished(),
            phase: "running",
            mqtt: None,
        };
        self.load.progress(&self.core, &mut p);
        p
    }

    /// Published seconds from `cursor` on (waiting up to `timeout` for one).
    pub fn seconds_since(&self, cursor: u64, timeout: Duration) -> Vec<Arc<Second>> {
        self.core.timeline.seconds_since(cursor, timeout)
    }

    pub fn is_finished(&self) -> bool {
        self.coordinator.as_ref().is_none_or(|h| h.is_finished())
    }

    /// Waits for the end of the run and returns its result.
    pub fn wait(mut self) -> RunResult {
        self.coordinator.take().expect("wait is called once").join().expect("the coordinator does not panic")
    }
}

fn coordinate<L: Load>(core: &RunCore, load: &L, threads: Vec<JoinHandle<L::Thread>>) -> RunResult {
    loop {
        let now = Instant::now();
        core.timeline.set_connections(crate::net::open_connections());
        core.timeline.publish_ready(now);
        let done = threads.iter().all(|t| t.is_finished());
        if load.tick(core, now, done) {
            break;
        }
        std::thread::sleep(TICK);
    }
    let outputs = threads.into_iter().map(|t| t.join().expect("engine threads do not panic")).collect();
    core.timeline.publish_until(core.elapsed().as_secs());
    let result = load.finish(core, outputs);
    core.timeline.publish_until(result.timeseries.len() as u64);
    result
}

/// The number of engine threads: as asked, else one per core the process may use, at most `most`.
pub fn thread_count(asked: Option<usize>, most: usize) -> usize {
    asked.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)).clamp(1, most.max(1))
}

/// A tokio current-thread runtime for one engine thread.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}
