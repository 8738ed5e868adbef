//! One worker thread of a run: its tokio current-thread runtime, its connections (one worker task
//! each, or one per HTTP/2 stream), how each worker gets its next send (closed or open model), the
//! HTTP/1.1 and HTTP/2 requests and WebSocket exchanges, and the watchdog that times them out.

use super::streams::BenchStreams;
use super::Bench;
use crate::http::h1::{H1Conn, Keep, Timing};
use crate::http::h2lean::{Head, LeanConn};
use crate::net::Connector;
use crate::run::dispatch::{Dispatch, Slot};
use crate::stats::{self, Outcome, Received, Recorder, StreamClock};
use crate::ws::WsConn;
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What one worker thread hands back.
pub struct ThreadOutput {
    pub recorder: Recorder,
    /// Requests still in flight when the run ended: neither counted nor lost silently.
    pub abandoned: u64,
    pub last_completion: Option<Instant>,
}

struct ThreadCtx {
    shared: Arc<Bench>,
    connector: Connector,
    recorder: RefCell<Recorder>,
    in_flight: Cell<u64>,
    last_completion: Cell<Option<Instant>>,
    /// This thread's workers, so the watchdog can time them out and start replacements.
    workers: RefCell<Vec<WorkerSpec>>,
    /// Workers (and the open model's dispatcher) that have not finished of their own accord; `done`
    /// fires when none are left.
    live: Cell<usize>,
    done: tokio::sync::Notify,
    /// HTTP/2: the request's header blocks, the same for every stream (`h2lean::encode_head`).
    h2_head: Option<Head>,
    /// Open model: hands intended send times to this thread's idle workers.
    dispatch: Dispatch,
    body: Bytes,
    head: bool,
    timeout: Duration,
    /// Closed model with a duration: completions after it are not counted.
    deadline: Option<Instant>,
    /// Workers across all threads (for the closed-model ramp).
    total_workers: usize,
}

pub(crate) fn worker_thread(shared: Arc<Bench>, connector: Connector, h2_head: Option<Head>, t: usize) -> ThreadOutput {
    let rt = crate::run::runtime();
    let local = tokio::task::LocalSet::new();
    let recorder = Recorder::new(shared.core.timeline.clone());
    let cfg = &shared.cfg;
    let streams = if cfg.http2 { cfg.h2_streams } else { 1 };
    let ctx = Rc::new(ThreadCtx {
        connector,
        recorder: RefCell::new(recorder),
        in_flight: Cell::new(0),
        last_completion: Cell::new(None),
        workers: RefCell::new(Vec::new()),
        live: Cell::new(0),
        done: tokio::sync::Notify::new(),
        h2_head,
        dispatch: Dispatch::default(),
        body: Bytes::from(shared.spec.body.clone()),
        head: shared.spec.method == "HEAD",
        timeout: cfg.timeout(),
        deadline: shared.closed_deadline(),
        total_workers: cfg.connections * streams,
        shared: shared.clone(),
    });
    let stopped = shared.core.stopped();
    local.block_on(&rt, async {
        // Connections are dealt round-robin: thread t takes connections t, t+threads, ...
        for conn in (t..cfg.connections).step_by(shared.threads) {
            let h2 = cfg.http2.then(|| Rc::new(LeanConn::new(conn)));
            for s in 0..streams {
                let spec = WorkerSpec { index: conn * streams + s, conn, h2: h2.clone(), watch: Rc::default() };
                ctx.workers.borrow_mut().push(spec);
            }
        }
        let count = ctx.workers.borrow().len();
        if shared.open.is_some() {
            // Workers start as the rate needs them: spawning thousands up front takes milliseconds
            // (20 ms for 10,000), which the run's first sends would spend waiting.
            ctx.live.set(1); // the dispatcher, until its queue is finished
            let ctx = ctx.clone();
            tokio::task::spawn_local(async move {
                let start_worker = |i, token| {
                    ctx.live.set(ctx.live.get() + 1);
                    if i % streams == 0 {
                        // This thread's workers start in order, `streams` to a connection.
                        ctx.shared.conns_started.fetch_add(1, Ordering::Relaxed);
                    }
                    spawn_worker(&ctx, i, Begin::WithSend(token));
                };
                ctx.dispatch.run(&open_rx(&ctx), count, start_worker).await;
                worker_finished(&ctx);
            });
        } else {
            ctx.live.set(count);
            for i in 0..count {
                spawn_worker(&ctx, i, Begin::Initial);
            }
        }
        let watchdog = tokio::task::spawn_local(watchdog(ctx.clone()));
        let deadline = async {
            match ctx.deadline {
                Some(d) => tokio::time::sleep_until(d.into()).await,
                None => std::future::pending().await,
            }
        };
        let all_done = async {
            while ctx.live.get() > 0 {
                ctx.done.notified().await;
            }
        };
        tokio::select! {
            _ = all_done => {}
            _ = stopped => {}
            _ = deadline => {}
        }
        watchdog.abort();
        for w in ctx.workers.borrow().iter() {
            if let Some(h) = w.watch.task.borrow().as_ref() {
                h.abort();
            }
        }
    });
    drop(local); // drops the aborted tasks, and with them their connections
    let abandoned = ctx.in_flight.get();
    let last_completion = ctx.last_completion.get();
    let ctx = Rc::try_unwrap(ctx).ok().expect("all tasks are gone");
    let mut recorder = ctx.recorder.into_inner();
    recorder.finish();
    ThreadOutput { recorder, abandoned, last_completion }
}

