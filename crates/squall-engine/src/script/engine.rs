//! What a scripted run's requests share: the caches (parsed URLs, origins and their connectors,
//! prepared request heads, endpoints), each user's connections and cookie jar, the requests in flight
//! and what is ready for the script, the open model's arrivals, and the recorder.

use crate::http::h1::H1Conn;
use crate::http::request::{finish_h1, head_capacity, parse_url, path_and_query, serialize_h1_head, write_h1_head};
use crate::mqtt::script::{Event, Sink, UserTx};
use crate::net::{tls, Connector};
use crate::run::schedule::Arrivals;
use crate::run::RunCore;
use crate::stats::{EndpointId, Failure, FailureKind, Outcome, Recorder};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

use super::cookies::Jar;
use super::pools::Pools;
use super::think::Thinkers;
use super::wait::Pace;
use super::{Completion, Message, RequestShape, ScriptOptions};

/// Parsed URLs kept per base: scripts that build a unique URL per request must not grow it forever.
const MAX_URLS: usize = 10_000;

/// Origins (scheme, host, port) a run keeps: a script's URLs and the redirects it follows. A server
/// that redirects each request to a new host name would otherwise grow the table without end (an
/// entry and a connector each); past it, a request to one more origin fails, said so.
const MAX_ORIGINS: usize = 10_000;

/// The longest host name a redirect may lead to: DNS's 253 bytes (RFC 1035).
pub(super) const MAX_HOST: usize = 253;

/// How many times `poll` must have found a deferral possible but for stamps before connections
/// stamp: a run without think time can meet the conditions a few times (as users start, as the run
/// ends), 3 in a 5 s run of 50 users `constant(0)`, and should not pay for stamps for that; a run with
/// think time meets them about once a millisecond.
pub(super) const WANT_STAMPS: u32 = 100;

/// Where a user's connections go: scheme, host and port.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

/// A URL seen before: parsed once, with its origin's index and its default stats name.
#[derive(Clone)]
pub(super) struct KnownUrl {
    /// (shared: a request and its entry in `running` hold it without copying the text)
    pub(super) url: Rc<url::Url>,
    pub(super) origin: usize,
    pub(super) name: Rc<str>,
}

/// A request in flight, as the watchdog and a stopping user see it.
pub(super) struct Running {
    pub(super) user: u64,
    /// Cancels the request's task (its user stopped, or it timed out).
    pub(super) task: tokio::task::AbortHandle,
    /// Its latency counts from here (an open-model iteration's intended start, else its submission).
    pub(super) begin: Instant,
    /// Past this, the watchdog ends it as timed out.
    pub(super) deadline: Instant,
    pub(super) endpoint: EndpointId,
    pub(super) name: Rc<str>,
    pub(super) url: Rc<url::Url>,
    /// The request, handed back with its completion (and whether the engine records it: `record`).
    pub(super) shape: super::Checked,
}

/// A script's streamed request (`stream=True`) once its head came: its body as it is read, until the
/// script has read it all or closes it (`ScriptEngine::stream_take`, `stream_wait`, `stream_close`).
pub(super) struct Streamed {
    pub(super) user: u64,
    /// Read and not yet taken by the script. At most `MAX_KEPT_BODY`: past it the stream is cut as too
    /// large, as a script's whole body is.
    pub(super) data: RefCell<bytes::BytesMut>,
    /// How the body ended (None: still being read): Ok at its framing's end, else the failure's message.
    pub(super) end: RefCell<Option<Result<(), Failure>>>,
    /// The operation the script waits on for the next bytes (`stream_wait`), if it waits.
    pub(super) waiting: Cell<Option<u64>>,
    /// When bytes last came: the read timeout counts from here (requests' `timeout=` between reads).
    pub(super) last_read: Cell<Instant>,
    /// The task reading the body, aborted if the script closes the stream before its end.
    pub(super) task: RefCell<Option<tokio::task::AbortHandle>>,
    /// The connection, once the body ended as its framing says and the server keeps it open: back to
    /// the user's pool when the script closes the stream or has read it all (`key`: that pool's).
    pub(super) conn: RefCell<Option<H1Conn>>,
    pub(super) key: (u64, usize, bool),
    /// False once the script's response is gone (its drop, `StreamHandle`): the watchdog closes it.
    pub(super) alive: Arc<std::sync::atomic::AtomicBool>,
}

