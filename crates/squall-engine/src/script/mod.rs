//! Scripted load: the requests and MQTT operations of Python users (greenlets), run by an engine that
//! lives on the users' own thread. The script submits a request (no channel, no wake-up: a task is
//! added to the engine's local set) and, when its users have nothing left to run, polls: the engine's
//! runtime then runs on that thread until completions are ready or the script's next timer falls due,
//! waiting in one epoll for both.
//!
//! Why one thread: with the engine on a thread of its own, each request cost two cross-thread
//! wake-ups (the script waking the engine to send, the engine waking the script with the response);
//! with think time nothing batches them, and 1,000 users `between(0.1, 0.2)` spent 100 µs of CPU per
//! request, 2.2 futex calls each (strace: 38,032 futex and 17,375 recvfrom calls in 6 s). On one
//! thread there are none. A response that arrives while Python runs other users' code is timed when
//! the script next polls, at most one pass over the users ready then (as with Locust's gevent loop).
//! A response whose read `poll` deferred to the script's next timer (`DEFER`), so that the users of a
//! millisecond share one wake-up, is timed by the kernel's receive stamp instead (net/stamped.rs).
//!
//! Each user has its own keep-alive connections (HTTP/1.1, or one HTTP/2 connection per origin with
//! `http2`) and its own cookie jar. URLs are parsed once per (base, URL) and the request head is
//! prepared once per distinct request; the engine measures and records each request under its stats
//! name, unless the script judges it (`catch_response`) and records its verdict.

pub mod cookies;

use crate::http::h1::{H1Conn, Response, Timing};
use crate::http::h2::{build_request, H2Conn};
use crate::http::request::{
    check_headers, check_method, finish_h1, needs_length, parse_url, path_and_query, serialize_h1_head,
};
use crate::mqtt::script::{Event, Op, Sink, UserTx};
use crate::net::stamped::stamp_reads;
use crate::net::{tls, Connector, Stamp};
use crate::run::clock::AsyncTimer;
use crate::run::schedule::{Arrival, Arrivals};
use crate::run::RunCore;
use crate::stats::lag::ScheduleReport;
use crate::stats::result::{self, LoadReport, RunResult};
use crate::stats::{EndpointId, Failure, FailureKind, Outcome, Phases, Recorder};
use crate::types::StopReason;
use bytes::Bytes;
use cookies::Jar;
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

/// Parsed URLs kept per base: scripts that build a unique URL per request must not grow it forever.
const MAX_URLS: usize = 10_000;
/// Prepared request heads kept.
const MAX_HEADS: usize = 10_000;
/// Origins (scheme, host, port) a run keeps: a script's URLs and the redirects it follows. A server
/// that redirects each request to a new host name would otherwise grow the table without end (an
/// entry and a connector each); past it, a request to one more origin fails, said so.
const MAX_ORIGINS: usize = 10_000;
/// The origins a user keeps connections to: the least recently used one's connections close when
/// an eleventh is used, as a python-requests Session keeps 10 hosts' pools (urllib3's PoolManager).
/// A chain of redirects through new hosts would otherwise leave a user an idle connection on each.
const POOLS_PER_USER: usize = 10;
/// The longest host name a redirect may lead to: DNS's 253 bytes (RFC 1035).
const MAX_HOST: usize = 253;

/// One request from a script.
pub struct ScriptRequest {
    pub user: u64,
    pub method: String,
    /// The user's base URL (its `host`), joined with `url` unless `url` is absolute.
    pub base: String,
    pub url: String,
    /// Stats name; None: the path and query.
    pub name: Option<String>,
    pub headers: Vec<(String, String)>,
    /// The call's own cookies, on top of the user's jar.
    pub cookies: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
    /// False when the script judges the response itself (`catch_response=True`) and records its
    /// verdict with `record`.
    pub record: bool,
    /// Follow up to this many redirects (None: return the 3xx), timed and recorded as one request, as
    /// Locust does; one more fails the request (requests' TooManyRedirects, 30 by default).
    pub max_redirects: Option<u32>,
    /// Accept any TLS certificate for this request (requests' `verify=False`; on by default for
    /// FastHttpUser), whatever the engine's default.
    pub insecure: bool,
}

/// What came back for a request (or an MQTT operation). `status` is 0 when no response arrived
/// (then `error` says why).
#[derive(Debug, Default)]
pub struct Completion {
    pub id: u64,
    pub status: u16,
    /// The response's header lines, raw ("Name: value\r\n" each): parsed by the script only if read.
    pub head: Vec<u8>,
    pub body: Vec<u8>,
    pub elapsed_us: u64,
    pub error: Option<String>,
    /// The URL of the final response.
    pub url: String,
    /// The stats name the request was (or is to be) recorded under.
    pub name: String,
}

/// A verdict the script reports: for `catch_response`, or a custom request event.
pub struct Verdict {
    pub method: String,
    pub name: String,
    pub elapsed_us: u64,
    pub status: u16,
    pub body_bytes: u64,
    pub failure: Option<String>,
}

/// An MQTT message that arrived for a scripted user's subscription.
pub struct Message {
    pub user: u64,
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
}

#[derive(Clone, Copy, Debug, Default)]
pub struct ScriptOptions {
    /// Accept any TLS certificate.
    pub insecure: bool,
    /// HTTP/2: ALPN h2 over TLS, prior knowledge over http://.
    pub http2: bool,
}

