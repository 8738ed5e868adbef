//! WebSocket for scripted users (`WebSocketUser` in a locustfile): each user's connection is a task on
//! the script's engine thread, running the user's operations in order, and a reader task beside it that
//! takes every message as it comes (so pings are answered and messages kept while the user thinks).
//! The engine times each operation and records it in the run's statistics with Locust's socket
//! vocabulary: `WS` the connect (its handshake), `WSC` an exchange (a message and its reply, as
//! Locust's Socket.IO `call`), `WSS` a send (until written), `WSR` a receive (from the call until the
//! message was there: 0 if it was waiting). One crossing from Python per operation.
//!
//! A message the user has not asked for waits in the user's inbox, at most `MAX_INBOX` of them (the
//! oldest dropped past it, each drop a failure of `WSR`): a server that pushes faster than the script
//! reads must not grow the engine without end. A connection that broke opens again at the next
//! operation that needs it (its connect counted again), as a browser's page would reconnect.

use super::engine::Engine;
use super::Completion;
use crate::mqtt::script::Sink;
use crate::net::{self, Connector};
use crate::stats::{Failure, FailureKind, Outcome};
use crate::ws::{self, Handshake, Incoming, Reader, Writer, WsOp};
use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, Notify};

/// Messages a user's inbox keeps unread.
pub const MAX_INBOX: usize = 1_000;

/// What the reader hands the user's task: messages in order of arrival (numbered), or the end.
#[derive(Default)]
struct Inbox {
    messages: RefCell<VecDeque<(u64, Incoming, Instant)>>,
    /// Messages that arrived so far on this connection (the next one's number).
    arrived: Cell<u64>,
    /// Why the connection ended, once it did.
    ended: RefCell<Option<Failure>>,
    changed: Notify,
    dropped: Cell<u64>,
}

struct Open {
    writer: Rc<Writer>,
    inbox: Rc<Inbox>,
    reader: tokio::task::JoinHandle<()>,
    /// The default statistics' name: the URL's path.
    path: Rc<str>,
}

/// Where the user connected last (to open again after a break).
struct Target {
    url: String,
    headers: Vec<(String, String)>,
    name: Option<String>,
    timeout: Duration,
}

struct User {
    engine: Rc<Engine>,
    open: Option<Open>,
    target: Option<Target>,
}

/// One user's WebSocket: its operations in order of arrival until the user stops (its channel closes).
/// An operation in progress when the user stops is cancelled unrecorded, as a stopped user's requests
/// are, and the connection dropped (a frame may be half written); else the user says goodbye.
pub(super) async fn user_task(engine: Rc<Engine>, mut rx: mpsc::UnboundedReceiver<WsOp>) {
    let mut user = User { engine, open: None, target: None };
    let mut queued = VecDeque::new();
    loop {
        let op = match queued.pop_front() {
            Some(op) => op,
            None => match rx.recv().await {
                Some(op) => op,
                None => break,
            },
        };
        let stopped = {
            let run = user.run(op);
            tokio::pin!(run);
            loop {
                tokio::select! {
                    _ = &mut run => break false,
                    next = rx.recv() => match next {
                        Some(op) => queued.push_back(op), // (a user waits for each operation: rare)
                        None => break true,
                    },
                }
            }
        };
        if stopped {
            let engine = user.engine.clone();
            engine.cancelled.set(engine.cancelled.get() + 1);
            user.drop_open();
            return;
        }
    }
    user.close().await;
}