fn open_rx(ctx: &ThreadCtx) -> async_channel::Receiver<Instant> {
    ctx.shared.open.as_ref().expect("open model").rx.clone()
}

/// Waits for this worker's next send: now (closed model) or the next intended time (open model;
/// `given` is one the dispatcher started this worker with). `now` is the previous completion's
/// timestamp, when there was one: in the closed model the next request starts right then, so the
/// clock need not be read twice.
async fn next_send(
    ctx: &ThreadCtx,
    slot: &Rc<Slot>,
    given: &mut Option<Instant>,
    now: Option<Instant>,
) -> Option<Instant> {
    let shared = &ctx.shared;
    match &shared.open {
        None => {
            if let Some(n) = shared.cfg.requests {
                if shared.issued.fetch_add(1, Ordering::Relaxed) >= n {
                    return None;
                }
            }
            Some(now.unwrap_or_else(Instant::now))
        }
        Some(open) => {
            let intended = match given.take() {
                Some(t) => t,
                None => ctx.dispatch.next(slot, &open.rx).await?,
            };
            let now = Instant::now();
            ctx.recorder.borrow_mut().note_lag(now, now.saturating_duration_since(intended));
            Some(intended)
        }
    }
}

/// One worker: a connection (or an HTTP/2 stream slot) sending requests one after another.
struct WorkerSpec {
    index: usize,
    conn: usize,
    h2: Option<Rc<LeanConn>>,
    watch: Rc<Watch>,
}

/// What the watchdog sees of a worker's request in flight.
#[derive(Default)]
struct Watch {
    /// When the request began: the intended send time in the open model.
    begin: Cell<Option<Instant>>,
    /// When it really started; the timeout counts from here. None when idle.
    started: Cell<Option<Instant>>,
    connecting: Cell<bool>,
    /// Reading an event stream's body (`BenchStreams`): a timeout cuts the stream.
    streaming: Cell<bool>,
    task: RefCell<Option<tokio::task::AbortHandle>>,
}

/// How a worker task begins.
#[derive(Clone, Copy)]
enum Begin {
    /// At the start of a closed-model run (after its place in the ramp).
    Initial,
    /// Open model: started by the dispatcher to make this intended send.
    WithSend(Instant),
    /// In place of a worker the watchdog timed out.
    Replacement,
}

fn spawn_worker(ctx: &Rc<ThreadCtx>, i: usize, how: Begin) {
    let workers = ctx.workers.borrow();
    let w = &workers[i];
    let (ctx, index, watch) = (ctx.clone(), w.index, w.watch.clone());
    let task = match &w.h2 {
        Some(conn) => tokio::task::spawn_local(worker(ctx, index, H2Wire(conn.clone()), watch.clone(), how)),
        None if ctx.shared.handshake.is_some() => {
            tokio::task::spawn_local(worker(ctx, index, WsWire { conn: None, index: w.conn }, watch.clone(), how))
        }
        None => tokio::task::spawn_local(worker(ctx, index, H1Wire { conn: None, index: w.conn }, watch.clone(), how)),
    };
    *watch.task.borrow_mut() = Some(task.abort_handle());
}

fn worker_finished(ctx: &ThreadCtx) {
    ctx.live.set(ctx.live.get() - 1);
    if ctx.live.get() == 0 {
        ctx.done.notify_one();
    }
}

/// How a worker makes its requests: an HTTP/1.1 connection, a stream slot of an HTTP/2 one, or a
/// WebSocket. The worker is generic over it so that each task holds only its own protocol's state: a
/// worker that could take any of the three was 3,456 bytes a task, a third of what a WebSocket
/// connection cost in all at 10,000 of them.
trait Wire {
    /// One request; `begin` is when its latency counts from (an event stream's first event too).
    async fn exchange(&mut self, ctx: &ThreadCtx, watch: &Watch, begin: Instant) -> Exchanged;

    /// The worker ran its share (not the run's end, which aborts it).
    async fn finish(&mut self) {}
}

