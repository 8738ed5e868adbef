//! A scripted request's path: its exchange on the user's connection to its origin (HTTP/1.1 or
//! HTTP/2), the redirects it follows, and its timing and record once it completes.

use crate::http::h1::{H1Conn, Keep, NoStreams, PendingBody, StreamWatch, Timing};
use crate::http::h2::{build_request, BodyStream, H2Conn};
use crate::http::request::needs_length;
use crate::http::response::{too_large_body, Response, MAX_KEPT_BODY};
use crate::net::Stamp;
use crate::stats::{EndpointId, Failure, FailureKind, Outcome, Phases, Received, StreamClock, Tokens};
use bytes::Bytes;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cookies::Jar;
use super::engine::{Engine, H1Bytes, KnownUrl, Streamed, MAX_HOST};
use super::pools::Pooled;
use super::{Checked, Completion, Endpoint, Head, Headers, Redirect, RequestShape, ScriptRequest};

/// A script's request as `ScriptEngine::start` hands it to its task (`run_request`, `run_stream`): the
/// request, its id and user, its URL and stats name resolved, when it began.
pub(super) struct Started {
    pub(super) engine: Rc<Engine>,
    pub(super) id: u64,
    pub(super) user: u64,
    pub(super) r: ScriptRequest,
    pub(super) known: KnownUrl,
    pub(super) begin: Instant,
    pub(super) endpoint: EndpointId,
    pub(super) name: Rc<str>,
}

pub(super) async fn run_request(started: Started) {
    let Started { engine, id, user, r, known, begin, endpoint, name } = started;
    let (result, elapsed) = measure(&engine, Sender::script(user), &r, &known, (id, begin), endpoint).await;
    let of = Completed { id, r: &r, known: &known, name: &name, endpoint };
    let completion = match result {
        Ok((mut resp, redirected)) => {
            Completion { body: resp.body.take().unwrap_or_default(), ..of.answered(&mut resp, elapsed, redirected) }
        }
        Err(failure) => of.failed(elapsed, &failure),
    };
    engine.running.borrow_mut().remove(&id);
    engine.push(completion);
}

/// Where a request's redirects led: the URL of its last response, and the redirects on the way (kept
/// by the script's requests only). Boxed where a request holds it: its task's state stays as small.
#[derive(Default)]
pub(super) struct Redirected {
    url: String,
    history: Vec<Redirect>,
}

/// A response's headers as the script gets them: HTTP/1.1's raw lines, or HTTP/2's pairs.
fn head_of(resp: &mut Response) -> Head {
    match (resp.raw_head.take(), resp.headers.take()) {
        (None, Some(pairs)) => Head::Pairs(pairs),
        (raw, _) => Head::Raw(raw.unwrap_or_default()),
    }
}

/// What a request's completion says of the request besides its outcome.
struct Completed<'a> {
    id: u64,
    r: &'a ScriptRequest,
    known: &'a KnownUrl,
    name: &'a str,
    endpoint: EndpointId,
}

impl Completed<'_> {
    /// Answered by `resp` (its head taken; its body left to the caller), at `redirected` if a redirect
    /// led elsewhere.
    fn answered(&self, resp: &mut Response, elapsed: Duration, redirected: Option<Box<Redirected>>) -> Completion {
        let (url, history) = match redirected.map(|r| *r) {
            Some(r) => (r.url, (!r.history.is_empty()).then(|| Box::new(r.history))),
            None => (self.known.url.as_str().to_owned(), None),
        };
        Completion {
            id: self.id,
            status: resp.status,
            head: head_of(resp),
            elapsed_us: elapsed.as_micros() as u64,
            url,
            history,
            name: self.name.to_string(),
            request: Some((self.r.shape.clone(), Endpoint(self.endpoint))),
            ..Completion::default()
        }
    }

    /// Failed without an answer.
    fn failed(&self, elapsed: Duration, failure: &Failure) -> Completion {
        Completion {
            id: self.id,
            elapsed_us: elapsed.as_micros() as u64,
            error: Some(failure.message()),
            url: self.known.url.as_str().to_owned(),
            name: self.name.to_string(),
            request: Some((self.r.shape.clone(), Endpoint(self.endpoint))),
            ..Completion::default()
        }
    }
}