impl User {
    async fn run(&mut self, op: WsOp) {
        match op {
            WsOp::Connect { id, url, headers, name, timeout } => {
                self.close().await;
                self.target = Some(Target { url, headers, name, timeout });
                let t0 = Instant::now();
                let result = self.connect().await;
                self.done(id, t0.elapsed(), result.err(), None);
            }
            WsOp::Send { id, payload, binary, name } => {
                let t0 = Instant::now();
                let bytes = payload.len() as u64;
                let result = match self.ensure_open().await {
                    Ok(open) => open.writer.send(payload, binary).await.map(|_| open.path.clone()),
                    Err(f) => Err(f),
                };
                let took = t0.elapsed();
                let name = self.name_of(name);
                self.record("WSS", &name, took, bytes, result.as_ref().err());
                if result.is_err() {
                    self.drop_open();
                }
                self.done(id, took, result.err(), None);
            }
            WsOp::Exchange { id, payload, binary, name, timeout } => {
                let t0 = Instant::now();
                let result = async {
                    let open = self.ensure_open().await?;
                    let after = open.inbox.arrived.get();
                    open.writer.send(payload, binary).await?;
                    let inbox = open.inbox.clone();
                    wait_for(&inbox, after, t0 + timeout).await
                }
                .await;
                self.finish_wait("WSC", id, name, t0, result);
            }
            WsOp::Receive { id, name, timeout } => {
                let t0 = Instant::now();
                let result = async {
                    let open = self.ensure_open().await?;
                    let inbox = open.inbox.clone();
                    wait_for(&inbox, 0, t0 + timeout).await
                }
                .await;
                self.finish_wait("WSR", id, name, t0, result);
            }
            WsOp::Close { id } => {
                self.close().await;
                self.target = None;
                self.done(id, Duration::ZERO, None, None);
            }
        }
    }

    /// Records a waited operation (exchange, receive) and completes it with the message.
    fn finish_wait(
        &mut self,
        method: &str,
        id: u64,
        name: Option<String>,
        t0: Instant,
        result: Result<Incoming, Failure>,
    ) {
        let took = t0.elapsed();
        let name = self.name_of(name);
        let bytes = result.as_ref().map_or(0, |m| m.data.len() as u64);
        self.record(method, &name, took, bytes, result.as_ref().err());
        if matches!(&result, Err(f) if f.kind != FailureKind::Timeout) {
            self.drop_open(); // broken (a timeout leaves the connection as it was: a receive may poll)
        }
        match result {
            Ok(m) => self.done(id, took, None, Some(m)),
            Err(f) => self.done(id, took, Some(f), None),
        }
    }

    fn name_of(&self, name: Option<String>) -> String {
        name.or_else(|| self.open.as_ref().map(|o| o.path.to_string()))
            .or_else(|| self.target.as_ref().map(|t| path_of(&t.url)))
            .unwrap_or_else(|| "(not connected)".into())
    }

    fn record(&self, method: &str, name: &str, took: Duration, bytes: u64, failure: Option<&Failure>) {
        let outcome = match failure {
            None => Outcome::Judged { status: 0, body_bytes: bytes, failure: None },
            Some(f) => Outcome::Failed(f.clone()),
        };
        self.engine.record(method, name, took, &outcome);
    }

    /// The operation's completion for the script: the message (status 1 text, 2 binary: its opcode).
    fn done(&self, id: u64, took: Duration, error: Option<Failure>, message: Option<Incoming>) {
        let (status, body) = match message {
            Some(m) => (if m.binary { 2 } else { 1 }, m.data),
            None => (0, Vec::new()),
        };
        self.engine.push(Completion {
            id,
            status,
            body,
            elapsed_us: took.as_micros() as u64,
            error: error.map(|f| f.message()),
            ..Completion::default()
        });
    }

    async fn ensure_open(&mut self) -> Result<&Open, Failure> {
        if self.open.as_ref().is_some_and(|o| o.inbox.ended.borrow().is_some() && o.inbox.messages.borrow().is_empty())
        {
            self.drop_open();
        }
        if self.open.is_none() {
            if self.target.is_none() {
                return Err(Failure::new(FailureKind::WebSocket, "not connected: call connect() first"));
            }
            self.connect().await?;
        }
        Ok(self.open.as_ref().expect("opened above"))
    }

    /// Opens the connection to the target, timed and recorded as `WS` (its name).
    async fn connect(&mut self) -> Result<(), Failure> {
        let target = self.target.as_ref().expect("a target to connect to");
        let t0 = Instant::now();
        let tls = self.engine.ws_tls();
        let result = tokio::time::timeout(target.timeout, open(&target.url, &target.headers, tls)).await;
        let result = result.unwrap_or_else(|_| Err(Failure::new(FailureKind::ConnectTimeout, "")));
        let name = target.name.clone().unwrap_or_else(|| path_of(&target.url));
        self.record("WS", &name, t0.elapsed(), 0, result.as_ref().err());
        let (reader, writer) = result?;
        let inbox = Rc::new(Inbox::default());
        let reader = tokio::task::spawn_local(read(reader, inbox.clone()));
        self.open = Some(Open { writer, inbox, reader, path: path_of(&target.url).into() });
        Ok(())
    }