/// Where a user's connections go: scheme, host and port.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

/// A URL seen before: parsed once, with its origin's index and its default stats name.
#[derive(Clone)]
struct KnownUrl {
    url: url::Url,
    origin: usize,
    name: Rc<str>,
}

/// A request in flight, as the watchdog and a stopping user see it.
struct Running {
    user: u64,
    /// Cancels the request's task (its user stopped, or it timed out).
    task: tokio::task::AbortHandle,
    /// Its latency counts from here (an open-model iteration's intended start, else its submission).
    begin: Instant,
    /// Past this, the watchdog ends it as timed out.
    deadline: Instant,
    record: bool,
    endpoint: EndpointId,
    name: Rc<str>,
    url: url::Url,
}

/// The longest `poll` leaves responses unread: when the script's next timer is due within this (the
/// hub's timer slack, so that at think-time rates a timer is nearly always this close) and every
/// request in flight is sent and awaits a response on a connection whose reads the kernel stamps,
/// `poll` sends what was submitted, sleeps until the timer without waking for responses, then reads
/// all that came, each timed by its receive stamp (net/stamped.rs), not by when it was read.
///
/// Why: below saturation each response used to wake the script (0.8 wakes a request at 10,000 users
/// `between(1, 2)`), and each wake costs an `epoll_wait`, a context switch and a pass of the hub; now
/// the users of a millisecond share one. What it costs: a user sees its response up to this late, so
/// its next think time starts that late (0.3% of a 150 ms cycle). Not done with HTTP/2 (its reads
/// are not stamped), MQTT users (their messages are timed on arrival), a connection being opened or
/// not stamping yet (`WANT_STAMPS`), a request still being written, or before the kernel stamps (the
/// last response whose read asked came unstamped): those wake the script as before.
const DEFER: Duration = Duration::from_millis(1);

/// How many times `poll` must have found a deferral possible but for stamps before connections
/// stamp: a run without think time can meet the conditions a few times (as users start, as the run
/// ends), 3 in a 5 s run of 50 users `constant(0)`, and should not pay for stamps for that; a run with
/// think time meets them about once a millisecond.
const WANT_STAMPS: u32 = 100;

/// How long after `poll` last deferred reads every read still asks for its receive time.
const ASKING: Duration = Duration::from_millis(100);

/// How often the watchdog looks for requests past their timeout. Like bench's watchdog, one scan of
/// the requests in flight (at most one a user, usually) instead of a timer per request.
const WATCH_TICK: Duration = Duration::from_millis(10);

struct PreparedHead {
    method: String,
    url: String,
    headers: Vec<(String, String)>,
    bytes: Rc<[u8]>,
}

/// A user's connection to one origin.
enum Pooled {
    H1(Vec<H1Conn>),
    H2(Rc<H2Conn>),
}

/// Each user's connections, per (origin index, insecure), the most recently used last; at most
/// `POOLS_PER_USER` origins a user.
#[derive(Default)]
struct Pools {
    users: HashMap<u64, Vec<(PoolKey, Pooled)>>,
}

/// An origin's index, and whether its connections verify no certificate.
type PoolKey = (usize, bool);

impl Pools {
    /// The user's connections to the origin, if any, now its most recently used.
    fn get(&mut self, (user, origin, insecure): (u64, usize, bool)) -> Option<&mut Pooled> {
        let pools = self.users.get_mut(&user)?;
        let i = pools.iter().position(|(k, _)| *k == (origin, insecure))?;
        let last = pools.len() - 1;
        pools[i..].rotate_left(1); // a no-op for the one most recently used, the common case
        Some(&mut pools[last].1)
    }

    /// The same, made with `make` if there was none, evicting the least recently used origin's past
    /// `POOLS_PER_USER`.
    fn get_or_insert(&mut self, key: (u64, usize, bool), make: impl FnOnce() -> Pooled) -> &mut Pooled {
        if self.get(key).is_none() {
            let pools = self.users.entry(key.0).or_default();
            if pools.len() >= POOLS_PER_USER {
                pools.remove(0);
            }
            pools.push(((key.1, key.2), make()));
        }
        let pools = self.users.get_mut(&key.0).expect("just found or added");
        &mut pools.last_mut().expect("just found or added").1
    }
}