impl Streamed {
    /// The waiting script, if any, is told that something came (bytes or the end).
    pub(super) fn wake(&self, engine: &Engine) {
        if let Some(id) = self.waiting.take() {
            engine.push(Completion { id, ..Completion::default() });
        }
    }
}

/// A request of a native plan, resolved once: its URL, stats endpoint, the request and (over
/// HTTP/1.1) its bytes as sent.
pub(super) struct Step {
    pub(super) request: super::ScriptRequest,
    pub(super) known: KnownUrl,
    pub(super) endpoint: EndpointId,
    pub(super) bytes: Option<H1Bytes>,
}

/// A native plan's requests resolved for this engine (`Engine::plan_steps`): made once, at its first
/// user's start, and shared by every user that runs the plan (made again if all of them stopped),
/// instead of a resolution and a copy of each request per user (for a `GET /`: its 176-byte step, URL
/// text and request bytes, about 0.3 KB).
/// perf had put 1.3% of a 1,000-user think run's CPU on the first read of a user's own URL text
/// (`host_str`, for the cookie jar: cold in cache); with one copy, an A/B of 6 alternated rounds read
/// 1.03 (0.88-1.21) once running and 1.03 (0.92-1.12) over 10 s runs: within the noise.
pub(super) struct Steps {
    /// The weighted task list, each task its requests in order.
    pub(super) tasks: Vec<Vec<Step>>,
    /// The one origin (and whether unverified) all its requests go to, if they do (`NativeUser::home`).
    pub(super) home: Option<(usize, bool)>,
}

/// A thinking native user as its slot in the ring of think times keeps it (`Thinkers`): its task's
/// waker, or the user itself if the engine's pass may send its next request (native.rs `send_now`;
/// if it may not after all, it wakes the task by the waker the user keeps: `NativeUser::park`).
pub(super) enum Thinker {
    Wakes(Waker),
    Sends(Rc<NativeUser>),
}

/// A native user (`native`) as the engine and its script see it.
pub(super) struct NativeUser {
    /// Its id, and its plan's requests.
    pub(super) user: u64,
    pub(super) steps: Rc<Steps>,
    /// The plan's operation id: its end is a completion under it.
    pub(super) op: u64,
    pub(super) task: RefCell<Option<tokio::task::AbortHandle>>,
    /// A request is in flight (a stopped user's is counted abandoned).
    pub(super) in_flight: Cell<bool>,
    /// Between two tasks: ending the plan now cuts no task short.
    pub(super) waiting: Cell<bool>,
    /// The plan ends at its next wait.
    pub(super) ending: Cell<bool>,
    /// Its wait time is never 0 (its reads can wait for the engine's next tick: `TICK`).
    pub(super) thinks: bool,
    /// The one origin (and whether unverified) its plan's requests go to, if they all go to one: its
    /// connection there is kept here between requests (`conn`) instead of in the user's pool, which
    /// took two lookups a request (`Pools::get`: 2.9% of a 1,000-user run's CPU, perf, on cold memory).
    pub(super) home: Option<(usize, bool)>,
    pub(super) conn: RefCell<Option<H1Conn>>,
    /// Its place in `Engine::native_deadlines`, where the watchdog finds its request's deadline.
    pub(super) slot: usize,
    /// The watchdog found its request past its deadline (`ScriptEngine::time_out`): the request ends
    /// at the task's next poll, which `waker` asks for.
    pub(super) expired: Cell<bool>,
    pub(super) waker: RefCell<Option<Waker>>,
    /// Its wait and the draws of its waits and tasks.
    pub(super) pace: RefCell<Pace>,
    /// Its thinks and requests can be run by the engine's passes, its task asleep (native.rs `rest`).
    pub(super) driven: bool,
    /// While they are: the task it thinks before or whose request is in flight (None: its own task
    /// runs it), when the engine's pass sent that request, and whether the task must take over.
    pub(super) armed: Cell<Option<usize>>,
    pub(super) sent: Cell<Option<Instant>>,
    pub(super) handback: Cell<bool>,
}

impl NativeUser {
    pub(super) fn abort(&self) {
        self.armed.set(None); // the engine's pass must not send for it any more (`native::send_now`)
        if let Some(t) = self.task.borrow_mut().take() {
            t.abort();
        }
    }

    /// The waker of its task, kept for the watchdog (cloned once: a task's waker stays the same).
    pub(super) fn park(&self, waker: &Waker) {
        let mut kept = self.waker.borrow_mut();
        if !kept.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *kept = Some(waker.clone());
        }
    }
}