/// Records a request that failed at `now` (unless the script judges it), and returns its latency.
fn record_failure(
    engine: &Engine,
    r: &ScriptRequest,
    begin: Instant,
    endpoint: EndpointId,
    failure: &Failure,
    now: Instant,
) -> Duration {
    let elapsed = now.saturating_duration_since(begin);
    if r.record {
        engine.recorder.borrow_mut().record(now, endpoint, elapsed, &Outcome::Failed(failure.clone()));
    }
    elapsed
}

/// Who sends a request, and what a native user brings to it: the request's bytes made beforehand
/// (`engine::Steps`), else they are made as it is sent, and the connection it keeps to the request's
/// origin (`NativeUser::conn`), else the pool's. Both serve the first hop only (a redirect's next
/// hops are made as they come).
#[derive(Clone, Copy)]
pub(super) struct Sender<'a> {
    pub user: u64,
    pub bytes: Option<&'a H1Bytes>,
    pub held: Option<&'a RefCell<Option<H1Conn>>>,
}

impl Sender<'_> {
    /// A script's request: nothing made beforehand, the connection from the user's pool.
    pub fn script(user: u64) -> Sender<'static> {
        Sender { user, bytes: None, held: None }
    }
}

/// Sends the request (following its redirects), times it from `begin` and records it under
/// `endpoint` unless the script judges it (`record` false). Returns the final response and, if a
/// redirect led elsewhere, its URL; or the failure; with the latency recorded. `id` is the request's
/// key in `Engine::streaming`: its entry in `running`, whose timeout the watchdog keeps, or a native
/// user's `native_stream_key`, whose task ends it at its timeout.
pub(super) async fn measure(
    engine: &Engine,
    sender: Sender<'_>,
    r: &ScriptRequest,
    known: &KnownUrl,
    (id, begin): (u64, Instant),
    endpoint: EndpointId,
) -> (Result<(Response, Option<Box<Redirected>>), Failure>, Duration) {
    let clock = StreamClock::new(begin);
    let counts = r.record;
    let mut streams = ScriptStreams {
        engine,
        request: id,
        endpoint,
        clock,
        opened: false,
        held: None,
        counted: Received::default(),
        counts,
    };
    let result = follow(engine, sender, r, known, &mut streams).await;
    let now = Instant::now();
    if streams.opened {
        if id != 0 {
            engine.streaming.borrow_mut().remove(&id);
        }
        let failure = result.as_ref().err();
        engine.recorder.borrow_mut().stream_ended(now, endpoint, &mut streams.clock, failure);
    }
    match result {
        Ok((mut resp, url, deferred, phases, timing)) => {
            streams.less_counted(&mut resp);
            let elapsed = record_response(engine, r, begin, endpoint, &resp, (deferred, phases, timing), now);
            (Ok((resp, url)), elapsed)
        }
        Err(failure) => {
            let elapsed = record_failure(engine, r, begin, endpoint, &failure, now);
            (Err(failure), elapsed)
        }
    }
}