struct H1Wire {
    conn: Option<H1Conn>,
    index: usize,
}

struct H2Wire(Rc<LeanConn>);

struct WsWire {
    conn: Option<WsConn>,
    index: usize,
}

impl Wire for H1Wire {
    async fn exchange(&mut self, ctx: &ThreadCtx, watch: &Watch, begin: Instant) -> Exchanged {
        h1_request(ctx, &mut self.conn, self.index, watch, begin).await
    }
}

impl Wire for H2Wire {
    async fn exchange(&mut self, ctx: &ThreadCtx, watch: &Watch, begin: Instant) -> Exchanged {
        h2_request(ctx, &self.0, watch, begin).await
    }
}

impl Wire for WsWire {
    async fn exchange(&mut self, ctx: &ThreadCtx, watch: &Watch, _begin: Instant) -> Exchanged {
        ws_exchange(ctx, &mut self.conn, self.index, watch).await
    }

    async fn finish(&mut self) {
        if let Some(ws) = self.conn.as_mut() {
            // A WebSocket that ran its share says goodbye (those the run's end aborts just close).
            let _ = tokio::time::timeout(Duration::from_millis(100), ws.close()).await;
        }
    }
}

async fn worker(ctx: Rc<ThreadCtx>, index: usize, mut wire: impl Wire, watch: Rc<Watch>, how: Begin) {
    let ramp = ctx.shared.cfg.ramp();
    if matches!(how, Begin::Initial) && !ramp.is_zero() {
        let offset = ramp.mul_f64(index as f64 / ctx.total_workers as f64);
        tokio::time::sleep_until((ctx.shared.core.start + offset).into()).await;
    }
    let mut given = match how {
        Begin::WithSend(t) => Some(t),
        _ => None,
    };
    let slot = Rc::new(Slot::default());
    let open = ctx.shared.open.is_some();
    let mut last_completion = None;
    while let Some(begin) = next_send(&ctx, &slot, &mut given, last_completion).await {
        watch.begin.set(Some(begin));
        watch.started.set(Some(if open { Instant::now() } else { begin }));
        ctx.in_flight.set(ctx.in_flight.get() + 1);
        let result = wire.exchange(&ctx, &watch, begin).await;
        watch.started.set(None);
        let now = Instant::now();
        if ctx.deadline.is_some_and(|d| now > d) {
            break; // finished after the run's end: left in flight, like the requests still running
        }
        ctx.in_flight.set(ctx.in_flight.get() - 1);
        let (outcome, timing) = match result {
            Ok((status, body_bytes, wire_bytes, timing)) => {
                (Outcome::Response { status, body_bytes, wire_bytes }, timing)
            }
            Err(f) => (Outcome::Failed(f), Timing::default()),
        };
        ctx.last_completion.set(Some(now));
        let mut recorder = ctx.recorder.borrow_mut();
        recorder.record(now, 0, now.saturating_duration_since(begin), &outcome);
        if let Some(written) = timing.written {
            recorder.timing(0).exchange(written, timing.first_byte, now);
        }
        drop(recorder);
        last_completion = Some(now);
    }
    wire.finish().await;
    worker_finished(&ctx);
}

/// Status, body and wire bytes, and what an HTTP/1.1 exchange saw of its phases (HTTP/2: nothing).
type Exchanged = Result<(u16, u64, u64, Timing), stats::Failure>;

async fn h1_request(
    ctx: &ThreadCtx,
    conn: &mut Option<H1Conn>,
    conn_index: usize,
    watch: &Watch,
    begin: Instant,
) -> Exchanged {
    let open = async || Ok(H1Conn::new(opening(ctx, watch, ctx.connector.connect_timed(conn_index)).await?));
    let spec = &ctx.shared.spec;
    let mut t = Timing::default();
    let mut streams = bench_streams(ctx, watch, begin);
    let resp = crate::http::h1::exchange_keepalive_watched(
        conn,
        open,
        &spec.h1_bytes,
        ctx.head,
        Keep::Nothing,
        spec.keepalive,
        &mut t,
        &mut streams,
    )
    .await;
    streams.ended(resp.as_ref().err());
    let resp = resp?;
    // An event stream's bytes were counted received as they came (`BenchStreams::received`): not twice.
    let (body, wire) = streams.received.less(resp.body_bytes, resp.wire_bytes);
    Ok((resp.status, body, wire, t))
}

async fn h2_request(ctx: &ThreadCtx, conn: &LeanConn, watch: &Watch, begin: Instant) -> Exchanged {
    let head = ctx.h2_head.as_ref().expect("HTTP/2 runs have header blocks");
    let on_connect = |t| ctx.recorder.borrow_mut().record_connect(t);
    let mut streams = bench_streams(ctx, watch, begin);
    let r = conn.exchange(&ctx.connector, head, &ctx.body, on_connect, &watch.connecting, &mut streams).await;
    streams.ended(r.as_ref().err());
    let r = r?;
    Ok((r.status, r.body_bytes, r.wire_bytes, Timing::default()))
}

