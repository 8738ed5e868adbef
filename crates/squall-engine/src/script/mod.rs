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
//!
//! Here: what the script and the engine exchange, and the driver (`ScriptEngine`: submit, `poll`,
//! the deferral of reads, the watchdog, the open model's arrivals, the result). Below it, without a
//! cycle: `request` (a request's path: exchange, redirects, timing and record), `engine` (what the
//! requests share: caches, the requests in flight, what is ready for the script), `pools` (each
//! user's connections per origin) and `cookies` (each user's jar).

pub mod cookies;
mod engine;
pub mod native;
mod pools;
mod request;
mod think;
mod wait;
pub mod websocket;
pub use wait::LONGEST_WAIT_S;

use crate::http::request::{check_headers, check_method};
use crate::mqtt::script::Op;
use crate::net::stamped::stamp_reads;
use crate::run::clock::AsyncTimer;
use crate::run::schedule::{Arrival, Arrivals};
use crate::run::RunCore;
use crate::stats::lag::ScheduleReport;
use crate::stats::result::{self, LoadReport, RunResult};
use crate::stats::{EndpointId, Failure, FailureKind, Outcome};
use crate::types::StopReason;
use crate::ws::WsOp;
use engine::{Engine, OpenModel, Running, WANT_STAMPS};
use request::{run_request, run_stream, Started};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::cell::Cell;
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// What a script's request is, whoever sends it: built once for each distinct call a script makes (a
/// `Prepared` in Python, kept by the user's session) and shared by every send of it, so that a request
/// crosses from Python as one reference, its strings and headers converted and checked once.
pub struct RequestShape {
    pub method: String,
    /// The user's base URL (its `host`), shared by its session's calls.
    pub base: Arc<str>,
    /// The call's URL; a shape once checked holds it joined to `base` (`joined_url`).
    pub url: String,
    /// Stats name; None: the path and query.
    pub name: Option<String>,
    pub headers: Headers,
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

/// A request's headers, checked (no CR or LF in a name or value: `check_headers`) when made, and
/// shared: a session's calls that add the same headers to its own send one list, neither merged,
/// copied nor checked again for each call (squall-py's `CallBase`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Headers(Arc<[(String, String)]>);

impl Headers {
    /// The headers, if each can be sent (`check_headers`).
    pub fn new(headers: Vec<(String, String)>) -> Result<Headers, String> {
        check_headers(&headers)?;
        Ok(Headers(headers.into()))
    }
}

impl std::ops::Deref for Headers {
    type Target = [(String, String)];
    fn deref(&self) -> &[(String, String)] {
        &self.0
    }
}

/// A `RequestShape` that passed the checks `squall bench` makes of its command line: no CR or LF in
/// a header or the method (it would put another header, or request, on the wire), cookies that can be
/// sent. Only `checked` makes one, so the engine sends only what was checked, and checks it once.
#[derive(Clone)]
pub struct Checked(Arc<RequestShape>);

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Checked({} {})", self.method, self.url)
    }
}

impl RequestShape {
    /// The shape checked, its URL joined to its base (`joined_url`).
    pub fn checked(mut self) -> Result<Checked, String> {
        if !is_whole_url(&self.url) {
            self.url = joined_url(&self.base, &self.url);
        }
        check_method(&self.method)?; // (its headers were checked as they were made: `Headers`)
        for (name, value) in &self.cookies {
            cookies::check(name, value)?;
        }
        Ok(Checked(Arc::new(self)))
    }
}

impl std::ops::Deref for Checked {
    type Target = RequestShape;
    fn deref(&self) -> &RequestShape {
        &self.0
    }
}

/// One request of a script: a checked shape and how it is sent (the user sending it is given beside
/// it, so that a native plan's requests serve all its users: `engine::Steps`).
pub struct ScriptRequest {
    pub shape: Checked,
    /// The script reads the response (its headers and body are kept for it); false for a native
    /// user's request, whose response is only counted (`native`).
    pub read: bool,
    /// Its connection stamps reads from the start (a native user that thinks: its responses are read
    /// at the engine's next tick, `TICK`); a script's connections stamp once reads are deferred.
    pub stamp: bool,
    /// A streamed request (requests' `stream=True`, `ScriptEngine::submit_stream`): it completes at its
    /// head and its body is read as it comes, each wait for its next bytes bounded by this (requests'
    /// read timeout). None: the response is read whole, its timeout the whole request's.
    pub stream: Option<Duration>,
}

impl std::ops::Deref for ScriptRequest {
    type Target = RequestShape;
    fn deref(&self) -> &RequestShape {
        &self.shape
    }
}

/// What came back for a request (or an MQTT operation). `status` is 0 when no response arrived
/// (then `error` says why).
#[derive(Debug, Default)]
pub struct Completion {
    pub id: u64,
    pub status: u16,
    /// The response's headers as its protocol delivered them: parsed by the script only if read.
    pub head: Head,
    pub body: Vec<u8>,
    pub elapsed_us: u64,
    pub error: Option<String>,
    /// The URL of the final response.
    pub url: String,
    /// The stats name the request was (or is to be) recorded under.
    pub name: String,
    /// What it answers: the request as sent, and where the script's verdict on it is recorded (its
    /// `Verdict::of`); None for an MQTT operation.
    pub request: Option<(Checked, Endpoint)>,
    /// A streamed request's head (`ScriptEngine::submit_stream`): its body is read from the stream of
    /// the same id; the flag is the script's hold on it (`StreamHandle`).
    pub stream: Option<Arc<AtomicBool>>,
    /// The redirects it followed, first first (None for most requests; boxed, 8 bytes: a completion
    /// is moved a few times a request).
    #[allow(clippy::box_collection)]
    pub history: Option<Box<Vec<Redirect>>>,
}

/// A redirect a script's request followed, as requests keeps it in `response.history`: the response
/// that redirected (its status, headers and body as they came) and the hop it answered (its method, URL,
/// headers and body, after the redirect rules: `request::follow`).
#[derive(Debug)]
pub struct Redirect {
    pub status: u16,
    pub head: Head,
    pub body: Vec<u8>,
    pub request: Checked,
}