/// A scripted request's `StreamWatch`: an event stream's events timed into the recorder under the
/// request's endpoint (`stats::streams`), as bench's are; the body still reaches the script whole. A
/// stream the request's timeout ends is cut ("request timed out"), as bench's and a `stream=True`
/// one's are: the watchdog, which ends the request, finds it in `Engine::streaming`.
pub(super) struct ScriptStreams<'a> {
    engine: &'a Engine,
    /// The request's key in `Engine::streaming` (`measure`'s `id`; 0: a `stream=True` request's,
    /// whose body's reads keep their own timeout).
    request: u64,
    endpoint: EndpointId,
    clock: StreamClock,
    opened: bool,
    /// A streamed request's body, left on its connection by its last hop (`exchange_stream`).
    held: Option<Box<Held>>,
    /// An event stream's bytes counted received as they came (`read`, `framing`), not counted again with
    /// its response (`less_counted`). Only for a request the engine records itself (`counts`): a caught
    /// one's bytes are its script's verdict's.
    counted: Received,
    counts: bool,
}

impl ScriptStreams<'_> {
    /// `body` and `wire` bytes received now (an event stream's: `StreamWatch::read`, `framing`).
    fn count(&mut self, body: u64, wire: u64) {
        if self.counts {
            self.counted.count(&self.engine.recorder, self.endpoint, body, wire);
        }
    }

    /// `resp` less what its event stream counted received as it came.
    fn less_counted(&self, resp: &mut Response) {
        (resp.body_bytes, resp.wire_bytes) = self.counted.less(resp.body_bytes, resp.wire_bytes);
    }
}

/// A streamed response's body still to read: over HTTP/1.1 on its connection (back to the pool it
/// came from once read), over HTTP/2 on its stream (the connection shared, staying in the pool).
pub(super) enum Held {
    H1 { conn: H1Conn, pending: PendingBody, key: (u64, usize, bool) },
    H2(BodyStream),
}

/// A script's streamed request (`stream=True`, `ScriptRequest::stream`): sent and its redirects followed
/// as any, then completed at its head, recorded then as Locust records it (its latency to the head, its
/// size the Content-Length or 0), while this task goes on reading the body into a `Streamed` the
/// script takes it from as it comes, each read's events timed as bench's are. The stream is counted
/// completed or cut at the body's end; its connection goes back to the pool when the script closes
/// it after a clean end. `read_timeout` bounds each wait for the body's next bytes.
pub(super) async fn run_stream(started: Started) {
    let Started { engine, id, user, r, known, begin, endpoint, name } = started;
    let read_timeout = r.stream.unwrap_or(r.timeout);
    let mut streams = ScriptStreams {
        engine: &engine,
        request: 0,
        endpoint,
        clock: StreamClock::new(begin),
        opened: false,
        held: None,
        counted: Received::default(),
        counts: r.record,
    };
    let result = follow(&engine, Sender::script(user), &r, &known, &mut streams).await;
    let now = Instant::now();
    let (mut resp, redirected, deferred, phases, timing) = match result {
        Ok(done) => done,
        Err(failure) => {
            if streams.opened {
                engine.recorder.borrow_mut().stream_ended(now, endpoint, &mut streams.clock, Some(&failure));
            }
            let elapsed = record_failure(&engine, &r, begin, endpoint, &failure, now);
            engine.running.borrow_mut().remove(&id);
            engine.stream_heads.borrow_mut().remove(&id);
            let of = Completed { id, r: &r, known: &known, name: &name, endpoint };
            // (its body: none, ended)
            engine.push(Completion { stream: Some(Arc::new(AtomicBool::new(true))), ..of.failed(elapsed, &failure) });
            return;
        }
    };
    let held = streams.held.take();
    // Its head, if an event stream's, counted as it came; and as Locust records a streamed request, its
    // size is the Content-Length, else 0.
    streams.less_counted(&mut resp);
    resp.body_bytes = match (held.as_deref(), &resp.headers) {
        (Some(Held::H1 { pending, .. }), _) => pending.length(),
        (_, Some(pairs)) => pairs.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse().ok()),
        (_, None) => None,
    }
    .unwrap_or(0);
    let elapsed = record_response(&engine, &r, begin, endpoint, &resp, (deferred, phases, timing), now);
    let alive = Arc::new(AtomicBool::new(true));
    let key = match held.as_deref() {
        Some(Held::H1 { key, .. }) => *key,
        _ => (user, 0, false),
    };
    // A body that came whole with its head (a redirect not followed over HTTP/2): taken as streamed.
    let whole = resp.body.take().filter(|b| !b.is_empty());
    let state = Rc::new(Streamed {
        user,
        data: RefCell::new(whole.map_or_else(bytes::BytesMut::new, |b| bytes::BytesMut::from(&b[..]))),
        end: RefCell::new(held.is_none().then_some(Ok(()))),
        waiting: Cell::new(None),
        last_read: Cell::new(Instant::now()),
        task: RefCell::new(None),
        conn: RefCell::new(None),
        key,
        alive: alive.clone(),
    });
    if let Some(task) = engine.running.borrow_mut().remove(&id) {
        *state.task.borrow_mut() = Some(task.task);
    }
    engine.stream_heads.borrow_mut().remove(&id);
    engine.streams.borrow_mut().insert(id, state.clone());
    let of = Completed { id, r: &r, known: &known, name: &name, endpoint };
    engine.push(Completion { stream: Some(alive), ..of.answered(&mut resp, elapsed, redirected) });
    let Some(held) = held else { return };
    let opened = streams.opened;
    let mut sink = BodySink { streams, state: &state };
    let mut kept_conn = None;
    let read = {
        let read = async {
            match *held {
                Held::H1 { mut conn, pending, key: _ } => {
                    let r = conn.read_body(pending, &mut sink).await;
                    kept_conn = Some(conn);
                    r
                }
                Held::H2(body) => body.read(&mut sink).await,
            }
        };
        tokio::pin!(read);
        loop {
            let due = state.last_read.get() + read_timeout;
            tokio::select! {
                r = &mut read => break r,
                _ = tokio::time::sleep_until(due.into()) => {
                    if state.last_read.get() + read_timeout <= Instant::now() {
                        break Err(Failure::new(FailureKind::Timeout, ""));
                    }
                }
            }
        }
    };
    if opened {
        let failure = read.as_ref().err();
        engine.recorder.borrow_mut().stream_ended(Instant::now(), endpoint, &mut sink.streams.clock, failure);
    }
    if let (true, false, Some(conn)) = (read.is_ok(), resp.close, kept_conn) {
        *state.conn.borrow_mut() = Some(conn);
    }
    *state.end.borrow_mut() = Some(read.map(|_| ()));
    state.task.borrow_mut().take();
    state.wake(&engine);
}