struct Engine {
    options: ScriptOptions,
    recorder: RefCell<Recorder>,
    core: Arc<RunCore>,
    /// name -> [(method, id)]: looked up by &str, so a request allocates nothing to find its endpoint.
    endpoints: RefCell<HashMap<String, Vec<(String, EndpointId)>>>,
    /// base -> url -> parsed.
    urls: RefCell<HashMap<String, HashMap<String, KnownUrl>>>,
    origins: RefCell<Vec<Origin>>,
    /// Prepared HTTP/1.1 request heads (without Cookie, Content-Length and the blank line), by the
    /// hash of (method, URL, headers); each entry keeps its key to tell collisions apart.
    heads: RefCell<HashMap<u64, Vec<PreparedHead>>>,
    head_count: Cell<usize>,
    /// Each user's connections per (origin index, insecure): a connection opened without verifying
    /// the certificate never serves a request that asked for verification.
    pool: RefCell<Pools>,
    connectors: RefCell<HashMap<(usize, bool), Connector>>,
    /// TLS settings that verify certificates (unless the engine is insecure), and that do not.
    tls: Arc<rustls::ClientConfig>,
    tls_insecure: Arc<rustls::ClientConfig>,
    jars: RefCell<HashMap<u64, Jar>>,
    done: RefCell<Vec<Completion>>,
    messages: RefCell<Vec<Message>>,
    /// Woken when a completion or message is queued, while the script waits in `poll`.
    ready: Notify,
    /// Each MQTT user's connection task.
    mqtt: RefCell<HashMap<u64, UserTx>>,
    /// Requests not yet completed, by id.
    running: RefCell<HashMap<u64, Running>>,
    /// How many of them are sent and wait for their response on a connection whose reads the kernel
    /// stamps: when that is all of them, `poll` may leave them unread until the script's next timer.
    awaiting: Rc<Cell<usize>>,
    /// How often `poll` found nothing ready after sending, with a timeout within `DEFER` (counted up
    /// to `WANT_STAMPS`; see `wants_stamps`).
    could_defer: Cell<u32>,
    /// Whether the kernel stamps: the last response whose read asked came with a receive time. Until
    /// then every read asks, and none is deferred (net/stamped.rs).
    stamping: Cell<bool>,
    /// When `poll` last deferred reads: for `ASKING` after it, every read asks for its receive time
    /// (a deferred response can be read a turn later, once the runtime gets to its task).
    deferred_at: Cell<Option<Instant>>,
    /// When the watchdog last looked for requests past their timeout.
    last_watch: Cell<Instant>,
    /// Requests cancelled unmeasured because their user stopped.
    cancelled: Cell<u64>,
    next_id: Cell<u64>,
    /// Open model (`--rate`): the arrivals, those due and not yet handed to the script, the intended
    /// start of each user's current iteration (its next request is timed from it); the send lag goes to
    /// the recorder.
    open: RefCell<Option<OpenModel>>,
}

struct OpenModel {
    arrivals: Arrivals,
    due: Vec<f64>,
    begins: HashMap<u64, Instant>,
    /// The rate asked for first, and whether it ever changed (a shape): the report gives the mean then.
    first_rate: f64,
    changed: bool,
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
    /// No completion and no MQTT message for the script yet.
    fn nothing_ready(&self) -> bool {
        self.done.borrow().is_empty() && self.messages.borrow().is_empty()
    }

    /// Connections stamp from their next request on (until then none does, and no packet of the
    /// machine is stamped: a run without think time never pays for stamps).
    fn wants_stamps(&self) -> bool {
        self.could_defer.get() >= WANT_STAMPS
    }

    fn push(&self, c: Completion) {
        self.done.borrow_mut().push(c);
        self.ready.notify_one();
    }

    fn endpoint(&self, method: &str, name: &str) -> EndpointId {
        if let Some(methods) = self.endpoints.borrow().get(name) {
            if let Some(&(_, id)) = methods.iter().find(|(m, _)| m == method) {
                return id;
            }
        }
        let id = self.core.timeline.add_name(method, name);
        self.endpoints.borrow_mut().entry(name.to_string()).or_default().push((method.to_string(), id));
        id
    }

    /// The parsed URL, its origin index and default name; cached, since scripts request the same
    /// URLs over and over.
    fn known_url(&self, base: &str, raw: &str) -> Result<KnownUrl, String> {
        if let Some(k) = self.urls.borrow().get(base).and_then(|m| m.get(raw)) {
            return Ok(k.clone());
        }
        let url = if raw.contains("://") {
            parse_url(raw)?
        } else if base.is_empty() {
            return Err(format!("no host for request '{raw}': set `host` on the User or pass -H/--host"));
        } else {
            let base = parse_url(base)?;
            let joined = format!("{}/{}", base.as_str().trim_end_matches('/'), raw.trim_start_matches('/'));
            parse_url(&joined)?
        };
        let known = self.remember(url)?;
        let mut urls = self.urls.borrow_mut();
        let per_base = urls.entry(base.to_string()).or_default();
        if per_base.len() < MAX_URLS {
            per_base.insert(raw.to_string(), known.clone());
        }
        Ok(known)
    }

    /// The URL with its origin's index, the origin added if new (at most `MAX_ORIGINS` of them).
    fn remember(&self, url: url::Url) -> Result<KnownUrl, String> {
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
        Ok(KnownUrl { url, origin: index, name })
    }

