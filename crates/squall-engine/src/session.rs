//! Scripted load: requests that script users (Python greenlets) submit one at a time, run on the
//! engine's own thread over each user's keep-alive connections. The engine measures and records
//! them; completions go back to the script in batches, so one poll serves many users.

use crate::http1::H1Conn;
use crate::net::Connector;
use crate::request::{parse_url, serialize_h1};
use crate::result::{self, LoadReport, RunResult};
use crate::runner::StopReason;
use crate::stats::{self, EndpointId, Failure, FailureKind, LiveCounters, Outcome, Recorder, Timeline};
use crate::tls;
use rustc_hash::FxHashMap as HashMap;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc as std_mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;

/// One request from a script.
pub struct ScriptRequest {
    pub id: u64,
    pub user: u64,
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
    /// Stats name (Locust's `name=`).
    pub name: String,
    /// False when the script judges the response itself (`catch_response=True`) and reports
    /// the verdict with `Session::record`.
    pub record: bool,
    /// Follow redirects (up to 30), timed and recorded as one request, as Locust does.
    pub follow_redirects: bool,
}

const MAX_REDIRECTS: usize = 30;

/// What came back for a request. `status` is 0 when no response arrived (then `error` says why).
pub struct Completion {
    pub id: u64,
    pub status: u16,
    /// The response's header lines, raw: parsed by the script only if it reads them.
    pub head: Vec<u8>,
    pub set_cookies: Vec<String>,
    pub body: Vec<u8>,
    pub elapsed_us: u64,
    pub error: Option<String>,
    /// The URL of the final response when redirects changed it.
    pub url: Option<String>,
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

/// Live per-endpoint numbers for the periodic console table.
pub struct EndpointSnapshot {
    pub method: String,
    pub name: String,
    pub summary: result::Summary,
}

enum Command {
    Requests(Vec<ScriptRequest>),
    Record(Verdict),
    CloseUser(u64),
    Mqtt(Vec<(u64, crate::mqtt::script::Op)>),
    Snapshot(std_mpsc::Sender<Vec<EndpointSnapshot>>),
}

/// An MQTT message that arrived for a scripted user's subscription.
pub struct Message {
    pub user: u64,
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
}

#[derive(Default)]
struct Queued {
    done: Vec<Completion>,
    messages: Vec<Message>,
}

/// Completions and messages waiting for the script; the engine only signals when the script is waiting.
#[derive(Default)]
struct Inbox {
    queue: Mutex<Queued>,
    ready: Condvar,
    waiting: AtomicBool,
}

impl Inbox {
    fn push(&self, c: Completion) {
        self.queue.lock().unwrap().done.push(c);
        self.wake();
    }

    fn push_message(&self, m: Message) {
        self.queue.lock().unwrap().messages.push(m);
        self.wake();
    }

    fn wake(&self) {
        if self.waiting.load(Ordering::SeqCst) {
            self.ready.notify_one();
        }
    }
}

struct Output {
    recorder: Recorder,
    names: Vec<(String, String)>,
    /// Requests that ended unmeasured: in flight when their user stopped or the session finished.
    abandoned: u64,
}

pub struct Session {
    tx: mpsc::UnboundedSender<Command>,
    inbox: Arc<Inbox>,
    thread: Option<JoinHandle<Output>>,
    start: Instant,
    start_unix: f64,
    live: Arc<LiveCounters>,
}

impl Session {
    /// Starts the engine thread. `insecure` accepts any TLS certificate.
    pub fn start(insecure: bool) -> Session {
        let (tx, rx) = mpsc::unbounded_channel();
        let inbox = Arc::new(Inbox::default());
        let start = Instant::now();
        let start_unix = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0);
        let live = Arc::new(LiveCounters::default());
        let thread = {
            let (inbox, live) = (inbox.clone(), live.clone());
            std::thread::Builder::new()
                .name("squall-session".into())
                .spawn(move || engine_thread(rx, inbox, start, live, insecure))
                .expect("spawning the engine thread")
        };
        Session { tx, inbox, thread: Some(thread), start, start_unix, live }
    }

    pub fn submit(&self, requests: Vec<ScriptRequest>) {
        let _ = self.tx.send(Command::Requests(requests));
    }

    pub fn record(&self, verdict: Verdict) {
        let _ = self.tx.send(Command::Record(verdict));
    }