/// A request's HTTP/1.1 bytes made once, for a native user's request sent again and again: its head
/// (for a request with cookies, which go after it) and the whole request without cookies. Sending
/// them skips the head's lookup (hashing and comparing its method, URL and headers: cold memory with
/// a thousand users) and, without cookies, the copy into a new buffer.
pub(super) struct H1Bytes {
    pub(super) head: Rc<[u8]>,
    pub(super) whole: Rc<[u8]>,
}

/// A stats name's endpoints, one a method.
type MethodIds = Vec<(String, EndpointId)>;

pub(super) struct Engine {
    pub(super) options: ScriptOptions,
    pub(super) recorder: RefCell<Recorder>,
    pub(super) core: Arc<RunCore>,
    /// name -> [(method, id)]: looked up by &str, so a request allocates nothing to find its endpoint
    /// (nor to name it: the key is the name its requests share, `named_endpoint`).
    endpoints: RefCell<HashMap<Rc<str>, MethodIds>>,
    /// base -> url -> parsed.
    urls: RefCell<HashMap<String, HashMap<String, KnownUrl>>>,
    /// base -> the base parsed, when URLs on it can be made from it (`on_base`); None when not.
    bases: RefCell<HashMap<String, Option<KnownUrl>>>,
    origins: RefCell<Vec<Origin>>,
    /// Each user's connections per (origin index, insecure): a connection opened without verifying
    /// the certificate never serves a request that asked for verification.
    pub(super) pool: RefCell<Pools>,
    connectors: RefCell<HashMap<(usize, bool), Connector>>,
    /// TLS settings that verify certificates (unless the engine is insecure), and that do not.
    tls: Arc<rustls::ClientConfig>,
    tls_insecure: Arc<rustls::ClientConfig>,
    /// WebSocket users' TLS settings when the run's offer HTTP/2 (a handshake is HTTP/1.1), made once.
    ws_tls: std::cell::OnceCell<Arc<rustls::ClientConfig>>,
    pub(super) jars: RefCell<HashMap<u64, Jar>>,
    pub(super) done: RefCell<Vec<Completion>>,
    pub(super) messages: RefCell<Vec<Message>>,
    /// Woken when a completion or message is queued, while the script waits in `poll`.
    pub(super) ready: Notify,
    /// Each MQTT user's connection task.
    pub(super) mqtt: RefCell<HashMap<u64, UserTx>>,
    /// Each WebSocket user's connection task (`websocket`).
    pub(super) ws: RefCell<HashMap<u64, crate::ws::WsTx>>,
    /// Each websocket-client connection's task, by its own id, with the user whose stop closes it.
    pub(super) ws_clients: RefCell<HashMap<u64, (Option<u64>, crate::ws::WsTx)>>,
    /// Requests not yet completed, by id.
    pub(super) running: RefCell<HashMap<u64, Running>>,
    /// Streamed requests whose head came, by request id, until the script closes them (`Streamed`).
    pub(super) streams: RefCell<HashMap<u64, Rc<Streamed>>>,
    /// Streamed requests whose head has not come yet: a completion the watchdog makes for one (its
    /// timeout) is a streamed response's too.
    pub(super) stream_heads: RefCell<rustc_hash::FxHashSet<u64>>,
    /// Requests whose event-stream body is being read (`ScriptStreams`), by their id in `running` or
    /// a native user's `native_stream_key`: one timed out meanwhile has its stream counted cut
    /// (`cut_stream`).
    pub(super) streaming: RefCell<rustc_hash::FxHashSet<u64>>,
    /// The native users (`native`), by user id, and how many of them think between tasks.
    pub(super) native: RefCell<HashMap<u64, Rc<NativeUser>>>,
    pub(super) native_thinking: Cell<usize>,
    /// Each native user's request deadline (`NativeUser::slot`), None between requests, and the user:
    /// the watchdog scans this dense list every `WATCH_TICK` (1,000 users: 24 KB read in order)
    /// instead of a tokio timer a request (set and cleared in the timer wheel's lists, among other
    /// users' cold entries: 2% of a 1,000-user run's CPU).
    pub(super) native_deadlines: RefCell<Vec<(Option<Instant>, u64)>>,
    /// Native plans' requests, resolved once for all their users (`Steps`), by plan (`Plan::id`),
    /// while a user runs them (`plan_steps`, `keep_plan_steps`).
    plans: RefCell<HashMap<u64, std::rc::Weak<Steps>>>,
    /// How many plans were kept after the last sweep of those no user runs any more.
    plans_swept: Cell<usize>,
    /// Native users thinking, woken by the engine's passes (`think`), or their next request sent by
    /// them (native.rs `send_now`).
    pub(super) thinkers: RefCell<Thinkers<Thinker>>,
    native_free: RefCell<Vec<usize>>,
    /// The requests the engine's passes sent for driven native users, whose responses they read
    /// (native.rs `send_now`, `receive_now`).
    pub(super) driven: RefCell<Vec<Rc<NativeUser>>>,
    /// Native users' requests in flight, and a wake-up for `poll` when one is sent (see `TICK`).
    pub(super) native_in_flight: Cell<usize>,
    pub(super) native_sent: Notify,
    /// How many of them are sent and wait for their response on a connection whose reads the kernel
    /// stamps: when that is all of them, `poll` may leave them unread until the script's next timer.
    pub(super) awaiting: Rc<Cell<usize>>,
    /// How often `poll` found nothing ready after sending, with a timeout within `DEFER` (counted up
    /// to `WANT_STAMPS`; see `wants_stamps`).
    pub(super) could_defer: Cell<u32>,
    /// Whether the kernel stamps: the last response whose read asked came with a receive time. Until
    /// then every read asks, and none is deferred (net/stamped.rs).
    pub(super) stamping: Cell<bool>,
    /// When `poll` last deferred reads: for `ASKING` after it, every read asks for its receive time
    /// (a deferred response can be read a turn later, once the runtime gets to its task).
    pub(super) deferred_at: Cell<Option<Instant>>,
    /// When the watchdog last looked for requests past their timeout.
    pub(super) last_watch: Cell<Instant>,
    /// Requests cancelled unmeasured because their user stopped.
    pub(super) cancelled: Cell<u64>,
    pub(super) next_id: Cell<u64>,
    /// Open model (`--rate`): the arrivals, those due and not yet handed to the script, the intended
    /// start of each user's current iteration (its next request is timed from it); the send lag goes to
    /// the recorder.
    pub(super) open: RefCell<Option<OpenModel>>,
}