/// A streamed body's reads: its events timed (`ScriptStreams`), its bytes kept for the script, who is
/// woken if it waits for them.
struct BodySink<'a> {
    streams: ScriptStreams<'a>,
    state: &'a Streamed,
}

impl StreamWatch for BodySink<'_> {
    const WATCHING: bool = true;
    const TAKES_BODY: bool = true;

    fn opened(&mut self, at: Instant) {
        self.streams.opened(at);
    }

    fn progress(&mut self, at: Instant, events: u64, tokens: Tokens) {
        self.streams.progress(at, events, tokens);
    }

    /// (Its body's bytes count received as they come, in `body`: on the wire only, its size being its
    /// Content-Length as Locust records it; its framing likewise.)
    fn framing(&mut self, n: u64) {
        self.streams.framing(n);
    }

    fn body(&mut self, bytes: &[u8]) -> Result<(), Failure> {
        self.streams.count(0, bytes.len() as u64);
        let mut data = self.state.data.borrow_mut();
        if data.len() + bytes.len() > MAX_KEPT_BODY {
            return Err(too_large_body());
        }
        data.extend_from_slice(bytes);
        drop(data);
        self.state.last_read.set(Instant::now());
        self.state.wake(self.streams.engine);
        Ok(())
    }
}

impl StreamWatch for ScriptStreams<'_> {
    const WATCHING: bool = true;

    fn opened(&mut self, _: Instant) {
        self.opened = true;
        if self.request != 0 {
            self.engine.streaming.borrow_mut().insert(self.request);
        }
        self.engine.recorder.borrow_mut().stream(self.endpoint).streams += 1;
    }

    fn progress(&mut self, at: Instant, events: u64, tokens: Tokens) {
        self.engine.recorder.borrow_mut().events(at, self.endpoint, events, tokens, &mut self.clock);
    }

    fn read(&mut self, n: u64) {
        self.count(n, n);
    }

    fn framing(&mut self, n: u64) {
        self.count(0, n);
    }
}