    /// The user stopped: drops its connections and cancels its requests in flight, unmeasured.
    pub fn close_user(&self, user: u64) {
        let _ = self.tx.send(Command::CloseUser(user));
    }

    /// Completions so far, waiting up to `timeout` for the first one.
    pub fn poll(&self, timeout: Duration) -> Vec<Completion> {
        let inbox = &self.inbox;
        let mut queue = inbox.queue.lock().unwrap();
        let idle = |q: &mut Queued| q.done.is_empty() && q.messages.is_empty();
        if idle(&mut queue) && !timeout.is_zero() {
            inbox.waiting.store(true, Ordering::SeqCst);
            queue = inbox.ready.wait_timeout_while(queue, timeout, idle).unwrap().0;
            inbox.waiting.store(false, Ordering::SeqCst);
        }
        std::mem::take(&mut queue.done)
    }

    /// MQTT messages that arrived for scripted users since the last call.
    pub fn messages(&self) -> Vec<Message> {
        std::mem::take(&mut self.inbox.queue.lock().unwrap().messages)
    }

    /// MQTT operations of scripted users, each run on that user's connection in order.
    pub fn submit_mqtt(&self, ops: Vec<(u64, crate::mqtt::script::Op)>) {
        let _ = self.tx.send(Command::Mqtt(ops));
    }

    pub fn snapshot(&self) -> Vec<EndpointSnapshot> {
        let (reply, answer) = std_mpsc::channel();
        if self.tx.send(Command::Snapshot(reply)).is_err() {
            return Vec::new();
        }
        answer.recv().unwrap_or_default()
    }

    /// (completed, failed) so far.
    pub fn counts(&self) -> (u64, u64) {
        (self.live.completed.load(Ordering::Relaxed), self.live.failed.load(Ordering::Relaxed))
    }

    /// Ends the engine thread and builds the result; `users_at` gives the user count per second.
    pub fn finish(mut self, reason: StopReason, url: String, users_at: &dyn Fn(u64) -> u64) -> RunResult {
        let duration = self.start.elapsed();
        let (tx, _) = mpsc::unbounded_channel();
        drop(std::mem::replace(&mut self.tx, tx)); // closing the channel ends the engine thread
        let out = self.thread.take().unwrap().join().expect("the engine thread does not panic");
        let mut recorder = out.recorder;
        recorder.flush();
        let timeline = recorder.timeline().take_all();
        let users = users_at(duration.as_secs());
        result::build(result::Inputs {
            kind: "script",
            url,
            method: String::new(),
            start_unix: self.start_unix,
            load: LoadReport {
                model: "users".into(),
                connections: users as usize,
                threads: 1,
                requests: None,
                duration_s: Some(duration.as_secs_f64()),
                ramp_s: None,
                http2: false,
                keepalive: true,
                timeout_s: 0.0,
            },
            names: out.names,
            users_at,
            open_model: None,
            reason,
            duration,
            totals: std::mem::take(&mut recorder.totals),
            errors: std::mem::take(&mut recorder.errors),
            connect: recorder.connect.clone(),
            timeline,
            abandoned: out.abandoned,
        })
    }
}

/// Where a user's connections go: scheme, host and port.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Origin {
    https: bool,
    host: String,
    port: u16,
}

/// A URL seen before: parsed once, with the index of its origin.
#[derive(Clone)]
struct KnownUrl {
    url: url::Url,
    origin: usize,
}

struct Engine {
    recorder: RefCell<Recorder>,
    /// name -> [(method, id)]: looked up by &str, so a request allocates nothing to find its endpoint.
    endpoints: RefCell<HashMap<String, Vec<(String, EndpointId)>>>,
    names: RefCell<Vec<(String, String)>>,
    urls: RefCell<HashMap<String, KnownUrl>>,
    origins: RefCell<Vec<Origin>>,
    /// Idle keep-alive connections per user and origin index.
    pool: RefCell<HashMap<(u64, usize), Vec<H1Conn>>>,
    connectors: RefCell<HashMap<usize, Connector>>,
    tls: Arc<rustls::ClientConfig>,
    inbox: Arc<Inbox>,
    /// Each MQTT user's connection task.
    mqtt: RefCell<HashMap<u64, crate::mqtt::script::UserTx>>,
    /// Request tasks not yet completed: request id -> (user, handle to cancel it when its user stops).
    running: RefCell<HashMap<u64, (u64, tokio::task::AbortHandle)>>,
    /// Requests cancelled unmeasured because their user stopped.
    cancelled: std::cell::Cell<u64>,
}