pub(super) struct OpenModel {
    pub(super) arrivals: Arrivals,
    pub(super) due: Vec<f64>,
    pub(super) begins: HashMap<u64, Instant>,
    /// The rate asked for first, and whether it ever changed (a shape): the report gives the mean then.
    pub(super) first_rate: f64,
    pub(super) changed: bool,
}

impl Sink for Engine {
    fn record(&self, method: &str, name: &str, latency: Duration, outcome: &Outcome) {
        let id = self.endpoint(method, name);
        self.recorder.borrow_mut().record(Instant::now(), id, latency, outcome);
    }

    fn event(&self, e: Event) {
        match e {
            Event::Done { id, elapsed_us, error } => {
                self.push(Completion { id, elapsed_us, error, ..Completion::default() })
            }
            Event::Message { user, topic, payload, qos } => {
                self.messages.borrow_mut().push(Message { user, topic, payload, qos });
                self.ready.notify_one();
            }
        }
    }
}

impl Engine {
    /// The engine of a run that has just started (`core`), with its settings.
    pub(super) fn new(options: ScriptOptions, core: Arc<RunCore>) -> Engine {
        let alpn: &[&[u8]] = if options.http2 { &[b"h2"] } else { &[b"http/1.1"] };
        let start = core.start;
        Engine {
            options,
            recorder: RefCell::new(Recorder::new(core.timeline.clone())),
            core,
            endpoints: RefCell::default(),
            urls: RefCell::default(),
            bases: RefCell::default(),
            origins: RefCell::default(),
            pool: RefCell::default(),
            connectors: RefCell::default(),
            tls: tls::client_config(options.insecure, alpn),
            tls_insecure: tls::client_config(true, alpn),
            ws_tls: std::cell::OnceCell::new(),
            jars: RefCell::default(),
            done: RefCell::default(),
            messages: RefCell::default(),
            ready: Notify::new(),
            mqtt: RefCell::default(),
            ws: RefCell::default(),
            ws_clients: RefCell::default(),
            running: RefCell::default(),
            streams: RefCell::default(),
            stream_heads: RefCell::default(),
            streaming: RefCell::default(),
            native: RefCell::default(),
            native_thinking: Cell::new(0),
            native_deadlines: RefCell::new(Vec::new()),
            plans: RefCell::new(HashMap::default()),
            plans_swept: Cell::new(0),
            thinkers: RefCell::new(Thinkers::new(start)),
            native_free: RefCell::new(Vec::new()),
            driven: RefCell::new(Vec::new()),
            native_in_flight: Cell::new(0),
            native_sent: Notify::new(),
            awaiting: Rc::default(),
            could_defer: Cell::new(0),
            stamping: Cell::new(false),
            deferred_at: Cell::new(None),
            last_watch: Cell::new(Instant::now()),
            cancelled: Cell::new(0),
            next_id: Cell::new(1),
            open: RefCell::new(None),
        }
    }