    async fn connector(&self, index: usize, insecure: bool) -> Result<Connector, Failure> {
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

    /// The HTTP/1.1 request head for (method, URL, headers), prepared once.
    fn head(&self, method: &str, url: &url::Url, headers: &[(String, String)]) -> Rc<[u8]> {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        (method, url.as_str(), headers).hash(&mut h);
        let key = h.finish();
        if let Some(bucket) = self.heads.borrow().get(&key) {
            let same = |p: &&PreparedHead| p.method == method && p.url == url.as_str() && p.headers == headers;
            if let Some(p) = bucket.iter().find(same) {
                return p.bytes.clone();
            }
        }
        let bytes: Rc<[u8]> = serialize_h1_head(method, url, headers).into();
        if self.head_count.get() < MAX_HEADS {
            self.head_count.set(self.head_count.get() + 1);
            let prepared = PreparedHead {
                method: method.into(),
                url: url.as_str().into(),
                headers: headers.to_vec(),
                bytes: bytes.clone(),
            };
            self.heads.borrow_mut().entry(key).or_default().push(prepared);
        }
        bytes
    }

    /// The HTTP/1.1 request: the prepared head, then the user's cookies, the length and the body.
    fn h1_bytes(
        &self,
        method: &str,
        url: &url::Url,
        headers: &[(String, String)],
        cookie: Option<&str>,
        body: &[u8],
    ) -> Vec<u8> {
        let head = self.head(method, url, headers);
        let mut out = Vec::with_capacity(head.len() + 64 + body.len());
        out.extend_from_slice(&head);
        if let Some(c) = cookie {
            out.extend_from_slice(b"Cookie: ");
            out.extend_from_slice(c.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        finish_h1(&mut out, method, body, true);
        out
    }
}

/// The engine of a scripted run, driven from the script's thread. Not `Send`: it stays on the thread
/// that made it.
pub struct ScriptEngine {
    rt: tokio::runtime::Runtime,
    local: tokio::task::LocalSet,
    engine: Rc<Engine>,
    timer: AsyncTimer,
    last_roll: Cell<Instant>,
}

impl ScriptEngine {
    pub fn new(options: ScriptOptions) -> std::io::Result<ScriptEngine> {
        let rt = crate::run::runtime();
        let core = RunCore::new();
        let alpn: &[&[u8]] = if options.http2 { &[b"h2"] } else { &[b"http/1.1"] };
        let timer = {
            let _in = rt.enter();
            AsyncTimer::new()?
        };
        let engine = Rc::new(Engine {
            options,
            recorder: RefCell::new(Recorder::new(core.timeline.clone())),
            core,
            endpoints: RefCell::default(),
            urls: RefCell::default(),
            origins: RefCell::default(),
            heads: RefCell::default(),
            head_count: Cell::new(0),
            pool: RefCell::default(),
            connectors: RefCell::default(),
            tls: tls::client_config(options.insecure, alpn),
            tls_insecure: tls::client_config(true, alpn),
            jars: RefCell::default(),
            done: RefCell::default(),
            messages: RefCell::default(),
            ready: Notify::new(),
            mqtt: RefCell::default(),
            running: RefCell::default(),
            awaiting: Rc::default(),
            could_defer: Cell::new(0),
            stamping: Cell::new(false),
            deferred_at: Cell::new(None),
            last_watch: Cell::new(Instant::now()),
            cancelled: Cell::new(0),
            next_id: Cell::new(1),
            open: RefCell::new(None),
        });
        Ok(ScriptEngine {
            rt,
            local: tokio::task::LocalSet::new(),
            engine,
            timer,
            last_roll: Cell::new(Instant::now()),
        })
    }

    /// Resets the live totals and the run's own (its result counts from here), as Locust's reset does.
    pub fn reset_totals(&self) {
        self.engine.core.timeline.reset_totals();
        self.engine.recorder.borrow_mut().reset_totals();
    }

    pub fn core(&self) -> &Arc<RunCore> {
        &self.engine.core
    }

    fn next_id(&self) -> u64 {
        let id = self.engine.next_id.get();
        self.engine.next_id.set(id + 1);
        id
    }

    /// Starts a request; its completion comes from `poll` under the returned id. A URL that cannot be
    /// requested (no host, a bad URL) is an error at once.
    pub fn submit(&self, r: ScriptRequest) -> Result<u64, String> {
        // What `squall bench` rejects on its command line is rejected here too: a CR or LF in a
        // script's header or method would put another header, or request, on the wire.
        check_method(&r.method)?;
        check_headers(&r.headers)?;
        for (name, value) in &r.cookies {
            cookies::check(name, value)?;
        }
        let engine = &self.engine;
        let known = engine.known_url(&r.base, &r.url)?;
        let id = self.next_id();
        let user = r.user;
        // The first request of an open-model iteration counts from the iteration's intended start.
        let begin = engine.open.borrow_mut().as_mut().and_then(|o| o.begins.remove(&user)).unwrap_or_else(Instant::now);
        let name: Rc<str> = r.name.as_deref().map_or_else(|| known.name.clone(), Rc::from);
        let endpoint = engine.endpoint(&r.method, &name);
        let (record, deadline, url) = (r.record, Instant::now() + r.timeout, known.url.clone());
        let task = self.local.spawn_local(run_request(engine.clone(), id, r, known, begin, endpoint, name.clone()));
        let running = Running { user, task: task.abort_handle(), begin, deadline, record, endpoint, name, url };
        engine.running.borrow_mut().insert(id, running);
        Ok(id)
    }

    /// Runs the engine on this thread until a completion or message is ready or `timeout` has passed
    /// (a zero timeout: one turn of the runtime, I/O included); returns the completions. A timeout
    /// within `DEFER` may be slept out without waking for responses (see `DEFER`).
    pub fn poll(&self, timeout: Duration) -> Vec<Completion> {
        let engine = &self.engine;
        let start = engine.core.start;
        let next_arrival = || engine.open.borrow().as_ref().and_then(|o| o.arrivals.next_due());
        let arrival_due = || next_arrival().is_some_and(|t| start + Duration::from_secs_f64(t) <= Instant::now());
        if engine.done.borrow().is_empty() && !arrival_due() {
            let deadline = Instant::now() + timeout;
            let wake_at = || next_arrival().map_or(deadline, |t| deadline.min(start + Duration::from_secs_f64(t)));
            let lately = engine.deferred_at.get().is_some_and(|t| t.elapsed() < ASKING);
            stamp_reads(lately || !engine.stamping.get());
            if timeout.is_zero() {
                self.turn(1); // lets the runtime poll I/O once
            } else if !(timeout <= DEFER && self.deferred(wake_at())) {
                self.rt.block_on(self.local.run_until(async {
                    while engine.nothing_ready() {
                        let wake = wake_at();
                        tokio::select! {
                            _ = engine.ready.notified() => {}
                            _ = self.timer.sleep_until(wake) => if wake == deadline || arrival_due() { break },
                        }
                    }
                }));
            }
        }
        let now = Instant::now();
        if now.duration_since(engine.last_watch.get()) >= WATCH_TICK {
            engine.last_watch.set(now);
            self.time_out(now);
        }
        if let Some(open) = engine.open.borrow_mut().as_mut() {
            let OpenModel { arrivals, due, .. } = open;
            arrivals.take_due(now.saturating_duration_since(start).as_secs_f64(), due);
        }
        if now.duration_since(self.last_roll.get()) > Duration::from_millis(100) {
            self.last_roll.set(now);
            engine.recorder.borrow_mut().roll(now);
            engine.core.timeline.publish_ready(now);
        }
        std::mem::take(&mut *engine.done.borrow_mut())
    }

    /// The wait of a `poll` whose timeout is within `DEFER`, deferred if it may be (see `DEFER`): sends
    /// what the script has just submitted, then, when nothing is ready and every request in flight
    /// awaits its response on a stamping connection, sleeps until `wake` without waking for responses
    /// and reads all that came meanwhile. False if the caller must still wait: nothing is ready and
    /// the wait was not deferred.
    fn deferred(&self, wake: Instant) -> bool {
        let engine = &self.engine;
        if engine.options.http2 || !engine.mqtt.borrow().is_empty() {
            return false;
        }
        self.turn(1); // sends what the script has just submitted: no send waits
        let all_await = engine.awaiting.get() == engine.running.borrow().len();
        if engine.nothing_ready() && engine.could_defer.get() < WANT_STAMPS {
            engine.could_defer.set(engine.could_defer.get() + 1);
        }
        if engine.nothing_ready() && all_await && engine.stamping.get() {
            let now = Instant::now();
            if wake > now {
                std::thread::sleep(wake - now);
            }
            engine.deferred_at.set(Some(now));
            stamp_reads(true);
            self.turn(2); // reads every response that came meanwhile, with its receive time
            return true;
        }
        !engine.nothing_ready()
    }

    /// `yields` turns of the runtime without waiting: each runs the tasks that are ready, then polls
    /// the sockets once.
    fn turn(&self, yields: usize) {
        self.rt.block_on(self.local.run_until(async {
            for _ in 0..yields {
                tokio::task::yield_now().await;
            }
        }));
    }

    /// Open model: arrivals from now on at `rate` a second (0 pauses them), spaced by `arrival`; with
    /// `duration`, none is due after that long from now.
    pub fn set_rate(&self, rate: f64, arrival: Arrival, duration: Option<f64>) {
        let at = self.engine.core.elapsed().as_secs_f64();
        let mut open = self.engine.open.borrow_mut();
        let o = open.get_or_insert_with(|| OpenModel {
            arrivals: Arrivals::new(arrival),
            due: Vec::new(),
            begins: HashMap::default(),
            first_rate: rate,
            changed: false,
        });
        o.changed |= rate != o.first_rate && rate > 0.0; // a pause at the end is no change of rate
        o.arrivals.set_rate(at, rate);
        if let Some(d) = duration {
            o.arrivals.end_at(at + d);
        }
    }

    /// Open model: the arrivals that fell due (their intended times, seconds since the start), in order.
    pub fn arrivals(&self) -> Vec<f64> {
        self.engine.open.borrow_mut().as_mut().map_or(Vec::new(), |o| std::mem::take(&mut o.due))
    }

    /// Open model: `user` starts the iteration of the arrival due at `intended`; its next request is
    /// timed from then, and the lag of the start is recorded.
    pub fn begin_iteration(&self, user: u64, intended: f64) {
        let engine = &self.engine;
        let at = engine.core.start + Duration::from_secs_f64(intended.max(0.0));
        if let Some(o) = engine.open.borrow_mut().as_mut() {
            let now = Instant::now();
            engine.recorder.borrow_mut().note_lag(now, now.saturating_duration_since(at));
            o.begins.insert(user, at);
        }
    }

    /// Ends the requests past their timeout: each is cancelled (its connection closes) and counted
    /// as a failure, "request timed out", with its time so far.
    fn time_out(&self, now: Instant) {
        let engine = &self.engine;
        let expired: Vec<u64> =
            engine.running.borrow().iter().filter(|(_, r)| r.deadline <= now).map(|(id, _)| *id).collect();
        for id in expired {
            let Some(r) = engine.running.borrow_mut().remove(&id) else { continue };
            r.task.abort();
            let elapsed = now.saturating_duration_since(r.begin);
            let failure = Failure::new(FailureKind::Timeout, "");
            let error = Some(failure.message());
            if r.record {
                engine.recorder.borrow_mut().record(now, r.endpoint, elapsed, &Outcome::Failed(failure));
            }
            let (url, name) = (r.url.to_string(), r.name.to_string());
            engine.push(Completion {
                id,
                elapsed_us: elapsed.as_micros() as u64,
                error,
                url,
                name,
                ..Completion::default()
            });
        }
    }

    /// MQTT messages that arrived for scripted users since the last call.
    pub fn messages(&self) -> Vec<Message> {
        std::mem::take(&mut *self.engine.messages.borrow_mut())
    }

    /// An MQTT operation of a scripted user, run on that user's connection in order; its completion
    /// comes from `poll` under the returned id.
    pub fn submit_mqtt(&self, user: u64, op: impl FnOnce(u64) -> Op) -> u64 {
        let id = self.next_id();
        let engine = &self.engine;
        let tx = engine
            .mqtt
            .borrow_mut()
            .entry(user)
            .or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                self.local.spawn_local(crate::mqtt::script::user_task(engine.clone(), user, rx));
                tx
            })
            .clone();
        let _ = tx.send(op(id));
        id
    }

    /// Records the script's own verdict on a request (`catch_response`, or a custom event).
    pub fn record(&self, v: Verdict) {
        let engine = &self.engine;
        let id = engine.endpoint(&v.method, &v.name);
        let failure = v.failure.map(|m| Failure::new(FailureKind::Script, m));
        let outcome = Outcome::Judged { status: v.status, body_bytes: v.body_bytes, failure };
        engine.recorder.borrow_mut().record(Instant::now(), id, Duration::from_micros(v.elapsed_us), &outcome);
    }

    /// The user stopped: its connections close and its requests in flight end unmeasured (as in
    /// Locust), counted as abandoned.
    pub fn close_user(&self, user: u64) {
        let engine = &self.engine;
        engine.running.borrow_mut().retain(|_, r| {
            let theirs = r.user == user;
            if theirs {
                r.task.abort();
                engine.cancelled.set(engine.cancelled.get() + 1);
            }
            !theirs
        });
        engine.pool.borrow_mut().users.remove(&user);
        engine.jars.borrow_mut().remove(&user);
        engine.mqtt.borrow_mut().remove(&user); // its task says goodbye and ends
    }

    /// The user's cookies: (name, value, domain).
    pub fn cookies(&self, user: u64) -> Vec<(String, String, String)> {
        let jars = self.engine.jars.borrow();
        jars.get(&user).map_or(Vec::new(), |j| {
            j.all().iter().map(|c| (c.name.clone(), c.value.clone(), c.domain.clone())).collect()
        })
    }

    /// Sets a cookie in the user's jar (`domain` empty: sent to every host).
    pub fn set_cookie(&self, user: u64, name: &str, value: &str, domain: &str) -> Result<(), String> {
        cookies::check(name, value)?;
        self.engine.jars.borrow_mut().entry(user).or_default().set(name, value, domain);
        Ok(())
    }

    /// Removes the user's cookies named `name` (all when None).
    pub fn remove_cookies(&self, user: u64, name: Option<&str>) {
        if let Some(j) = self.engine.jars.borrow_mut().get_mut(&user) {
            j.remove(name);
        }
    }

    /// The number of users now (the run's users gauge).
    pub fn set_users(&self, users: u64) {
        self.engine.core.timeline.set_users(users);
    }

    /// (completed, failed) so far.
    pub fn counts(&self) -> (u64, u64) {
        self.engine.core.timeline.counts()
    }

    /// Ends the run: what is still in flight is abandoned (counted, not measured), the connections
    /// close, and the result is built.
    pub fn finish(self, reason: StopReason, url: String) -> RunResult {
        let ScriptEngine { rt, local, engine, timer, .. } = self;
        let core = engine.core.clone();
        core.set_reason(reason);
        let duration = core.elapsed();
        let abandoned = engine.cancelled.get() + engine.running.borrow().len() as u64;
        for (_, r) in engine.running.borrow_mut().drain() {
            r.task.abort();
        }
        engine.mqtt.borrow_mut().clear(); // MQTT users say goodbye
        rt.block_on(local.run_until(async {
            tokio::task::yield_now().await;
            tokio::task::yield_now().await;
        }));
        drop(local);
        drop(timer);
        let engine = Rc::try_unwrap(engine).ok().expect("no task holds the engine once the local set is gone");
        let mut recorder = engine.recorder.into_inner();
        recorder.finish();
        core.timeline.publish_until(duration.as_secs() + 1);
        let users = core.timeline.users();
        let schedule = engine.open.borrow().as_ref().map(|o| {
            let issued = o.arrivals.issued();
            let mean = if duration.is_zero() { 0.0 } else { issued as f64 / duration.as_secs_f64() };
            let rate = if o.changed { mean } else { o.first_rate };
            let arrival = if o.arrivals.is_poisson() { "poisson" } else { "constant" };
            let lag = &recorder.lag;
            ScheduleReport::new(rate, arrival, issued, lag, issued.saturating_sub(lag.sent))
        });
        result::build(result::Inputs {
            kind: "script".into(),
            url,
            method: String::new(),
            start_unix: core.start_unix,
            load: LoadReport {
                model: if engine.open.borrow().is_some() { "open" } else { "users" }.into(),
                connections: users as usize,
                threads: 1,
                requests: None,
                duration_s: Some(duration.as_secs_f64()),
                ramp_s: None,
                http2: engine.options.http2,
                keepalive: true,
                timeout_s: None,
            },
            names: core.timeline.names(),
            schedule,
            reason: core.reason(),
            duration,
            totals: std::mem::take(&mut recorder.totals),
            timings: std::mem::take(&mut recorder.timings),
            errors: std::mem::take(&mut recorder.errors),
            connect: recorder.connect.clone(),
            seconds: core.timeline.all(),
            abandoned,
        })
    }
}

async fn run_request(
    engine: Rc<Engine>,
    id: u64,
    r: ScriptRequest,
    known: KnownUrl,
    begin: Instant,
    endpoint: EndpointId,
    name: Rc<str>,
) {
    let result = follow(&engine, &r, &known).await;
    let now = Instant::now();
    let (elapsed, end) = match &result {
        // Timed to when the kernel received the response's end (its read may have been deferred:
        // `DEFER`), less what earlier hops of a redirect waited to be read.
        Ok((resp, _, deferred, _, _)) => {
            let end = match resp.received {
                Stamp::At(t) if t >= begin && t <= now => t,
                _ => now,
            };
            (end.saturating_duration_since(begin).saturating_sub(*deferred), end)
        }
        Err(_) => (now.saturating_duration_since(begin), now),
    };
    let completion = match result {
        Ok((mut resp, url, _, mut phases, timing)) => {
            if r.record {
                let outcome =
                    Outcome::Response { status: resp.status, body_bytes: resp.body_bytes, wire_bytes: resp.wire_bytes };
                let mut recorder = engine.recorder.borrow_mut();
                recorder.record(now, endpoint, elapsed, &outcome);
                if timing.written.is_some() {
                    phases.add(&timing.phases(end));
                    recorder.record_timing(endpoint, &phases);
                }
            }
            Completion {
                id,
                status: resp.status,
                head: resp.raw_head.take().unwrap_or_default(),
                body: resp.body.take().unwrap_or_default(),
                elapsed_us: elapsed.as_micros() as u64,
                error: None,
                url,
                name: name.to_string(),
            }
        }
        Err(failure) => {
            let error = failure.message();
            if r.record {
                engine.recorder.borrow_mut().record(now, endpoint, elapsed, &Outcome::Failed(failure));
            }
            Completion {
                id,
                elapsed_us: elapsed.as_micros() as u64,
                error: Some(error),
                url: known.url.to_string(),
                name: name.to_string(),
                ..Completion::default()
            }
        }
    };
    engine.running.borrow_mut().remove(&id);
    engine.push(completion);
}

/// The request, and the redirects it leads to when asked to follow them. Returns the final response,
/// its URL, how long the responses of earlier hops waited to be read after they arrived (the
/// generator's own delay, not the server's), the phases of the connects and earlier hops (summed), and
/// what the last exchange saw of its own (HTTP/1.1). Cookies set along the way go into the user's jar (and so
/// with the following hops); an `Authorization` header is not sent on to another host, nor from https
/// to http.
async fn follow(
    engine: &Engine,
    r: &ScriptRequest,
    first: &KnownUrl,
) -> Result<(Response, String, Duration, Phases, Timing), Failure> {
    let (mut url, mut origin) = (std::borrow::Cow::Borrowed(&first.url), first.origin);
    let (mut method, mut body) = (r.method.as_str(), std::borrow::Cow::Borrowed(&r.body[..]));
    let mut headers = std::borrow::Cow::Borrowed(&r.headers[..]);
    let (mut hops, mut deferred, mut phases) = (0, Duration::ZERO, Phases::default());
    loop {
        let host = url.host_str().unwrap_or_default().to_string();
        let cookie = if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("cookie")) {
            None // the script's own Cookie header wins, as in requests
        } else {
            let jars = engine.jars.borrow();
            match jars.get(&r.user) {
                Some(jar) => jar.header_for(&host, &r.cookies),
                None => Jar::default().header_for(&host, &r.cookies),
            }
        };
        let (resp, opened, timing) =
            exchange(engine, r, origin, method, &url, &headers, cookie.as_deref(), &body).await?;
        phases.add(&opened);
        if !resp.set_cookies.is_empty() {
            let mut jars = engine.jars.borrow_mut();
            let jar = jars.entry(r.user).or_default();
            for c in &resp.set_cookies {
                jar.set_from_header(&host, c);
            }
        }
        let redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308);
        let (Some(location), true, Some(max)) = (resp.location.clone(), redirect, r.max_redirects) else {
            return Ok((resp, url.to_string(), deferred, phases, timing));
        };
        let now = Instant::now();
        let end = match resp.received {
            Stamp::At(arrived) => {
                deferred += now.saturating_duration_since(arrived);
                arrived.min(now)
            }
            _ => now,
        };
        if timing.written.is_some() {
            phases.add(&timing.phases(end));
        }
        if hops >= max {
            // As requests does: a loop or an endless chain fails; it is not the last 3xx's success.
            return Err(Failure::new(FailureKind::TooManyRedirects, max.to_string()));
        }
        let next = url
            .join(&location)
            .map_err(|_| Failure::new(FailureKind::Protocol, format!("bad redirect location '{location}'")))?;
        let same_host = next.host_str() == url.host_str() && !(url.scheme() == "https" && next.scheme() == "http");
        if !same_host && headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization")) {
            headers.to_mut().retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        }
        if next.host_str().is_some_and(|h| h.len() > MAX_HOST) {
            let why = format!("bad redirect location: a host name above DNS's {MAX_HOST} bytes");
            return Err(Failure::new(FailureKind::Protocol, why));
        }
        let known = engine.remember(next).map_err(|m| Failure::new(FailureKind::TooLarge, m))?;
        (url, origin) = (std::borrow::Cow::Owned(known.url), known.origin);
        // As browsers and python-requests do: 303 always, and 301/302 after a POST, become a GET.
        if resp.status == 303 || (matches!(resp.status, 301 | 302) && method == "POST") {
            method = "GET";
            body = std::borrow::Cow::Borrowed(&[]);
        }
        hops += 1;
    }
}