impl crate::mqtt::script::Sink for Engine {
    fn record(&self, method: &str, name: &str, latency: Duration, outcome: &Outcome) {
        let id = self.endpoint(method, name);
        self.recorder.borrow_mut().record(Instant::now(), id, latency, outcome);
    }

    fn event(&self, e: crate::mqtt::script::Event) {
        use crate::mqtt::script::Event;
        match e {
            Event::Done { id, elapsed_us, error } => self.inbox.push(Completion {
                id,
                status: 0,
                head: Vec::new(),
                set_cookies: Vec::new(),
                body: Vec::new(),
                elapsed_us,
                error,
                url: None,
            }),
            Event::Message { user, topic, payload, qos } => {
                self.inbox.push_message(Message { user, topic, payload, qos })
            }
        }
    }
}

impl Engine {
    fn endpoint(&self, method: &str, name: &str) -> EndpointId {
        if let Some(methods) = self.endpoints.borrow().get(name) {
            if let Some(&(_, id)) = methods.iter().find(|(m, _)| m == method) {
                return id;
            }
        }
        let mut names = self.names.borrow_mut();
        let id = names.len();
        names.push((method.to_string(), name.to_string()));
        self.endpoints.borrow_mut().entry(name.to_string()).or_default().push((method.to_string(), id));
        id
    }

    /// The parsed URL and its origin index; cached, since scripts request the same URLs over and over.
    fn known_url(&self, raw: &str) -> Result<KnownUrl, Failure> {
        if let Some(k) = self.urls.borrow().get(raw) {
            return Ok(k.clone());
        }
        let url = parse_url(raw).map_err(|m| Failure::new(FailureKind::Io, m))?;
        let https = url.scheme() == "https";
        let origin = Origin {
            https,
            host: url.host_str().unwrap_or_default().trim_matches(|c| c == '[' || c == ']').to_string(),
            port: url.port_or_known_default().unwrap_or(if https { 443 } else { 80 }),
        };
        let mut origins = self.origins.borrow_mut();
        let index = match origins.iter().position(|o| *o == origin) {
            Some(i) => i,
            None => {
                origins.push(origin);
                origins.len() - 1
            }
        };
        let known = KnownUrl { url, origin: index };
        let mut urls = self.urls.borrow_mut();
        if urls.len() < 10_000 {
            urls.insert(raw.to_string(), known.clone());
        }
        Ok(known)
    }

    async fn connector(&self, index: usize) -> Result<Connector, Failure> {
        if let Some(c) = self.connectors.borrow().get(&index) {
            return Ok(c.clone());
        }
        let origin = self.origins.borrow()[index].clone();
        let origin = &origin;
        let addrs = crate::request::resolve_async(&origin.host, origin.port)
            .await
            .map_err(|m| Failure::new(FailureKind::Io, m))?;
        let tls = origin.https.then(|| (self.tls.clone(), origin.host.as_str()));
        let c = Connector::new(addrs, tls).map_err(|m| Failure::new(FailureKind::Tls, m))?;
        self.connectors.borrow_mut().insert(index, c.clone());
        Ok(c)
    }
}