/// Records `resp`, the response to `r` sent at `begin` (unless the script judges it: `record` false),
/// with what its exchanges saw (`follow`'s: how long earlier hops' responses waited to be read, the
/// phases of the connects and earlier hops, the last exchange's timing); returns its latency. Timed to
/// when the kernel received the response's end (its read may have been deferred: `DEFER`, `TICK`),
/// less what earlier hops of a redirect waited to be read.
pub(super) fn record_response(
    engine: &Engine,
    r: &ScriptRequest,
    begin: Instant,
    endpoint: EndpointId,
    resp: &Response,
    (deferred, mut phases, timing): (Duration, Phases, Timing),
    now: Instant,
) -> Duration {
    let end = match resp.received {
        Stamp::At(t) if t >= begin && t <= now => t,
        _ => now,
    };
    let elapsed = end.saturating_duration_since(begin).saturating_sub(deferred);
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
    elapsed
}

/// Whether the engine may go on timing reads by the kernel's receive stamps, after a response read
/// with or without one (`Engine::stamping`).
pub(super) fn note_stamp(engine: &Engine, received: Stamp) {
    match received {
        Stamp::At(_) => engine.stamping.set(true),
        Stamp::Missing => engine.stamping.set(false),
        Stamp::Unasked => {}
    }
}