/// A request's watch of the event stream its answer may be.
fn bench_streams<'a>(ctx: &'a ThreadCtx, watch: &'a Watch, begin: Instant) -> BenchStreams<'a> {
    BenchStreams {
        recorder: &ctx.recorder,
        open: &ctx.shared.streams_open,
        started: &watch.started,
        streaming: &watch.streaming,
        clock: StreamClock::new(begin),
        opened: false,
        received: Received::default(),
    }
}

/// Opens a worker's connection (`open`: its TCP connect, TLS, and a WebSocket's handshake), watched as
/// connecting (a timeout then is a connect timeout) and timed: the connect time, and its TCP and TLS
/// phases, of a connection opened (a refused or failed one is its request's failure, not a connect:
/// against a server gone, the summary read "150,440 opened" for 150,434 refusals).
async fn opening<T>(
    ctx: &ThreadCtx,
    watch: &Watch,
    open: impl std::future::Future<Output = Result<(T, crate::net::Opened), stats::Failure>>,
) -> Result<T, stats::Failure> {
    watch.connecting.set(true);
    let t0 = Instant::now();
    let opened = open.await;
    watch.connecting.set(false);
    let (conn, o) = opened?;
    let mut recorder = ctx.recorder.borrow_mut();
    recorder.record_connect(t0.elapsed());
    recorder.timing(0).opened(o.tcp, o.tls);
    Ok(conn)
}

/// One WebSocket exchange: the message sent and its reply read, on this worker's connection (opened
/// first, its handshake included in the connect time). Its status is 0: a message has none.
async fn ws_exchange(ctx: &ThreadCtx, conn: &mut Option<WsConn>, conn_index: usize, watch: &Watch) -> Exchanged {
    if conn.is_none() {
        // Boxed: the connect, TLS and the handshake would otherwise sit in every worker's task, waiting
        // or not (about 1 KB each); once a connection, the allocation is nothing.
        let open = Box::pin(async {
            let (stream, o) = ctx.connector.connect_timed(conn_index).await?;
            let handshake = ctx.shared.handshake.as_ref().expect("a WebSocket run has its handshake");
            Ok::<_, stats::Failure>((WsConn::open(stream, handshake).await?, o))
        });
        *conn = Some(opening(ctx, watch, open).await?);
    }
    let ws = conn.as_mut().expect("opened above");
    match ws.exchange(&ctx.body, ctx.shared.cfg.binary).await {
        Ok(reply) => Ok((0, reply.bytes, reply.bytes, Timing::default())),
        Err(f) => {
            *conn = None; // a failed exchange leaves the connection in an unknown state
            Err(f)
        }
    }
}

/// Per thread: times out requests (no timer per request: one scan a few times a second) and hands
/// finished seconds to the timeline even when the thread is idle. A timed-out worker is aborted, which
/// drops its connection, and a fresh worker takes its place.
async fn watchdog(ctx: Rc<ThreadCtx>) {
    let tick = (ctx.timeout / 20).clamp(Duration::from_millis(1), Duration::from_millis(100));
    let mut interval = tokio::time::interval(tick);
    loop {
        interval.tick().await;
        let now = Instant::now();
        ctx.recorder.borrow_mut().roll(now);
        let count = ctx.workers.borrow().len();
        for i in 0..count {
            let watch = ctx.workers.borrow()[i].watch.clone();
            let Some(started) = watch.started.get() else { continue };
            if now.saturating_duration_since(started) < ctx.timeout {
                continue;
            }
            if let Some(task) = watch.task.borrow_mut().take() {
                task.abort();
            }
            let kind =
                if watch.connecting.get() { stats::FailureKind::ConnectTimeout } else { stats::FailureKind::Timeout };
            watch.started.set(None);
            watch.connecting.set(false);
            ctx.in_flight.set(ctx.in_flight.get() - 1);
            let begin = watch.begin.get().unwrap_or(started);
            let failure = stats::Failure::new(kind, "");
            let mut recorder = ctx.recorder.borrow_mut();
            if watch.streaming.replace(false) {
                recorder.stream(0).cut(failure.message());
                ctx.shared.streams_open.fetch_sub(1, Ordering::SeqCst);
            }
            ctx.last_completion.set(Some(now));
            recorder.record(now, 0, now.saturating_duration_since(begin), &Outcome::Failed(failure));
            drop(recorder);
            spawn_worker(&ctx, i, Begin::Replacement);
        }
    }
}