fn engine_thread(
    mut rx: mpsc::UnboundedReceiver<Command>,
    inbox: Arc<Inbox>,
    start: Instant,
    live: Arc<LiveCounters>,
    insecure: bool,
) -> Output {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let local = tokio::task::LocalSet::new();
    let engine = Rc::new(Engine {
        recorder: RefCell::new(Recorder::new(start, Timeline::new(), live)),
        endpoints: RefCell::default(),
        names: RefCell::default(),
        urls: RefCell::default(),
        origins: RefCell::default(),
        pool: RefCell::default(),
        connectors: RefCell::default(),
        tls: tls::client_config(insecure, &[b"http/1.1"]),
        inbox,
        mqtt: RefCell::default(),
        running: RefCell::default(),
        cancelled: Default::default(),
    });
    local.block_on(&rt, async {
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        loop {
            tokio::select! {
                cmd = rx.recv() => match cmd {
                    Some(Command::Requests(batch)) => {
                        for r in batch {
                            let (id, user) = (r.id, r.user);
                            let task = tokio::task::spawn_local(run_request(engine.clone(), r));
                            engine.running.borrow_mut().insert(id, (user, task.abort_handle()));
                        }
                    }
                    Some(Command::Record(v)) => record_verdict(&engine, v),
                    Some(Command::CloseUser(user)) => {
                        // As in Locust, a stopped user's request in flight ends unmeasured.
                        engine.running.borrow_mut().retain(|_, (u, task)| {
                            let theirs = *u == user;
                            if theirs {
                                task.abort();
                                engine.cancelled.set(engine.cancelled.get() + 1);
                            }
                            !theirs
                        });
                        engine.pool.borrow_mut().retain(|&(u, _), _| u != user);
                        engine.mqtt.borrow_mut().remove(&user); // its task says goodbye and ends
                    }
                    Some(Command::Mqtt(ops)) => {
                        for (user, op) in ops {
                            let tx = engine.mqtt.borrow_mut().entry(user).or_insert_with(|| {
                                let (tx, rx) = mpsc::unbounded_channel();
                                tokio::task::spawn_local(crate::mqtt::script::user_task(engine.clone(), user, rx));
                                tx
                            }).clone();
                            let _ = tx.send(op);
                        }
                    }
                    Some(Command::Snapshot(reply)) => {
                        let _ = reply.send(snapshot(&engine));
                    }
                    None => break,
                },
                _ = tick.tick() => engine.recorder.borrow_mut().roll(Instant::now()),
            }
        }
    });
    drop(local);
    let engine = Rc::try_unwrap(engine).ok().expect("no request tasks are left");
    let abandoned = engine.cancelled.get() + engine.running.borrow().len() as u64;
    Output { recorder: engine.recorder.into_inner(), names: engine.names.into_inner(), abandoned }
}

fn record_verdict(engine: &Engine, v: Verdict) {
    let id = engine.endpoint(&v.method, &v.name);
    let failure = v.failure.map(|m| Failure::new(FailureKind::Script, m));
    let outcome = Outcome::Judged { status: v.status, body_bytes: v.body_bytes, failure };
    engine.recorder.borrow_mut().record(Instant::now(), id, Duration::from_micros(v.elapsed_us), &outcome);
}

/// Live totals per endpoint, then the aggregate (method "", name "Aggregated").
fn snapshot(engine: &Engine) -> Vec<EndpointSnapshot> {
    let recorder = engine.recorder.borrow();
    let summary =
        |s: &stats::EndpointStats| result::summarize(&s.hist, s.requests, s.failures, s.body_bytes, s.wire_bytes);
    let mut all = stats::EndpointStats::default();
    let mut rows: Vec<EndpointSnapshot> = engine
        .names
        .borrow()
        .iter()
        .zip(recorder.totals.iter())
        .map(|((method, name), s)| {
            all.merge(s);
            EndpointSnapshot { method: method.clone(), name: name.clone(), summary: summary(s) }
        })
        .collect();
    rows.push(EndpointSnapshot { method: String::new(), name: "Aggregated".into(), summary: summary(&all) });
    rows
}

async fn run_request(engine: Rc<Engine>, r: ScriptRequest) {
    let begin = Instant::now();
    let result = match tokio::time::timeout(r.timeout, follow(&engine, &r)).await {
        Ok(result) => result,
        Err(_) => Err(Failure::new(FailureKind::Timeout, "")),
    };
    let now = Instant::now();
    let elapsed = now.saturating_duration_since(begin);
    let completion = match result {
        Ok((mut resp, url)) => {
            if r.record {
                let outcome =
                    Outcome::Response { status: resp.status, body_bytes: resp.body_bytes, wire_bytes: resp.wire_bytes };
                let id = engine.endpoint(&r.method, &r.name);
                engine.recorder.borrow_mut().record(now, id, elapsed, &outcome);
            }
            Completion {
                id: r.id,
                status: resp.status,
                head: resp.raw_head.take().unwrap_or_default(),
                set_cookies: std::mem::take(&mut resp.set_cookies),
                body: resp.body.take().unwrap_or_default(),
                elapsed_us: elapsed.as_micros() as u64,
                error: None,
                url,
            }
        }
        Err(failure) => {
            let error = failure.message();
            if r.record {
                let id = engine.endpoint(&r.method, &r.name);
                engine.recorder.borrow_mut().record(now, id, elapsed, &Outcome::Failed(failure));
            }
            Completion {
                id: r.id,
                status: 0,
                head: Vec::new(),
                set_cookies: Vec::new(),
                body: Vec::new(),
                elapsed_us: elapsed.as_micros() as u64,
                error: Some(error),
                url: None,
            }
        }
    };
    engine.running.borrow_mut().remove(&r.id);
    engine.inbox.push(completion);
}