    fn drop_open(&mut self) {
        if let Some(o) = self.open.take() {
            o.reader.abort();
            self.report_dropped(&o);
        }
    }

    async fn close(&mut self) {
        if let Some(o) = self.open.take() {
            o.writer.close().await;
            o.reader.abort();
            self.report_dropped(&o);
        }
    }

    fn report_dropped(&self, o: &Open) {
        let n = o.inbox.dropped.get();
        if n > 0 {
            let f = Failure::new(FailureKind::TooLarge, format!("{n} messages past an unread inbox of {MAX_INBOX}"));
            self.engine.recorder.borrow_mut().fail_untimed(Instant::now(), self.engine.endpoint("WSR", &o.path), f, n);
        }
    }
}

/// The next message that arrived after message number `after` (the oldest waiting, for `after` 0),
/// taken from the inbox; by `deadline`, or the connection's end.
async fn wait_for(inbox: &Inbox, after: u64, deadline: Instant) -> Result<Incoming, Failure> {
    loop {
        let changed = inbox.changed.notified();
        {
            let mut messages = inbox.messages.borrow_mut();
            if let Some(i) = messages.iter().position(|(n, _, _)| *n >= after) {
                return Ok(messages.remove(i).expect("found").1);
            }
        }
        if let Some(f) = inbox.ended.borrow().clone() {
            return Err(f);
        }
        if tokio::time::timeout_at(deadline.into(), changed).await.is_err() {
            return Err(Failure::new(FailureKind::Timeout, ""));
        }
    }
}

/// The reader: every message into the inbox, until the connection ends.
async fn read(mut reader: Reader, inbox: Rc<Inbox>) {
    loop {
        let got = reader.next().await;
        match got {
            Ok(m) => {
                let n = inbox.arrived.get();
                inbox.arrived.set(n + 1);
                let mut messages = inbox.messages.borrow_mut();
                if messages.len() == MAX_INBOX {
                    messages.pop_front();
                    inbox.dropped.set(inbox.dropped.get() + 1);
                }
                messages.push_back((n, m, Instant::now()));
            }
            Err(f) => {
                *inbox.ended.borrow_mut() = Some(f);
                inbox.changed.notify_waiters();
                return;
            }
        }
        inbox.changed.notify_waiters();
    }
}

/// Resolves, connects and opens the WebSocket at `url` (ws:// or wss://).
async fn open(
    url: &str,
    headers: &[(String, String)],
    tls: Arc<rustls::ClientConfig>,
) -> Result<(Reader, Rc<Writer>), Failure> {
    let usage = |e: String| Failure::new(FailureKind::WebSocket, e);
    if !ws::is_ws_url(url) {
        return Err(usage(format!("'{url}' is not a ws:// or wss:// URL")));
    }
    let http = url::Url::parse(&ws::http_url(url)).map_err(|e| usage(format!("invalid URL '{url}': {e}")))?;
    let host = http.host_str().unwrap_or("").trim_matches(|c| c == '[' || c == ']').to_string();
    let https = http.scheme() == "https";
    let port = http.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
    crate::http::request::check_headers(headers).map_err(usage)?;
    let handshake = Handshake::new(&http, headers).map_err(usage)?;
    let addrs = net::resolve_async(&host, port).await.map_err(usage)?;
    let connector = Connector::new(addrs, https.then_some((tls, host.as_str()))).map_err(usage)?;
    let io = connector.connect(0).await?;
    ws::duplex::open(io, &handshake).await
}

fn path_of(url: &str) -> String {
    match url::Url::parse(&ws::http_url(url)) {
        Ok(u) => crate::http::request::path_and_query(&u),
        Err(_) => url.to_string(),
    }
}