#[allow(clippy::too_many_arguments)]
async fn exchange(
    engine: &Engine,
    r: &ScriptRequest,
    origin: usize,
    method: &str,
    url: &url::Url,
    headers: &[(String, String)],
    cookie: Option<&str>,
    body: &[u8],
) -> Result<(Response, Phases, Timing), Failure> {
    let (user, insecure) = (r.user, r.insecure);
    let key = (user, origin, insecure);
    if engine.options.http2 {
        let conn = {
            let mut pool = engine.pool.borrow_mut();
            match pool.get_or_insert(key, || Pooled::H2(Rc::new(H2Conn::new(user as usize)))) {
                Pooled::H2(c) => c.clone(),
                Pooled::H1(_) => unreachable!("a run is HTTP/2 or HTTP/1.1 throughout"),
            }
        };
        let connector = engine.connector(origin, insecure).await?;
        let mut all = headers.to_vec();
        if let Some(c) = cookie {
            all.push(("cookie".into(), c.to_string()));
        }
        let has_length = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-length"));
        if !has_length && needs_length(method, body) {
            all.push(("content-length".into(), body.len().to_string()));
        }
        let req = build_request(method, url, &all).map_err(|m| Failure::new(FailureKind::Protocol, m))?;
        let on_connect = |t| engine.recorder.borrow_mut().record_connect(t);
        let mut resp =
            conn.exchange(&connector, &req, &Bytes::copy_from_slice(body), true, on_connect, &Cell::new(false)).await?;
        // One shape for the script: raw header lines, Set-Cookie and Location picked out.
        let mut raw = Vec::new();
        for (k, v) in resp.headers.take().unwrap_or_default() {
            if k == "set-cookie" {
                resp.set_cookies.push(v.clone());
            } else if k == "location" {
                resp.location = Some(v.clone());
            }
            raw.extend_from_slice(k.as_bytes());
            raw.extend_from_slice(b": ");
            raw.extend_from_slice(v.as_bytes());
            raw.extend_from_slice(b"\r\n");
        }
        resp.raw_head = Some(raw);
        return Ok((resp, Phases::default(), Timing::default())); // (HTTP/2 is not broken down: stats::timing)
    }
    let bytes = engine.h1_bytes(method, url, headers, cookie, body);
    let mut conn = match engine.pool.borrow_mut().get(key) {
        Some(Pooled::H1(idle)) => idle.pop(),
        _ => None,
    };
    if let Some(c) = conn.as_mut().filter(|_| engine.wants_stamps()) {
        c.stamp();
    }
    // The connection opened for this request, if one was: its connect and TLS phases.
    let opened = Cell::new(Phases::default());
    let open = async || {
        let connector = engine.connector(origin, insecure).await?;
        let t0 = Instant::now();
        let (stream, o) = connector.connect_timed(user as usize).await?;
        engine.recorder.borrow_mut().record_connect(t0.elapsed());
        opened.set(Phases { connect: Some(o.tcp), tls: o.tls, ..Phases::default() });
        let mut conn = H1Conn::new(stream);
        conn.awaiting = Some(engine.awaiting.clone());
        if engine.wants_stamps() {
            conn.stamp();
        }
        Ok(conn)
    };
    let mut timing = Timing::default();
    let resp =
        crate::http::h1::exchange_keepalive(&mut conn, open, &bytes, method == "HEAD", true, true, &mut timing).await?;
    match resp.received {
        Stamp::At(_) => engine.stamping.set(true),
        Stamp::Missing => engine.stamping.set(false),
        Stamp::Unasked => {}
    }
    if let Some(c) = conn {
        if let Pooled::H1(idle) = engine.pool.borrow_mut().get_or_insert(key, || Pooled::H1(Vec::new())) {
            idle.push(c);
        }
    }
    Ok((resp, opened.get(), timing))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 26: a user going through many origins (redirects to a new host each) keeps connections
    /// to the 10 it used last, not to every one.
    #[test]
    fn a_user_keeps_the_pools_of_its_10_latest_origins() {
        let mut pools = Pools::default();
        let idle = || Pooled::H1(Vec::new());
        for origin in 0..25 {
            pools.get_or_insert((7, origin, false), idle);
            pools.get_or_insert((7, 0, false), idle); // origin 0 is used all along
        }
        pools.get_or_insert((8, 3, false), idle);
        let kept: Vec<usize> = pools.users[&7].iter().map(|((o, _), _)| *o).collect();
        assert_eq!(kept, [16, 17, 18, 19, 20, 21, 22, 23, 24, 0]);
        assert!(pools.get((7, 5, false)).is_none() && pools.get((8, 3, false)).is_some());
        assert!(pools.get((7, 0, true)).is_none(), "an insecure request's connections are its own");
    }
}