/// The request, and the redirects it leads to when asked to follow them. Returns the final response,
/// its URL if a redirect led elsewhere, how long the responses of earlier hops waited to be read after
/// they arrived (the generator's own delay, not the server's), the phases of the connects and earlier
/// hops (summed), and what the last exchange saw of its own (HTTP/1.1). Cookies set along the way go
/// into the user's jar (and so with the following hops); an `Authorization` header is not sent on to
/// another host, nor from https to http.
pub(super) async fn follow(
    engine: &Engine,
    sender: Sender<'_>,
    r: &ScriptRequest,
    first: &KnownUrl,
    streams: &mut ScriptStreams<'_>,
) -> Result<(Response, Option<Box<Redirected>>, Duration, Phases, Timing), Failure> {
    let user = sender.user;
    let mut redirected: Option<Box<Redirected>> = None;
    let (mut url, mut origin) = (first.url.clone(), first.origin);
    let (mut method, mut body) = (r.method.as_str(), std::borrow::Cow::Borrowed(&r.body[..]));
    let mut headers = std::borrow::Cow::Borrowed(&r.headers[..]);
    let (mut hops, mut deferred, mut phases) = (0, Duration::ZERO, Phases::default());
    loop {
        let host = url.host_str().unwrap_or_default();
        let cookie = cookie_header(engine, user, r, &headers, host);
        let by = if hops == 0 { sender } else { Sender::script(user) };
        let hop = Hop { method, url: &url, headers: &headers, cookie: cookie.as_deref(), body: &body };
        let (mut resp, opened, timing) = exchange(engine, by, r, origin, hop, streams).await?;
        phases.add(&opened);
        if !resp.set_cookies.is_empty() {
            let mut jars = engine.jars.borrow_mut();
            let jar = jars.entry(user).or_default();
            for c in &resp.set_cookies {
                jar.set_from_header(host, c);
            }
        }
        let redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308);
        let (Some(location), true, Some(max)) = (resp.location.clone(), redirect, r.max_redirects) else {
            if let Some(r) = redirected.as_mut() {
                r.url = url.as_str().to_owned();
            }
            return Ok((resp, redirected, deferred, phases, timing));
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
        if r.read {
            // The hop it answered: the request itself first, then each hop as the rules below made it.
            let request = if hops == 0 {
                r.shape.clone()
            } else {
                Checked(Arc::new(RequestShape {
                    method: method.to_owned(),
                    url: url.as_str().to_owned(),
                    headers: Headers(headers.to_vec().into()),
                    body: body.to_vec(),
                    base: r.base.clone(),
                    name: r.name.clone(),
                    cookies: r.cookies.clone(),
                    timeout: r.timeout,
                    record: r.record,
                    max_redirects: r.max_redirects,
                    insecure: r.insecure,
                }))
            };
            let body = resp.body.take().unwrap_or_default();
            let hop = Redirect { status: resp.status, head: head_of(&mut resp), body, request };
            redirected.get_or_insert_with(Default::default).history.push(hop);
        } else if redirected.is_none() {
            redirected = Some(Box::default()); // (the final URL all the same)
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
        (url, origin) = (known.url, known.origin);
        // As python-requests does (`rebuild_method`, `resolve_redirects`): a 302 or 303 becomes a GET
        // (a HEAD stays one), a 301 after a POST too; after any of them the body and the headers that
        // described it go (geventhttpclient's UserAgent drops them alike), a 307 or 308 keeping both.
        if (matches!(resp.status, 302 | 303) && method != "HEAD") || (resp.status == 301 && method == "POST") {
            method = "GET";
        }
        if matches!(resp.status, 301..=303) {
            body = std::borrow::Cow::Borrowed(&[]);
            let described = |k: &str| {
                ["content-type", "content-length", "transfer-encoding", "content-encoding"]
                    .iter()
                    .any(|h| k.eq_ignore_ascii_case(h))
            };
            if headers.iter().any(|(k, _)| described(k)) {
                headers.to_mut().retain(|(k, _)| !described(k));
            }
        }
        hops += 1;
    }
}

/// The Cookie header of a hop to `host` with `headers`: the user's cookies for the host and the
/// request's own, unless the script sets the header itself (its own wins, as in requests).
pub(super) fn cookie_header(
    engine: &Engine,
    user: u64,
    r: &ScriptRequest,
    headers: &[(String, String)],
    host: &str,
) -> Option<String> {
    if headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("cookie")) {
        return None;
    }
    match engine.jars.borrow().get(&user) {
        Some(jar) => jar.header_for(host, &r.cookies),
        None => Jar::default().header_for(host, &r.cookies),
    }
}

/// One hop of a request as it goes on the wire: a redirect's next hop may change its method, URL,
/// headers and body, and the user's cookies for its host.
#[derive(Clone, Copy)]
pub(super) struct Hop<'a> {
    pub method: &'a str,
    pub url: &'a url::Url,
    pub headers: &'a [(String, String)],
    pub cookie: Option<&'a str>,
    pub body: &'a [u8],
}