/// The script's hold on a streamed response's body: dropped (its response gone), the engine closes
/// the stream at its watchdog's next scan, as if the script had closed it.
#[derive(Debug)]
pub struct StreamHandle(pub Arc<AtomicBool>);

impl Drop for StreamHandle {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Relaxed);
    }
}

/// What `ScriptEngine::stream_take` found of a streamed body.
#[derive(Debug, PartialEq, Eq)]
pub enum Taken {
    /// Bytes read (at most what was asked).
    Bytes(Vec<u8>),
    /// Nothing yet: the script waits (`stream_wait`).
    Nothing,
    /// The body ended as its framing says, all of it taken.
    End,
    /// The body was cut (the failure's message; a timeout's is "request timed out"), all it had
    /// before taken.
    Cut(String),
}

/// Where a request's statistics are kept: handed out with its completion, so that the script's
/// verdict (`catch_response`) is recorded without looking its method and name up again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint(EndpointId);

/// A response's headers as they came, handed to the script without another encoding.
#[derive(Debug)]
pub enum Head {
    /// HTTP/1.1's header lines, raw ("Name: value\r\n" each), as received after the status line.
    Raw(Vec<u8>),
    /// HTTP/2's header list as the h2 crate decoded it: names lowercased, values as sent.
    Pairs(Vec<(String, String)>),
}

impl Default for Head {
    fn default() -> Self {
        Head::Raw(Vec::new())
    }
}

impl Head {
    /// Each header as (lower-case name, value): HTTP/1.1's lines read as Latin-1, as http.client
    /// reads them, name and value trimmed of white space; repeated headers stay apart, in order.
    pub fn pairs(&self) -> Vec<(String, String)> {
        match self {
            Head::Pairs(pairs) => pairs.clone(),
            Head::Raw(raw) => raw
                .split(|&b| b == b'\n')
                .filter_map(|line| {
                    let colon = line.iter().position(|&b| b == b':')?;
                    Some((latin1_trimmed(&line[..colon]).to_lowercase(), latin1_trimmed(&line[colon + 1..])))
                })
                .collect(),
        }
    }
}

impl Head {
    /// The value of header `name` (lower case) as `pairs` gives it, repeated ones joined with ", "
    /// (requests' way); None if absent. Reads the lines without making the others' pairs: a script's
    /// `response.text` asks only for the Content-Type.
    pub fn value(&self, name: &str) -> Option<String> {
        let mut found: Option<String> = None;
        let mut add = |value: String| match &mut found {
            Some(joined) => {
                joined.push_str(", ");
                joined.push_str(&value);
            }
            None => found = Some(value),
        };
        match self {
            Head::Pairs(pairs) => pairs.iter().filter(|(n, _)| n == name).for_each(|(_, v)| add(v.clone())),
            Head::Raw(raw) => {
                for line in raw.split(|&b| b == b'\n') {
                    let Some(colon) = line.iter().position(|&b| b == b':') else { continue };
                    if key_is(&line[..colon], name) {
                        add(latin1_trimmed(&line[colon + 1..]));
                    }
                }
            }
        }
        found
    }

    /// The encoding requests decodes a response's text with (`requests.utils.get_encoding_from_headers`,
    /// which Locust's FastResponse uses too): the Content-Type's charset parameter, quotes stripped (the
    /// last one given), else ISO-8859-1 for a text type, UTF-8 for JSON, else None (requests then
    /// guesses from the bytes; squall reads UTF-8).
    pub fn encoding(&self) -> Option<Cow<'_, str>> {
        let owned = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        match self {
            Head::Raw(raw) => {
                // One Content-Type line, the common case: read in place, nothing joined nor copied when
                // it is ASCII (cachegrind, bench/locustfiles/shop.py: the value joined, trimmed and
                // searched cost 1,400 instructions a request; two lines or more are joined, as requests'
                // headers join them).
                let mut lines = raw.split(|&b| b == b'\n').filter_map(|line| {
                    let colon = line.iter().position(|&b| b == b':')?;
                    key_is(&line[..colon], "content-type").then(|| &line[colon + 1..])
                });
                let value = lines.next()?;
                match (lines.next(), value.is_ascii()) {
                    (None, true) => encoding_of(python_stripped(std::str::from_utf8(value).ok()?)),
                    (None, false) => encoding_of(&latin1_trimmed(value)).map(owned),
                    (Some(_), _) => encoding_of(&self.value("content-type")?).map(owned),
                }
            }
            Head::Pairs(_) => encoding_of(&self.value("content-type")?).map(owned),
        }
    }
}

/// Whether a header line's name, `raw` (Latin-1), is `name` (lower case) as `Head::pairs` reads it:
/// trimmed and lowercased. Compared as bytes for a lower-case ASCII `name` (a Latin-1 letter past ASCII
/// never lowercases into ASCII): the text made of each line's name, twice, cost a `response.text` 24
/// allocations for nginx's 8 header lines.
fn key_is(raw: &[u8], name: &str) -> bool {
    if !name.bytes().all(|b| b.is_ascii() && !b.is_ascii_uppercase()) {
        return latin1_trimmed(raw).to_lowercase() == name;
    }
    let space = |b: &u8| python_space(*b as char); // (a Latin-1 byte is its character)
    let start = raw.iter().position(|b| !space(b)).unwrap_or(raw.len());
    let end = raw.iter().rposition(|b| !space(b)).map_or(start, |i| i + 1);
    raw[start..end].eq_ignore_ascii_case(name.as_bytes())
}

/// `str.strip()`: Python's white space trimmed from both ends.
fn python_stripped(text: &str) -> &str {
    text.trim_matches(python_space)
}