    /// Adds a native user (replacing one the same user had).
    pub(super) fn add_native(&self, user: u64, state: Rc<NativeUser>) {
        self.native_thinking.set(self.native_thinking.get() + state.thinks as usize);
        if let Some(old) = self.native.borrow_mut().insert(user, state) {
            old.abort();
            self.native_thinking.set(self.native_thinking.get() - old.thinks as usize);
            self.free_native_slot(old.slot);
        }
    }

    /// Removes a native user: its plan ended, or the user stopped.
    pub(super) fn remove_native(&self, user: u64) -> Option<Rc<NativeUser>> {
        let n = self.native.borrow_mut().remove(&user)?;
        self.native_thinking.set(self.native_thinking.get() - n.thinks as usize);
        self.free_native_slot(n.slot);
        Some(n)
    }

    /// The requests of plan `id` as resolved for a user that runs it now, if one does.
    pub(super) fn plan_steps(&self, id: u64) -> Option<Rc<Steps>> {
        self.plans.borrow().get(&id).and_then(std::rc::Weak::upgrade)
    }

    /// Keeps plan `id`'s requests for its next users while any user runs them. A file whose users
    /// each have a plan of their own (sessions set per user) makes one a user: once the plans kept
    /// are twice those left at the last sweep (64 at least), the plans no user runs are forgotten,
    /// so that a long run that starts and stops users holds only its users' plans.
    pub(super) fn keep_plan_steps(&self, id: u64, steps: &Rc<Steps>) {
        let mut plans = self.plans.borrow_mut();
        if plans.len() >= 64.max(2 * self.plans_swept.get()) {
            plans.retain(|_, kept| kept.strong_count() > 0);
            self.plans_swept.set(plans.len());
        }
        plans.insert(id, Rc::downgrade(steps));
    }

    /// A place in `native_deadlines` for `user`.
    pub(super) fn native_slot(&self, user: u64) -> usize {
        let mut deadlines = self.native_deadlines.borrow_mut();
        match self.native_free.borrow_mut().pop() {
            Some(slot) => {
                deadlines[slot] = (None, user);
                slot
            }
            None => {
                deadlines.push((None, user));
                deadlines.len() - 1
            }
        }
    }

    fn free_native_slot(&self, slot: usize) {
        self.native_deadlines.borrow_mut()[slot] = (None, u64::MAX);
        self.native_free.borrow_mut().push(slot);
        // A stream its stopped user was reading is left in flight, not cut by the slot's next user.
        self.streaming.borrow_mut().remove(&native_stream_key(slot));
    }

    /// A native user's request deadline (None: no request in flight).
    pub(super) fn set_native_deadline(&self, slot: usize, deadline: Option<Instant>) {
        self.native_deadlines.borrow_mut()[slot].0 = deadline;
    }

    /// No completion and no MQTT message for the script yet.
    pub(super) fn nothing_ready(&self) -> bool {
        self.done.borrow().is_empty() && self.messages.borrow().is_empty()
    }

    /// Connections stamp from their next request on (until then none does, and no packet of the
    /// machine is stamped: a run without think time never pays for stamps).
    pub(super) fn wants_stamps(&self) -> bool {
        self.could_defer.get() >= WANT_STAMPS
    }

    pub(super) fn push(&self, c: Completion) {
        self.done.borrow_mut().push(c);
        self.ready.notify_one();
    }

    /// The TLS settings of a WebSocket user's connection: the run's, unless they offer HTTP/2 (ALPN),
    /// which a WebSocket handshake is not.
    pub(super) fn ws_tls(&self) -> Arc<rustls::ClientConfig> {
        if !self.options.http2 {
            return self.tls.clone();
        }
        self.ws_tls.get_or_init(|| tls::client_config(self.options.insecure, &[b"http/1.1"])).clone()
    }