pub(super) async fn exchange(
    engine: &Engine,
    sender: Sender<'_>,
    r: &ScriptRequest,
    origin: usize,
    hop: Hop<'_>,
    streams: &mut ScriptStreams<'_>,
) -> Result<(Response, Phases, Timing), Failure> {
    let Sender { user, bytes: prepared, held } = sender;
    let Hop { method, url, headers, cookie, body } = hop;
    let insecure = r.insecure;
    let key = (user, origin, insecure);
    if engine.options.http2 {
        // Boxed: HTTP/2's exchange (its connect and TLS with it) would otherwise make every request's
        // state as large, HTTP/1.1's too: see `exchange_h2`.
        let follows = r.max_redirects.is_some();
        return Box::pin(exchange_h2(engine, key, hop, r.stream.is_some(), follows, streams)).await;
    }
    if r.stream.is_some() {
        let follows = r.max_redirects.is_some();
        return Box::pin(exchange_stream(engine, key, hop, follows, streams)).await;
        // (boxed: as HTTP/2's)
    }
    let made;
    let bytes: &[u8] = match (prepared, cookie) {
        (Some(p), None) => &p.whole,
        (Some(p), Some(_)) => {
            made = engine.h1_bytes_from(&p.head, method, cookie, body);
            &made
        }
        (None, _) => {
            made = engine.h1_bytes(method, url, headers, cookie, body);
            &made
        }
    };
    // A native user's own connection, else one from its pool (where its script's requests left one:
    // on_start's, say).
    let kept = held.and_then(|kept| kept.borrow_mut().take());
    let mut conn = kept.or_else(|| idle_or_reserved(engine, key));
    // A native user's request (nobody reads its response) never counts as awaiting the script's
    // deferral (`DEFER`); its connection stamps when its user thinks (its reads wait for `TICK`).
    let deferrable = if r.read { engine.wants_stamps() } else { r.stamp };
    if let Some(c) = conn.as_mut() {
        if deferrable {
            c.stamp();
        }
        if !r.read {
            c.awaiting = None;
        }
    }
    // The connection opened for this request, if one was: its connect and TLS phases.
    let opened = Cell::new(Phases::default());
    // Boxed: a connect's future (DNS, TCP, a TLS handshake) is kilobytes, and unboxed it would be part
    // of every request's state, a native user's task included, though it runs once a connection
    // (`exchange_h2` says what that cost). Here, not in `exchange_keepalive`: `squall bench`'s
    // connections open together, and a box each there raised the peak RSS of 10,000 of them from
    // 142.7 to 153.5 MB (twice each way) with no CPU to gain, its tasks polled hot.
    let open = async || {
        Box::pin(async {
            let connector = engine.connector(origin, insecure).await?;
            let t0 = Instant::now();
            let (stream, o) = connector.connect_timed(user as usize).await?;
            engine.recorder.borrow_mut().record_connect(t0.elapsed());
            opened.set(Phases { connect: Some(o.tcp), tls: o.tls, ..Phases::default() });
            let mut conn = H1Conn::new(stream);
            if r.read {
                conn.awaiting = Some(engine.awaiting.clone());
            }
            if deferrable {
                conn.stamp();
            }
            Ok(conn)
        })
        .await
    };
    let mut timing = Timing::default();
    let keep = if r.read { Keep::All } else { Keep::Cookies };
    let head = method == "HEAD";
    let resp =
        crate::http::h1::exchange_keepalive_watched(&mut conn, open, bytes, head, keep, true, &mut timing, streams)
            .await?;
    note_stamp(engine, resp.received);
    match (conn, held) {
        (Some(c), Some(kept)) => *kept.borrow_mut() = Some(c),
        (Some(c), None) => engine.pool.borrow_mut().give_back(key, c),
        (None, _) => {}
    }
    Ok((resp, opened.get(), timing))
}

/// An idle HTTP/1.1 connection of the user's to the origin, if one; else none, the origin's pool made
/// now (the least recently used origin's evicted, its connections closed) before a connection opens,
/// as urllib3's PoolManager makes a host's pool before connecting: a user going through an eleventh
/// origin holds 10 connections at most, not 11 until its request's end (issue 26's bound, seen broken
/// on a loaded host where the eleventh hop took over 0.1 s).
fn idle_or_reserved(engine: &Engine, key: (u64, usize, bool)) -> Option<H1Conn> {
    match engine.pool.borrow_mut().get_or_insert(key, || Pooled::H1(Vec::new())) {
        Pooled::H1(idle) => idle.pop(),
        Pooled::H2(_) => None,
    }
}