/// `requests.utils.get_encoding_from_headers` of a Content-Type (`Head::encoding`): its parameters split
/// on ";" and each on its first "=", key and value stripped of quotes and spaces, as its
/// `_parse_content_type_header` (requests 2.32: a parameter without "=" is left out); the last charset
/// given wins.
fn encoding_of(content_type: &str) -> Option<Cow<'_, str>> {
    let mut tokens = content_type.split(';');
    let media = python_stripped(tokens.next().unwrap_or(""));
    fn quoted(s: &str) -> &str {
        s.trim_matches(|c| matches!(c, '"' | '\'' | ' '))
    }
    let mut charset = None;
    for param in tokens.map(python_stripped) {
        if let Some(i) = param.find('=') {
            // (Python's lower() of a key is "charset" only for these ASCII letters in any case)
            if quoted(&param[..i]).eq_ignore_ascii_case("charset") {
                charset = Some(quoted(&param[i + 1..]));
            }
        }
    }
    // (a window scan: `str::contains` sets up a two-way searcher, 150 instructions, for each)
    let has = |part: &[u8]| media.as_bytes().windows(part.len()).any(|w| w == part);
    match charset {
        Some(value) => Some(Cow::Borrowed(value.trim_matches(|c| c == '"' || c == '\''))),
        None if has(b"text") => Some(Cow::Borrowed("ISO-8859-1")),
        None if has(b"application/json") => Some(Cow::Borrowed("utf-8")),
        None => None,
    }
}

/// Python's white space (`str.isspace`): Rust's and 0x1c-0x1f.
fn python_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

/// Whether `url` is whole: it starts with http:// or https://, in any case (as Locust tells them).
pub fn is_whole_url(url: &str) -> bool {
    url.get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://"))
        || url.get(..7).is_some_and(|s| s.eq_ignore_ascii_case("http://"))
}

/// A call's URL on its user's base, as Locust joins them (its `_build_url`): as text, so "/" on
/// https://docs.example/en/latest/ is /en/latest//, and "graphql" on http://host:8080 is
/// http://host:8080graphql, which fails to parse (the script's error, as requests' InvalidURL), not a
/// quiet /graphql. A whole URL stays as it is. The one join of a script's URLs: the engine's shapes,
/// the sessions' calls (`CallBase`) and what Python shows of a URL (`squall._engine.joined_url`).
pub fn joined_url(base: &str, url: &str) -> String {
    if is_whole_url(url) {
        url.to_string()
    } else {
        [base, url].concat() // (format!'s machinery cost 40 ns more a call)
    }
}

/// A call's headers on its session's, as requests merges them (squall.requests_compat.merge_headers):
/// a name already there (whatever its case) is replaced where it stands, or removed by a None value;
/// a new one goes after. Merged here, a call's `headers=` no longer makes a dict and a list in Python
/// for each call (about 1.5 µs).
pub fn merged_headers(session: &[(String, String)], call: Vec<(String, Option<String>)>) -> Vec<(String, String)> {
    let mut merged = session.to_vec();
    for (name, value) in call {
        let same = |(other, _): &(String, String)| {
            if name.is_ascii() && other.is_ascii() {
                other.eq_ignore_ascii_case(&name)
            } else {
                other.to_lowercase() == name.to_lowercase()
            }
        };
        match (merged.iter().position(same), value) {
            (Some(at), Some(value)) => merged[at] = (name, value),
            (Some(at), None) => {
                merged.remove(at);
            }
            (None, Some(value)) => merged.push((name, value)),
            (None, None) => {}
        }
    }
    merged
}

/// `bytes.decode("latin-1").strip()`: every byte a character, white space as Python's `str.isspace`
/// sees it in that range (Rust's `char::is_whitespace` less 0x1c-0x1f) trimmed from both ends.
fn latin1_trimmed(bytes: &[u8]) -> String {
    let text: String = bytes.iter().map(|&b| b as char).collect();
    python_stripped(&text).to_string()
}

/// A verdict the script reports: for `catch_response`, or a custom request event.
pub struct Verdict {
    pub of: Judged,
    pub elapsed_us: u64,
    pub status: u16,
    pub body_bytes: u64,
    pub failure: Option<String>,
}