    pub(super) fn endpoint(&self, method: &str, name: &str) -> EndpointId {
        self.named_endpoint(method, name).0
    }

    /// The endpoint of `method` and `name`, and the name as its requests share it.
    fn named_endpoint(&self, method: &str, name: &str) -> (EndpointId, Rc<str>) {
        if let Some((shared, methods)) = self.endpoints.borrow().get_key_value(name) {
            if let Some(&(_, id)) = methods.iter().find(|(m, _)| m == method) {
                return (id, shared.clone());
            }
        }
        let id = self.core.timeline.add_name(method, name);
        let mut endpoints = self.endpoints.borrow_mut();
        let shared = match endpoints.get_key_value(name) {
            Some((shared, _)) => shared.clone(),
            None => Rc::from(name),
        };
        endpoints.entry(shared.clone()).or_default().push((method.to_string(), id));
        (id, shared)
    }

    /// Where a request goes and is recorded: its URL (`known_url`), its stats name (the script's, or
    /// the path and query) and that name's endpoint.
    pub(super) fn resolve(&self, r: &RequestShape) -> Result<(KnownUrl, Rc<str>, EndpointId), String> {
        let known = self.known_url(&r.base, &r.url)?;
        let (endpoint, name) = self.named_endpoint(&r.method, r.name.as_deref().unwrap_or(&known.name));
        Ok((known, name, endpoint))
    }

    /// Request `key` (`streaming`'s) ended by its timeout: an event stream it was reading is cut, as
    /// bench's watchdog cuts one. Its time per output token is not recorded: the stream's end is the
    /// timeout's, not the server's.
    pub(super) fn cut_stream(&self, key: u64, endpoint: EndpointId, failure: &Failure) {
        if self.streaming.borrow_mut().remove(&key) {
            self.recorder.borrow_mut().stream(endpoint).cut(failure.message());
        }
    }

    /// A request past its timeout: its failure ("request timed out"), recorded with the time it took
    /// unless the script judges the request (`record` false).
    pub(super) fn timed_out(&self, now: Instant, endpoint: EndpointId, elapsed: Duration, record: bool) -> Failure {
        let failure = Failure::new(FailureKind::Timeout, "");
        if record {
            self.recorder.borrow_mut().record(now, endpoint, elapsed, &Outcome::Failed(failure.clone()));
        }
        failure
    }

    /// The parsed URL (joined to its base), its origin index and default name; cached, since scripts
    /// request the same URLs over and over.
    pub(super) fn known_url(&self, base: &str, raw: &str) -> Result<KnownUrl, String> {
        if let Some(k) = self.urls.borrow().get(base).and_then(|m| m.get(raw)) {
            return Ok(k.clone());
        }
        // (a checked shape's URL is joined already: `RequestShape::checked`)
        if base.is_empty() && !super::is_whole_url(raw) {
            return Err(format!("no host for request '{raw}': set `host` on the User or pass -H/--host"));
        }
        let known = match self.on_base(base, raw) {
            Some(known) => known,
            None => self.remember(parse_url(raw)?)?,
        };
        let mut urls = self.urls.borrow_mut();
        let per_base = urls.entry(base.to_string()).or_default();
        if per_base.len() < MAX_URLS {
            per_base.insert(raw.to_string(), known.clone());
        }
        Ok(known)
    }

    /// `raw`, a path on `base` (the session's host, with no path of its own) in plain characters, made
    /// from the base parsed once: its path and query set, its scheme and host not parsed again (nor
    /// the host's IDNA mapping run), its origin the base's. None for any other URL (`parse_url` then):
    /// the same URL as parsing it whole (a test compares them over random paths), at a third of the
    /// cost: a script's URLs built per call with ids past what `urls` keeps are each new.
    fn on_base(&self, base: &str, raw: &str) -> Option<KnownUrl> {
        let rest = raw.strip_prefix(base)?;
        let plain = |b: u8| (0x21..=0x7e).contains(&b) && b != b'#' && b != b'\\';
        if !rest.starts_with('/') || rest.starts_with("//") || !rest.bytes().all(plain) {
            return None;
        }
        let parsed = self.bases.borrow().get(base).cloned();
        let parsed = match parsed {
            Some(p) => p?,
            None => {
                // Usable when the base parses to itself and a "/": no path, query or fragment, its
                // spelling already the parser's (so that base + rest parses as the base's URL does).
                let p = parse_url(base).ok().filter(|u| u.as_str().strip_suffix('/') == Some(base));
                let known = match p {
                    Some(u) => Some(self.remember(u).ok()?),
                    None => None,
                };
                self.bases.borrow_mut().insert(base.to_string(), known.clone());
                known?
            }
        };
        let mut url = (*parsed.url).clone();
        let (path, query) = match rest.split_once('?') {
            Some((path, query)) => (path, Some(query)),
            None => (rest, None),
        };
        url.set_path(path);
        url.set_query(query);
        Some(KnownUrl { name: Rc::from(path_and_query(&url)), url: Rc::new(url), origin: parsed.origin })
    }