/// A request's exchange over HTTP/2 on the user's connection to its origin (`key`).
///
/// Its own function, awaited boxed: a future is as large as the largest state of its awaits, and
/// HTTP/2's (the h2 exchange, the connect and TLS handshake under it) made `exchange`, and so every
/// native user's task, several kilobytes, each request's path moving and touching more memory
/// (perf: the task's poll loads at offsets above 4 KB). A box per HTTP/2 request is one allocation.
async fn exchange_h2(
    engine: &Engine,
    key: (u64, usize, bool),
    hop: Hop<'_>,
    stream: bool,
    follows: bool,
    streams: &mut ScriptStreams<'_>,
) -> Result<(Response, Phases, Timing), Failure> {
    let (user, origin, insecure) = key;
    let Hop { method, url, headers, cookie, body } = hop;
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
    let body = Bytes::copy_from_slice(body);
    let connecting = Cell::new(false);
    let (mut resp, rest) =
        conn.exchange_body(&connector, &req, &body, true, on_connect, &connecting, streams, stream).await?;
    // Set-Cookie and Location picked out; the list goes to the script as it is (`Head::Pairs`).
    for (k, v) in resp.headers.iter().flatten() {
        if k == "set-cookie" {
            resp.set_cookies.push(v.clone());
        } else if k == "location" {
            resp.location = Some(v.clone());
        }
    }
    // A streamed request (`run_stream`) returns at the head, its body held, unless it is a redirect
    // `follow` will follow (then read and dropped, as over HTTP/1.1).
    if let Some(rest) = rest {
        let redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308) && resp.location.is_some();
        if redirect && follows {
            rest.read(&mut NoStreams).await?;
        } else {
            streams.held = Some(Box::new(Held::H2(rest)));
        }
    }
    Ok((resp, Phases::default(), Timing::default())) // (HTTP/2 is not broken down: stats::timing)
}

/// A streamed request's exchange over HTTP/1.1 (`run_stream`): as `exchange`'s, but only the response's
/// head is read; its body is left on the connection, held in `streams` (`Held`), unless it is a
/// redirect `follow` will follow (then read whole, and the connection goes back to the pool).
async fn exchange_stream(
    engine: &Engine,
    key: (u64, usize, bool),
    hop: Hop<'_>,
    follows: bool,
    streams: &mut ScriptStreams<'_>,
) -> Result<(Response, Phases, Timing), Failure> {
    let (user, origin, insecure) = key;
    let Hop { method, url, headers, cookie, body } = hop;
    let bytes = engine.h1_bytes(method, url, headers, cookie, body);
    let mut conn = idle_or_reserved(engine, key);
    let mut opened = Phases::default();
    for _attempt in 0..2 {
        let c = match conn.as_mut() {
            Some(c) => c,
            None => {
                let connector = engine.connector(origin, insecure).await?;
                let t0 = Instant::now();
                let (stream, o) = connector.connect_timed(user as usize).await?;
                engine.recorder.borrow_mut().record_connect(t0.elapsed());
                opened = Phases { connect: Some(o.tcp), tls: o.tls, ..Phases::default() };
                conn.insert(H1Conn::new(stream))
            }
        };
        match c.exchange_head(&bytes, method == "HEAD", Keep::All, streams).await {
            Ok((resp, pending)) => {
                let timing = c.timing();
                let mut c = conn.take().expect("the connection just used");
                let redirect = matches!(resp.status, 301 | 302 | 303 | 307 | 308) && resp.location.is_some();
                if redirect && follows {
                    c.read_body(pending, &mut NoStreams).await?;
                    if !resp.close {
                        engine.pool.borrow_mut().give_back(key, c);
                    }
                } else {
                    streams.held = Some(Box::new(Held::H1 { conn: c, pending, key }));
                }
                return Ok((resp, opened, timing));
            }
            Err(e) => {
                conn = None;
                if !e.retryable {
                    return Err(e.failure);
                }
            }
        }
    }
    Err(Failure::new(FailureKind::Closed, "before responding"))
}