/// The request, and the redirects it leads to when asked to follow them. Returns the final response
/// and, when redirects moved it, its URL.
async fn follow(engine: &Engine, r: &ScriptRequest) -> Result<(crate::http1::Response, Option<String>), Failure> {
    let KnownUrl { mut url, mut origin } = engine.known_url(&r.url)?;
    let (mut method, mut body) = (r.method.clone(), r.body.clone());
    let mut headers = std::borrow::Cow::Borrowed(&r.headers);
    let mut set_cookies: Vec<String> = Vec::new();
    let mut hops = 0;
    loop {
        let mut resp = exchange(engine, r.user, origin, &method, &url, &headers, &body).await?;
        let redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308);
        let (Some(location), true, true) =
            (resp.location.clone(), redirect && r.follow_redirects, hops < MAX_REDIRECTS)
        else {
            if !set_cookies.is_empty() {
                set_cookies.append(&mut resp.set_cookies);
                resp.set_cookies = set_cookies; // every cookie the chain set reaches the user's jar
            }
            return Ok((resp, (hops > 0).then(|| url.to_string())));
        };
        // Cookies a redirect sets go with the following hops, as a browser or requests' Session does.
        if !resp.set_cookies.is_empty() {
            let headers = headers.to_mut();
            let mut jar: Vec<(String, String)> = cookie_pairs(headers);
            for c in &resp.set_cookies {
                if let Some((name, value)) = c.split(';').next().and_then(|p| p.trim().split_once('=')) {
                    jar.retain(|(n, _)| n != name);
                    jar.push((name.to_string(), value.to_string()));
                }
            }
            headers.retain(|(k, _)| !k.eq_ignore_ascii_case("cookie"));
            let cookie = jar.iter().map(|(n, v)| format!("{n}={v}")).collect::<Vec<_>>().join("; ");
            headers.push(("Cookie".into(), cookie));
            set_cookies.append(&mut resp.set_cookies);
        }
        let next = url
            .join(&location)
            .map_err(|_| Failure::new(FailureKind::Protocol, format!("bad redirect location '{location}'")))?;
        KnownUrl { url, origin } = engine.known_url(next.as_str())?;
        // As browsers and python-requests do: 303 always, and 301/302 after a POST, become a GET.
        if resp.status == 303 || (matches!(resp.status, 301 | 302) && method == "POST") {
            method = "GET".into();
            body.clear();
        }
        hops += 1;
    }
}

/// The name=value pairs of a request's Cookie header(s).
fn cookie_pairs(headers: &[(String, String)]) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("cookie"))
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|p| p.trim().split_once('=').map(|(n, v)| (n.to_string(), v.to_string())))
        .collect()
}

async fn exchange(
    engine: &Engine,
    user: u64,
    origin: usize,
    method: &str,
    url: &url::Url,
    headers: &[(String, String)],
    body: &[u8],
) -> Result<crate::http1::Response, Failure> {
    let bytes = serialize_h1(method, url, headers, body, true);
    let key = (user, origin);
    let mut conn = engine.pool.borrow_mut().get_mut(&key).and_then(Vec::pop);
    let open = async || {
        let connector = engine.connector(origin).await?;
        let t0 = Instant::now();
        let stream = connector.connect(user as usize).await?;
        engine.recorder.borrow_mut().record_connect(t0.elapsed());
        Ok(H1Conn::new(stream))
    };
    let resp = crate::http1::exchange_keepalive(&mut conn, open, &bytes, method == "HEAD", true, true).await?;
    if let Some(c) = conn {
        engine.pool.borrow_mut().entry(key).or_default().push(c);
    }
    Ok(resp)
}