    /// The URL with its origin's index, the origin added if new (at most `MAX_ORIGINS` of them).
    pub(super) fn remember(&self, url: url::Url) -> Result<KnownUrl, String> {
        let https = url.scheme() == "https";
        let origin = Origin {
            https,
            host: url.host_str().unwrap_or_default().trim_matches(|c| c == '[' || c == ']').to_string(),
            port: url.port_or_known_default().unwrap_or(if https { 443 } else { 80 }),
        };
        let mut origins = self.origins.borrow_mut();
        let index = match origins.iter().position(|o| *o == origin) {
            Some(i) => i,
            None if origins.len() >= MAX_ORIGINS => {
                return Err(format!("{url}: one origin more than the {MAX_ORIGINS} (scheme, host, port) a run keeps"));
            }
            None => {
                origins.push(origin);
                origins.len() - 1
            }
        };
        let name = Rc::from(path_and_query(&url));
        Ok(KnownUrl { url: Rc::new(url), origin: index, name })
    }

    pub(super) async fn connector(&self, index: usize, insecure: bool) -> Result<Connector, Failure> {
        let insecure = insecure && !self.options.insecure; // one setting when the engine verifies nothing
        if let Some(c) = self.connectors.borrow().get(&(index, insecure)) {
            return Ok(c.clone());
        }
        let origin = self.origins.borrow()[index].clone();
        let addrs =
            crate::net::resolve_async(&origin.host, origin.port).await.map_err(|m| Failure::new(FailureKind::Io, m))?;
        let config = if insecure { &self.tls_insecure } else { &self.tls };
        let tls = origin.https.then(|| (config.clone(), origin.host.as_str()));
        let c = Connector::new(addrs, tls).map_err(|m| Failure::new(FailureKind::Tls, m))?;
        self.connectors.borrow_mut().insert((index, insecure), c.clone());
        Ok(c)
    }

    /// The HTTP/1.1 request: its head, the user's cookies, the length and the body. Made anew for each
    /// request: written by copying slices (`write_h1_head`) it costs less than finding it among heads
    /// kept (89 ns against 140-290 for 10,000 URLs' heads kept, their memory warm; a script's random
    /// ids made most lookups miss a cold table: 2.1% of bench/locustfiles/shop.py's samples).
    pub(super) fn h1_bytes(
        &self,
        method: &str,
        url: &url::Url,
        headers: &[(String, String)],
        cookie: Option<&str>,
        body: &[u8],
    ) -> Vec<u8> {
        let mut out = Vec::with_capacity(head_capacity(url, headers) + cookie.map_or(0, |c| c.len() + 10) + body.len());
        write_h1_head(&mut out, method, url, headers);
        Self::finished(out, method, cookie, body)
    }

    /// A request's bytes made once (a native user's request: `H1Bytes`).
    pub(super) fn h1_prepared(
        &self,
        method: &str,
        url: &url::Url,
        headers: &[(String, String)],
        body: &[u8],
    ) -> H1Bytes {
        let head: Rc<[u8]> = serialize_h1_head(method, url, headers).into();
        let whole = self.h1_bytes_from(&head, method, None, body).into();
        H1Bytes { head, whole }
    }

    /// The HTTP/1.1 request from its head: the user's cookies, the length and the body after it.
    pub(super) fn h1_bytes_from(&self, head: &[u8], method: &str, cookie: Option<&str>, body: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(head.len() + 64 + body.len());
        out.extend_from_slice(head);
        Self::finished(out, method, cookie, body)
    }