/// What a verdict is on: a request the engine sent (`Completion::request`'s endpoint), or a
/// method and name the script gives (a request event it fires itself).
pub enum Judged {
    Request(Endpoint),
    Named { method: String, name: String },
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

/// The tick of native users that think (`native`): while their requests are in flight `poll` wakes
/// once a millisecond, at its start, reads every response that came meanwhile (each timed by the
/// kernel's receive stamp, net/stamped.rs) and sends what their timers made due, instead of waking
/// for each response; as bench/floor.c does with think time. Users whose timers fall in the same
/// millisecond (tokio's timers have that granularity) share the wake-up. The requests of driven users
/// (native.rs) the tick sends and reads itself, their tasks asleep.
///
/// Why: 1,000 native users `between(0.1, 0.2)` woke 0.65 times a request in epoll (perf stat), the
/// floor 0.15 (one wake a millisecond for about 6.7 requests).
const TICK: Duration = Duration::from_millis(1);

/// How long after `poll` last deferred reads every read still asks for its receive time.
const ASKING: Duration = Duration::from_millis(100);

/// How often the watchdog looks for requests past their timeout. Like bench's watchdog, one scan of
/// the requests in flight (at most one a user, usually) instead of a timer per request.
const WATCH_TICK: Duration = Duration::from_millis(10);

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
        let timer = {
            let _in = rt.enter();
            AsyncTimer::new()?
        };
        let engine = Rc::new(Engine::new(options, core));
        Ok(ScriptEngine {
            rt,
            local: tokio::task::LocalSet::new(),
            engine,
            timer,
            last_roll: Cell::new(Instant::now()),
        })
    }

    /// Resets the live totals and the run's own, as Locust's reset does: empty now, counting from the
    /// start of the next second, which it returns (`Recorder::reset_totals`).
    pub fn reset_totals(&self) -> u64 {
        let from = self.engine.core.timeline.reset_totals();
        self.engine.recorder.borrow_mut().reset_totals(from);
        from
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
    pub fn submit(&self, user: u64, r: ScriptRequest) -> Result<u64, String> {
        self.start(user, r, false)
    }

    /// Starts a streamed request (`ScriptRequest::stream`): its head's completion comes from `poll`
    /// under the returned id, its body from `stream_take` under the same id. A completion without a
    /// response (a failure) is a streamed one's too, its body ended.
    pub fn submit_stream(&self, user: u64, r: ScriptRequest) -> Result<u64, String> {
        let streamed = r.stream.is_some();
        self.start(user, r, streamed)
    }

    fn start(&self, user: u64, r: ScriptRequest, streamed: bool) -> Result<u64, String> {
        let engine = &self.engine;
        let (known, name, endpoint) = engine.resolve(&r)?;
        let id = self.next_id();
        // The first request of an open-model iteration counts from the iteration's intended start.
        let begin = engine.open.borrow_mut().as_mut().and_then(|o| o.begins.remove(&user)).unwrap_or_else(Instant::now);
        let (deadline, url, shape) = (Instant::now() + r.timeout, known.url.clone(), r.shape.clone());
        let started = Started { engine: engine.clone(), id, user, r, known, begin, endpoint, name: name.clone() };
        let task = if streamed {
            self.local.spawn_local(run_stream(started))
        } else {
            self.local.spawn_local(run_request(started))
        };
        let running = Running { user, task: task.abort_handle(), begin, deadline, endpoint, name, url, shape };
        engine.running.borrow_mut().insert(id, running);
        if streamed {
            engine.stream_heads.borrow_mut().insert(id);
        }
        Ok(id)
    }

    /// Up to `max` bytes of streamed response `stream`'s body that have come (all of them: None), its
    /// end once all is taken, or Nothing yet. A stream the script has read to its end is closed
    /// (`stream_close`). An unknown stream (closed) has ended.
    pub fn stream_take(&self, stream: u64, max: Option<usize>) -> Taken {
        let Some(s) = self.engine.streams.borrow().get(&stream).cloned() else { return Taken::End };
        let mut data = s.data.borrow_mut();
        if !data.is_empty() {
            let n = max.map_or(data.len(), |m| m.clamp(1, data.len()));
            return Taken::Bytes(data.split_to(n).to_vec());
        }
        drop(data);
        let taken = match &*s.end.borrow() {
            None => return Taken::Nothing,
            Some(Ok(())) => Taken::End,
            Some(Err(f)) => Taken::Cut(f.message()),
        };
        self.stream_close(stream);
        taken
    }

    /// An operation whose completion comes when streamed response `stream` has more bytes or has
    /// ended (at once if it has either now).
    pub fn stream_wait(&self, stream: u64) -> u64 {
        let id = self.next_id();
        let engine = &self.engine;
        match engine.streams.borrow().get(&stream) {
            Some(s) if s.data.borrow().is_empty() && s.end.borrow().is_none() => s.waiting.set(Some(id)),
            _ => engine.push(Completion { id, ..Completion::default() }),
        }
        id
    }

    /// The script is done with streamed response `stream`: its connection goes back to the user's
    /// pool if its body ended as its framing says, else it closes (a body still being read is left
    /// unread, the stream neither completed nor cut).
    pub fn stream_close(&self, stream: u64) {
        let engine = &self.engine;
        let Some(s) = engine.streams.borrow_mut().remove(&stream) else { return };
        if let Some(task) = s.task.borrow_mut().take() {
            task.abort();
        }
        let conn = s.conn.borrow_mut().take();
        if let Some(conn) = conn {
            engine.pool.borrow_mut().give_back(s.key, conn);
        }
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
                loop {
                    if !self.reads_in_ticks() {
                        native::hand_back_all(engine); // their responses wake their tasks from now on
                    }
                    if self.ticks() {
                        if self.tick(wake_at()) {
                            break;
                        }
                        continue;
                    }
                    let mut ticking = false;
                    self.run(async {
                        while engine.nothing_ready() {
                            // (The watchdog's next scan, while native users' requests are in flight,
                            // and the next native users' think times to end: `think`.)
                            native::wake_thinkers(engine, Instant::now(), self.reads_in_ticks());
                            let thinkers = engine.thinkers.borrow().next_due();
                            let wake = [self.watch_due(), thinkers].into_iter().flatten().fold(wake_at(), Instant::min);
                            tokio::select! {
                                _ = engine.ready.notified() => {}
                                _ = engine.native_sent.notified(), if engine.native_thinking.get() > 0 => {
                                    if self.ticks() {
                                        ticking = true;
                                        break;
                                    }
                                }
                                _ = self.timer.sleep_until(wake) => {
                                    if wake == deadline || arrival_due() {
                                        break;
                                    }
                                    self.watch(Instant::now());
                                }
                            }
                        }
                    });
                    if !ticking {
                        break;
                    }
                }
            }
        }
        let now = Instant::now();
        self.watch(now);
        if let Some(open) = engine.open.borrow_mut().as_mut() {
            let OpenModel { arrivals, due, .. } = open;
            arrivals.take_due(now.saturating_duration_since(start).as_secs_f64(), due);
        }
        if now.duration_since(self.last_roll.get()) > Duration::from_millis(100) {
            self.last_roll.set(now);
            engine.recorder.borrow_mut().roll(now);
            engine.core.timeline.set_connections(crate::net::open_connections());
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
        if engine.options.http2
            || !engine.mqtt.borrow().is_empty()
            || !engine.native.borrow().is_empty()
            || !engine.streams.borrow().is_empty()
        {
            // (native users read as responses come, or wait in ticks of their own: `TICK`; a streamed
            // body's events are timed when their read returns, which a deferral would delay)
            return false;
        }
        self.turn(1); // sends what the script has just submitted: no send waits
        let all_await = engine.awaiting.get() == engine.running.borrow().len();
        if engine.nothing_ready() && engine.could_defer.get() < WANT_STAMPS {
            engine.could_defer.set(engine.could_defer.get() + 1);
        }
        if engine.nothing_ready() && all_await && engine.stamping.get() {
            self.sleep_then_read(wake);
            return true;
        }
        !engine.nothing_ready()
    }

    /// Whether `poll` waits in ticks (`TICK`): native users that all think have requests in flight,
    /// and nothing else waits for a response (the script's requests, MQTT: they wake the script as
    /// they come), over HTTP/1.1 on connections the kernel stamps.
    fn ticks(&self) -> bool {
        self.engine.native_in_flight.get() > 0 && self.reads_in_ticks()
    }

    /// Whether `poll` waits in ticks once native users' requests are in flight (`ticks`): then the
    /// engine's passes may send and read driven users' requests (native.rs `send_now`).
    fn reads_in_ticks(&self) -> bool {
        let engine = &self.engine;
        engine.native_thinking.get() == engine.native.borrow().len()
            && engine.running.borrow().is_empty()
            && engine.streams.borrow().is_empty()
            && engine.mqtt.borrow().is_empty()
            && !engine.options.http2
            && engine.stamping.get()
    }

    /// One tick: sleeps to the next millisecond's start (or `wake`, if sooner) without waking for
    /// responses, then reads every response that came, each timed by its receive stamp, and sends
    /// what the users' timers made due. True when `poll` is done: something is ready for the script,
    /// or `wake` has come.
    fn tick(&self, wake: Instant) -> bool {
        let engine = &self.engine;
        let since = Instant::now().saturating_duration_since(engine.core.start);
        let next = engine.core.start + TICK * (since.as_nanos() / TICK.as_nanos() + 1) as u32;
        self.sleep_then_read(next.min(wake));
        let now = Instant::now();
        self.watch(now);
        !engine.nothing_ready() || now >= wake
    }

    /// The watchdog, if its time has come (`WATCH_TICK`): requests past their timeout end.
    fn watch(&self, now: Instant) {
        if now.duration_since(self.engine.last_watch.get()) >= WATCH_TICK {
            self.engine.last_watch.set(now);
            self.time_out(now);
        }
    }

    /// When `poll` must wake for the watchdog, whatever else it waits for: native users' requests
    /// have no timer of their own (`Engine::native_deadlines`).
    fn watch_due(&self) -> Option<Instant> {
        (self.engine.native_in_flight.get() > 0).then(|| self.engine.last_watch.get() + WATCH_TICK)
    }

    /// Sleeps until `until` without waking for responses, then reads every response that came
    /// meanwhile, each timed by its receive stamp, and runs the users it resumed (what `DEFER` and
    /// `TICK` both do).
    fn sleep_then_read(&self, until: Instant) {
        let now = Instant::now();
        if until > now {
            std::thread::sleep(until - now);
        }
        self.engine.deferred_at.set(Some(now));
        stamp_reads(true);
        self.turn(2);
    }

    /// `yields` turns of the runtime without waiting: each runs the tasks that are ready, then polls
    /// the sockets once.
    fn turn(&self, yields: usize) {
        self.run(async {
            native::wake_thinkers(&self.engine, Instant::now(), self.reads_in_ticks());
            for i in 0..yields {
                tokio::task::yield_now().await;
                if i == 0 {
                    native::receive_now(&self.engine); // (the reactor has just looked at the sockets)
                }
            }
        });
    }

    /// Runs `f` on the engine's runtime, its tasks with it, until `f` completes. Then the set of tasks
    /// is left holding a waker that does nothing instead of the runtime's: a task the script starts
    /// (`start`) or wakes (an MQTT or WebSocket operation it queues) between two polls would otherwise
    /// wake the runtime through its eventfd, a write a poll (strace of shop.py, 10 users: 5,734 writes
    /// for 20,195 requests), and the next poll's epoll return at once for it. Nothing is lost: every
    /// `run` begins by running the tasks that are ready, and while it runs the runtime's waker is the
    /// one registered (tokio's `RunUntil` registers it each time it is polled).
    fn run<F: std::future::Future>(&self, f: F) -> F::Output {
        let output = self.rt.block_on(self.local.run_until(f));
        let mut idle = std::pin::pin!(self.local.run_until(std::future::ready(())));
        let _ = std::future::Future::poll(idle.as_mut(), &mut std::task::Context::from_waker(std::task::Waker::noop()));
        output
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
    /// as a failure, "request timed out", with its time so far. A native user's request ends at its
    /// task's next poll, which it wakes (the task records the failure: `native`).
    fn time_out(&self, now: Instant) {
        let engine = &self.engine;
        let late: Vec<u64> = engine
            .native_deadlines
            .borrow_mut()
            .iter_mut()
            .filter(|(deadline, _)| deadline.is_some_and(|d| d <= now))
            .map(|(deadline, user)| {
                *deadline = None;
                *user
            })
            .collect();
        for user in late {
            let Some(n) = engine.native.borrow().get(&user).cloned() else { continue };
            n.expired.set(true);
            let waker = n.waker.borrow().clone();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
        if !engine.streams.borrow().is_empty() {
            let dropped: Vec<u64> = engine
                .streams
                .borrow()
                .iter()
                .filter(|(_, s)| !s.alive.load(std::sync::atomic::Ordering::Relaxed))
                .map(|(id, _)| *id)
                .collect();
            for id in dropped {
                self.stream_close(id); // the script's response is gone: as if it had closed it
            }
        }
        let expired: Vec<u64> =
            engine.running.borrow().iter().filter(|(_, r)| r.deadline <= now).map(|(id, _)| *id).collect();
        for id in expired {
            let Some(r) = engine.running.borrow_mut().remove(&id) else { continue };
            r.task.abort();
            let elapsed = now.saturating_duration_since(r.begin);
            let failure = engine.timed_out(now, r.endpoint, elapsed, r.shape.record);
            engine.cut_stream(id, r.endpoint, &failure);
            let error = Some(failure.message());
            let (url, name) = (r.url.to_string(), r.name.to_string());
            let streamed = engine.stream_heads.borrow_mut().remove(&id);
            engine.push(Completion {
                id,
                elapsed_us: elapsed.as_micros() as u64,
                error,
                url,
                name,
                request: Some((r.shape, Endpoint(r.endpoint))),
                stream: streamed.then(|| Arc::new(AtomicBool::new(true))),
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

    /// A WebSocket operation of a scripted user (`websocket`), run on that user's connection in order;
    /// its completion comes from `poll` under the returned id.
    pub fn submit_ws(&self, user: u64, op: impl FnOnce(u64) -> crate::ws::WsOp) -> u64 {
        let id = self.next_id();
        let engine = &self.engine;
        let tx = engine
            .ws
            .borrow_mut()
            .entry(user)
            .or_insert_with(|| {
                let (tx, rx) = mpsc::unbounded_channel();
                self.local.spawn_local(websocket::socket_task(engine.clone(), websocket::Mode::User, rx));
                tx
            })
            .clone();
        let _ = tx.send(op(id));
        id
    }

    /// Opens a websocket-client connection (squall.contrib.websocket_client) with `connect` (a
    /// `WsOp::Connect`): returns the connection's id, for `ws_client`, and the connect's. `owner`: the
    /// user whose stop closes it (None: it lives until the engine ends). Its operations run side by side.
    pub fn ws_client_open(&self, owner: Option<u64>, connect: impl FnOnce(u64) -> WsOp) -> (u64, u64) {
        let socket = self.next_id();
        let (tx, rx) = mpsc::unbounded_channel();
        self.local.spawn_local(websocket::socket_task(self.engine.clone(), websocket::Mode::Client, rx));
        let id = self.next_id();
        let _ = tx.send(connect(id));
        self.engine.ws_clients.borrow_mut().insert(socket, (owner, tx));
        (socket, id)
    }

    /// An operation on websocket-client connection `socket`; its completion comes from `poll` under the
    /// returned id (at once, failed as closed, for a connection the engine no longer has).
    pub fn ws_client(&self, socket: u64, op: impl FnOnce(u64) -> WsOp) -> u64 {
        let id = self.next_id();
        let tx = self.engine.ws_clients.borrow().get(&socket).map(|(_, tx)| tx.clone());
        let op = op(id);
        let sent = tx.is_some_and(|tx| tx.send(op).is_ok());
        if !sent {
            let f = Failure::new(FailureKind::Closed, websocket::CLOSED_BY_SCRIPT);
            let c = websocket::failed(id, Duration::ZERO, &f);
            self.engine.push(c);
        }
        id
    }

    /// Forgets websocket-client connection `socket` (its Python object is gone): it says goodbye, or
    /// drops what is still in progress, as a stopped user's does.
    pub fn ws_client_forget(&self, socket: u64) {
        self.engine.ws_clients.borrow_mut().remove(&socket);
    }

    /// Runs `user`'s tasks natively (`native`): returns the plan's id, whose completion comes when the
    /// plan ends (`end_plans`). A plan whose URL cannot be requested, or that the engine cannot run,
    /// is an error at once, nothing sent.
    pub fn run_plan(&self, user: u64, plan: &native::Plan) -> Result<u64, String> {
        if self.engine.open.borrow().is_some() {
            return Err("the open model starts each iteration itself: no native plan".into());
        }
        let op = self.next_id();
        let (state, run) = native::start(&self.engine, user, op, plan)?;
        *state.task.borrow_mut() = Some(self.local.spawn_local(run).abort_handle());
        self.engine.add_native(user, state);
        Ok(op)
    }

    /// Ends every native plan at its next wait (at once for a user waiting now): the test is ending
    /// and users finish their task (`--stop-timeout`), or the script must see each request again.
    pub fn end_plans(&self) {
        let engine = &self.engine;
        let users: Vec<(u64, Rc<engine::NativeUser>)> =
            engine.native.borrow().iter().map(|(u, n)| (*u, n.clone())).collect();
        for (user, n) in users {
            if n.waiting.get() {
                n.abort();
                native::end(engine, user, &n);
            } else {
                n.ending.set(true);
            }
        }
    }

    /// Records the script's own verdict on a request (`catch_response`, or a custom event).
    pub fn record(&self, v: Verdict) {
        let engine = &self.engine;
        let id = match v.of {
            Judged::Request(Endpoint(id)) => id,
            Judged::Named { method, name } => engine.endpoint(&method, &name),
        };
        let failure = v.failure.map(|m| Failure::new(FailureKind::Script, m));
        let outcome = Outcome::Judged { status: v.status, body_bytes: v.body_bytes, failure };
        engine.recorder.borrow_mut().record(Instant::now(), id, Duration::from_micros(v.elapsed_us), &outcome);
    }

    /// The user stopped: its connections close and its requests in flight end unmeasured (as in
    /// Locust), counted as abandoned.
    pub fn close_user(&self, user: u64) {
        let engine = &self.engine;
        engine.running.borrow_mut().retain(|id, r| {
            let theirs = r.user == user;
            if theirs {
                r.task.abort();
                engine.cancelled.set(engine.cancelled.get() + 1);
                engine.stream_heads.borrow_mut().remove(id);
                engine.streaming.borrow_mut().remove(id);
            }
            !theirs
        });
        engine.streams.borrow_mut().retain(|_, s| {
            let theirs = s.user == user;
            if theirs {
                if let Some(task) = s.task.borrow_mut().take() {
                    task.abort();
                }
            }
            !theirs
        });
        if let Some(n) = engine.remove_native(user) {
            n.abort();
            n.conn.borrow_mut().take(); // (its slot in the ring of think times may keep it a while)
            if n.in_flight.get() {
                engine.cancelled.set(engine.cancelled.get() + 1);
            }
        }
        engine.pool.borrow_mut().users.remove(&user);
        engine.jars.borrow_mut().remove(&user);
        engine.mqtt.borrow_mut().remove(&user); // its task says goodbye and ends
        engine.ws.borrow_mut().remove(&user); // the same
        engine.ws_clients.borrow_mut().retain(|_, (owner, _)| *owner != Some(user));
        // the same
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

    /// The users are done: what they recorded is published now, the second in progress included,
    /// instead of once that second has ended (up to a second later). Something recorded later in the
    /// same second counts in the live totals and the result, not in the stream (`stream`'s late counts).
    pub fn publish_now(&self) {
        let now = Instant::now();
        let mut recorder = self.engine.recorder.borrow_mut();
        recorder.roll(now);
        recorder.flush();
        let second = now.saturating_duration_since(self.engine.core.start).as_secs();
        self.engine.core.timeline.publish_until(second + 1);
    }

    /// Ends the run: what is still in flight is abandoned (counted, not measured), the connections
    /// close, and the result is built.
    pub fn finish(self, reason: StopReason, url: String) -> RunResult {
        let ScriptEngine { rt, local, engine, timer, .. } = self;
        let core = engine.core.clone();
        core.set_reason(reason);
        let duration = core.elapsed();
        let native_in_flight = engine.native.borrow().values().filter(|n| n.in_flight.get()).count() as u64;
        let abandoned = engine.cancelled.get() + engine.running.borrow().len() as u64 + native_in_flight;
        for (_, r) in engine.running.borrow_mut().drain() {
            r.task.abort();
        }
        engine.streams.borrow_mut().clear(); // (their tasks end with the local set)
        for (_, n) in engine.native.borrow_mut().drain() {
            n.abort();
        }
        engine.native_thinking.set(0);
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
            reset: recorder.reset_at.map(|at| at.saturating_duration_since(core.start)),
            totals: std::mem::take(&mut recorder.totals),
            timings: std::mem::take(&mut recorder.timings),
            streams: std::mem::take(&mut recorder.streams),
            errors: std::mem::take(&mut recorder.errors),
            connect: recorder.connect.clone(),
            seconds: core.timeline.all(),
            abandoned,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{is_whole_url, joined_url, Head};

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn raw_head_reads_as_python_reads_latin1_lines() {
        // What `bytes.decode("latin-1")`, split on CRLF, partitioned at the first ':' and stripped gives.
        let raw = b"Content-Type:  text/html; charset=utf-8 \r\nSet-Cookie: a=1; Path=/\r\n\
                    set-cookie: b=2\r\nX-Caf\xe9: cr\xe8me\xa0\r\nX-Sep: \x1cv:w\x1f\r\nnot a header\r\n";
        let expected = pairs(&[
            ("content-type", "text/html; charset=utf-8"),
            ("set-cookie", "a=1; Path=/"),
            ("set-cookie", "b=2"),
            ("x-caf\u{e9}", "cr\u{e8}me"),
            ("x-sep", "v:w"),
        ]);
        assert_eq!(Head::Raw(raw.to_vec()).pairs(), expected);
    }

    #[test]
    fn a_url_is_joined_to_its_base_as_text_as_locust_joins_them() {
        assert_eq!(joined_url("http://h:8080", "/a?b=1"), "http://h:8080/a?b=1");
        assert_eq!(joined_url("https://d.example/en/latest/", "/"), "https://d.example/en/latest//");
        assert_eq!(joined_url("http://h:8080", "graphql"), "http://h:8080graphql");
        assert_eq!(joined_url("http://h", "HTTPS://other/x"), "HTTPS://other/x");
        // not whole: a scheme elsewhere in it (a redirect target in the query) is text like any other
        assert_eq!(joined_url("http://h", "/r?to=http://x"), "http://h/r?to=http://x");
        assert_eq!(joined_url("", "/x"), "/x");
        assert!(!is_whole_url("ftp://h/") && !is_whole_url("http:/h") && is_whole_url("Http://h"));
    }

    #[test]
    fn a_value_is_its_pairs_joined_as_requests_joins_them() {
        let raw = b"Content-Type:  text/html; charset=utf-8 \r\nSet-Cookie: a=1; Path=/\r\n\
                    set-cookie: b=2\r\nX-Caf\xe9: cr\xe8me\xa0\r\nnot a header\r\n";
        for head in [Head::Raw(raw.to_vec()), Head::Pairs(Head::Raw(raw.to_vec()).pairs())] {
            assert_eq!(head.value("content-type").as_deref(), Some("text/html; charset=utf-8"));
            assert_eq!(head.value("set-cookie").as_deref(), Some("a=1; Path=/, b=2"));
            assert_eq!(head.value("x-caf\u{e9}").as_deref(), Some("cr\u{e8}me"));
            assert_eq!(head.value("content-length"), None);
            assert_eq!(head.encoding().as_deref(), Some("utf-8"));
        }
        // What requests 2.32's get_encoding_from_headers answers for each (run on each, by hand).
        let encodings = [
            ("text/plain; charset= latin-1 ;x=y", Some("latin-1")),
            ("text/plain", Some("ISO-8859-1")),
            ("text/html; charset=\"UTF-8\"", Some("UTF-8")),
            ("application/json", Some("utf-8")),
            ("application/json; charset=ascii", Some("ascii")),
            ("application/octet-stream", None),
            ("Text/Plain", None),
            ("text/plain; charset=a; charset=b", Some("b")),
            ("text/plain; CHARSET='x'", Some("x")),
            ("application/problem+json", None),
            ("a; charset=b, c; charset=d", Some("d")),
            (" text/csv ;charset = \"utf-16\" ", Some("utf-16")),
            ("text/plain; charset", Some("ISO-8859-1")),
            ("text/plain; charset=a; charset", Some("a")),
            ("text/plain; charset=", Some("")),
            ("text/plain;charset=''", Some("")),
        ];
        for (content_type, expected) in encodings {
            let head = Head::Pairs(pairs(&[("content-type", content_type)]));
            assert_eq!(head.encoding().as_deref(), expected, "{content_type}");
            let raw = Head::Raw(format!("Content-Type: {content_type}\r\n").into_bytes());
            assert_eq!(raw.encoding().as_deref(), expected, "{content_type}");
        }
        assert_eq!(Head::default().encoding(), None);
    }

    /// The one-line reading of the encoding gives what the joined values give, on heads of one, two
    /// and no Content-Type lines, odd spacing, other headers and Latin-1 bytes.
    #[test]
    fn encoding_read_in_place_is_the_joined_values() {
        let joined = |head: &Head| super::encoding_of(&head.value("content-type")?).map(|c| c.into_owned());
        let lines: [&[u8]; 9] = [
            b"Content-Type: application/json\r\n",
            b"content-type:text/html;charset=UTF-8\r\n",
            b"CONTENT-TYPE :  text/plain; charset= latin-1 ;x=y \r\n",
            b"Content-Type: text/plain; charset=\xa0caf\xe9\x85\r\n",
            b"Content-Type: text/plain; charset=\r\n",
            b"X-Charset: charset=no\r\n",
            b"Server: nginx\r\n",
            b"Content-Type: a; charset=b, c; charset=d\r\n",
            b"Content-Typo: text/plain; charset=x\r\n",
        ];
        for a in 0..lines.len() {
            for b in 0..lines.len() {
                let raw = [lines[a], lines[b]].concat();
                let head = Head::Raw(raw.clone());
                assert_eq!(head.encoding().map(|c| c.into_owned()), joined(&head), "{}", String::from_utf8_lossy(&raw));
                let one = Head::Raw(lines[a].to_vec());
                assert_eq!(
                    one.encoding().map(|c| c.into_owned()),
                    joined(&one),
                    "{}",
                    String::from_utf8_lossy(lines[a])
                );
            }
        }
    }

    proptest::proptest! {
        /// `value`'s names compared as bytes (`key_is`) find what `pairs` reads, over header lines of
        /// random case, Latin-1 letters and Python's white space around them.
        #[test]
        fn a_value_is_found_as_pairs_reads_it(
            lines in proptest::collection::vec(
                (proptest::sample::select(vec!["Content-Type", "CONTENT-TYPE", "content-typ", "X-Caf\u{e9}", "x-caf\u{c9}", "Set-Cookie"]),
                 proptest::sample::select(vec!["", " ", "\t", "\u{a0}", "\u{85}", "\u{1c}", "\u{b}"]),
                 proptest::sample::select(vec!["", " ", "\u{a0}", "\u{1f}"]),
                 "[a-z0-9=;/ ]{0,12}"),
                0..6),
            name in proptest::sample::select(vec!["content-type", "x-caf\u{e9}", "set-cookie", "Content-Type", "content-typ"]),
        ) {
            let mut raw = Vec::new();
            for (key, before, after, value) in &lines {
                let line = format!("{before}{key}{after}: {value}\r\n");
                raw.extend(line.chars().map(|c| c as u32 as u8)); // (Latin-1 on the wire)
            }
            let head = Head::Raw(raw);
            let found: Vec<String> = head.pairs().into_iter().filter(|(n, _)| n == name).map(|(_, v)| v).collect();
            let expected = (!found.is_empty()).then(|| found.join(", "));
            proptest::prop_assert_eq!(head.value(name), expected);
        }
    }

    #[test]
    fn a_calls_headers_merge_as_requests_merges_them() {
        // requests' merge (squall.requests_compat.merge_headers): a dict of the session's by lower-case
        // name, each of the call's set in place or popped, new names after.
        let session = pairs(&[("Accept", "*/*"), ("Authorization", "Bearer a"), ("X-Old", "1")]);
        let call = vec![
            ("authorization".to_string(), Some("Bearer b".to_string())),
            ("X-New".to_string(), Some("n".to_string())),
            ("x-old".to_string(), None),
            ("X-Gone".to_string(), None),
            ("x-new".to_string(), Some("m".to_string())),
        ];
        let expected = pairs(&[("Accept", "*/*"), ("authorization", "Bearer b"), ("x-new", "m")]);
        assert_eq!(super::merged_headers(&session, call), expected);
        assert_eq!(super::merged_headers(&session, Vec::new()), session);
    }

    #[test]
    fn http2_pairs_are_handed_over_as_decoded() {
        let list = pairs(&[("content-type", "text/plain"), ("set-cookie", "a=1"), ("set-cookie", "b=2")]);
        assert_eq!(Head::Pairs(list.clone()).pairs(), list);
        assert!(Head::default().pairs().is_empty());
    }
}

/// A plain `GET /` to a closed port, checked: the request the engine's task-size guards build their
/// tasks of (this module's `task_size`, native.rs's).
#[cfg(test)]
fn plain_get() -> Checked {
    let shape = RequestShape {
        method: "GET".into(),
        base: "http://127.0.0.1:9".into(),
        url: "/".into(),
        name: None,
        headers: Headers::default(),
        cookies: Vec::new(),
        body: Vec::new(),
        timeout: Duration::from_secs(60),
        record: true,
        max_redirects: Some(30),
        insecure: false,
    };
    shape.checked().unwrap()
}

#[cfg(test)]
mod task_size {
    /// A script's request task is its future, moved into the task's memory at each spawn and loaded
    /// and stored at each of its polls (two a request): 1,976 bytes (rustc -Zprint-type-sizes: the
    /// exchange's state, the connection's 192 and the watched exchange's 704 within it); HTTP/2's and
    /// a streamed request's exchanges are boxed where they run (`exchange`) for that reason. The
    /// bound keeps one that grows back from going unnoticed.
    #[test]
    fn a_scripted_requests_task_stays_small() {
        let engine =
            std::rc::Rc::new(super::engine::Engine::new(super::ScriptOptions::default(), crate::run::RunCore::new()));
        let r = super::ScriptRequest { shape: super::plain_get(), read: true, stamp: false, stream: None };
        let (known, name, endpoint) = engine.resolve(&r).unwrap();
        let begin = std::time::Instant::now();
        let started =
            super::request::Started { engine: engine.clone(), id: 1, user: 1, r, known, begin, endpoint, name };
        let size = std::mem::size_of_val(&super::request::run_request(started));
        assert!(size <= 2048, "a scripted request's task grew to {size} bytes");
    }
}