    /// A request's head in `out`, finished: the user's cookies, the length and the body.
    fn finished(mut out: Vec<u8>, method: &str, cookie: Option<&str>, body: &[u8]) -> Vec<u8> {
        if let Some(c) = cookie {
            out.extend_from_slice(b"Cookie: ");
            out.extend_from_slice(c.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        finish_h1(&mut out, method, body, true);
        out
    }
}

/// A native user's request's key in `Engine::streaming`, by its slot: apart from the scripts' request
/// ids (counted from 1, never near 2^63).
pub(super) fn native_stream_key(slot: usize) -> u64 {
    1 << 63 | slot as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn steps() -> Rc<Steps> {
        Rc::new(Steps { tasks: Vec::new(), home: None })
    }

    /// A URL's text and default name.
    type Made = Option<(String, String)>;

    /// What `known_url` makes of `raw` on `base`, and what parsing it whole makes of it.
    fn both(engine: &Engine, base: &str, raw: &str) -> (Made, Made) {
        let known = engine.known_url(base, raw).ok().map(|k| (k.url.as_str().to_string(), k.name.to_string()));
        let parsed = parse_url(raw).ok().map(|u| (u.as_str().to_string(), path_and_query(&u)));
        (known, parsed)
    }

    #[test]
    fn a_url_made_from_its_base_is_the_url_parsed_whole() {
        let engine = Engine::new(ScriptOptions::default(), RunCore::new());
        let bases =
            ["http://127.0.0.1:8089", "https://Example.COM", "http://h.test:80", "http://h.test/v1", "http://h.test/"];
        let rests = [
            "/",
            "/a/b?x=1&y=%20z",
            "/a/./b/../c",
            "/a/%2e%2E/b",
            "/a?",
            "/a??b",
            "/a?b#c",
            "/a b",
            "/caf\u{e9}",
            "/a\\b",
            "/a\tb",
            "//other/x",
            "/x/..",
            "/%zz",
            "/{}|^`\"<>",
            "/a?q={}|^`\"<>'",
            "/.",
            "/..",
            "/a;b=c",
        ];
        // (made from the base where it can be: a base with no path of its own, spelt as parsed, and a
        // path in plain characters)
        assert!(engine.on_base("http://127.0.0.1:8089", "http://127.0.0.1:8089/a/./b?x={}").is_some());
        assert!(engine.on_base("http://h.test:80", "http://h.test:80/a").is_none());
        assert!(engine.on_base("http://h.test/v1", "http://h.test/v1/a").is_none());
        assert!(engine.on_base("http://127.0.0.1:8089", "http://127.0.0.1:8089/a b").is_none());
        for base in bases {
            for rest in rests {
                let raw = format!("{base}{rest}");
                let (known, parsed) = both(&engine, base, &raw);
                assert_eq!(known, parsed, "{raw}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn a_url_made_from_its_base_is_the_url_parsed_whole_for_any_path(rest in "/[ -~\u{e9}]{0,40}") {
            let engine = Engine::new(ScriptOptions::default(), RunCore::new());
            let raw = format!("http://127.0.0.1:8089{rest}");
            let (known, parsed) = both(&engine, "http://127.0.0.1:8089", &raw);
            proptest::prop_assert_eq!(known, parsed, "{}", raw);
        }
    }

    #[test]
    fn plans_are_kept_while_a_user_runs_them_and_swept_after() {
        let engine = Engine::new(ScriptOptions::default(), RunCore::new());
        let running: Vec<Rc<Steps>> = (0..10)
            .map(|id| {
                let s = steps();
                engine.keep_plan_steps(id, &s);
                s
            })
            .collect();
        for id in 10..64 {
            engine.keep_plan_steps(id, &steps()); // plans whose users have all stopped
        }
        assert_eq!(engine.plans.borrow().len(), 64);
        assert!(Rc::ptr_eq(&engine.plan_steps(3).unwrap(), &running[3]));
        assert!(engine.plan_steps(20).is_none());
        // The 65th plan sweeps the 54 no user runs: 10 are left, and the new one.
        let new = steps();
        engine.keep_plan_steps(64, &new);
        assert_eq!(engine.plans.borrow().len(), 11);
        assert!(Rc::ptr_eq(&engine.plan_steps(64).unwrap(), &new));
        // The next sweep waits for 64 again (twice the 10 left is less).
        for id in 65..118 {
            engine.keep_plan_steps(id, &steps());
        }
        assert_eq!(engine.plans.borrow().len(), 64);
        drop(running);
        engine.keep_plan_steps(118, &steps());
        assert_eq!(engine.plans.borrow().len(), 2); // plan 64 (`new`) and 118
    }
}
