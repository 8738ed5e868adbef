//! HTTP/2 through the `h2` crate: one connection shared by several concurrent streams, reconnected
//! lazily when it fails. ALPN "h2" over TLS, prior knowledge (h2c) over plain TCP.

use crate::http::h1::Response;
use crate::http::request::RequestSpec;
use crate::net::classify_io;
use crate::net::Connector;
use crate::stats::{Failure, FailureKind};
use bytes::Bytes;
use h2::client::SendRequest;
use std::cell::RefCell;
use std::time::{Duration, Instant};

/// Headers HTTP/2 forbids or carries as pseudo-headers.
const CONNECTION_HEADERS: [&str; 6] =
    ["host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

pub fn request_template(spec: &RequestSpec) -> Result<http::Request<()>, String> {
    build_request(&spec.method, &spec.url, &spec.headers)
}

/// An HTTP/2 request head: squall's default user-agent and accept unless given, the caller's headers
/// lowercased, and none of the connection-specific headers HTTP/2 forbids.
pub fn build_request(method: &str, url: &url::Url, headers: &[(String, String)]) -> Result<http::Request<()>, String> {
    let mut b = http::Request::builder().method(method).uri(url.as_str());
    let has = |n: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    if !has("user-agent") {
        b = b.header("user-agent", format!("squall/{}", crate::VERSION));
    }
    if !has("accept") {
        b = b.header("accept", "*/*");
    }
    for (k, v) in headers {
        if !CONNECTION_HEADERS.iter().any(|c| k.eq_ignore_ascii_case(c)) {
            b = b.header(k.to_ascii_lowercase(), v);
        }
    }
    b.body(()).map_err(|e| format!("cannot build the HTTP/2 request: {e}"))
}

/// A failure, and whether it broke the whole connection rather than one stream.
fn h2_failure(e: h2::Error) -> (Failure, bool) {
    let connection_broken = !e.is_reset() || e.is_go_away();
    let failure = match e.get_io() {
        Some(io) => classify_io(io, "mid-response"),
        None if e.is_go_away() => Failure::new(FailureKind::Closed, format!("with GOAWAY ({e})")),
        None => Failure::new(FailureKind::Protocol, e.to_string()),
    };
    (failure, connection_broken)
}

/// One HTTP/2 connection slot, shared by the workers that multiplex over it.
pub struct H2Conn {
    sender: RefCell<Option<SendRequest<Bytes>>>,
    connecting: tokio::sync::Mutex<()>,
    index: usize,
}

impl H2Conn {
    pub fn new(index: usize) -> Self {
        H2Conn { sender: RefCell::new(None), connecting: tokio::sync::Mutex::new(()), index }
    }

    fn current(&self) -> Option<SendRequest<Bytes>> {
        self.sender.borrow().clone()
    }

    /// The live connection, opening one first if needed; reports how long a new connect took.
    async fn get(&self, connector: &Connector) -> Result<(SendRequest<Bytes>, Option<Duration>), Failure> {
        if let Some(s) = self.current() {
            return Ok((s, None));
        }
        let _guard = self.connecting.lock().await;
        if let Some(s) = self.current() {
            return Ok((s, None)); // another stream connected while this one waited
        }
        let t0 = Instant::now();
        let stream = connector.connect(self.index).await?;
        if connector.tls.is_some() && Connector::alpn(&stream).as_deref() != Some(b"h2") {
            return Err(Failure::new(FailureKind::Protocol, "the server did not negotiate HTTP/2"));
        }
        let (send, conn) = h2::client::handshake(stream).await.map_err(|e| h2_failure(e).0)?;
        tokio::task::spawn_local(async move {
            let _ = conn.await; // drives the connection until it closes
        });
        *self.sender.borrow_mut() = Some(send.clone());
        Ok((send, Some(t0.elapsed())))
    }

    fn drop_connection(&self) {
        self.sender.borrow_mut().take();
    }

    pub async fn exchange(
        &self,
        connector: &Connector,
        template: &http::Request<()>,
        body: &Bytes,
        keep: bool,
        on_connect: impl FnOnce(Duration),
    ) -> Result<Response, Failure> {
        let (send, connect_time) = self.get(connector).await?;
        if let Some(t) = connect_time {
            on_connect(t);
        }
        self.send(send, template, body, keep).await.map_err(|(failure, connection_broken)| {
            if connection_broken {
                self.drop_connection();
            }
            failure
        })
    }

    async fn send(
        &self,
        send: SendRequest<Bytes>,
        template: &http::Request<()>,
        body: &Bytes,
        keep: bool,
    ) -> Result<Response, (Failure, bool)> {
        let mut send = send.ready().await.map_err(h2_failure)?;
        let mut req = http::Request::new(());
        *req.method_mut() = template.method().clone();
        *req.uri_mut() = template.uri().clone();
        *req.headers_mut() = template.headers().clone();
        let (response, mut stream) = send.send_request(req, body.is_empty()).map_err(h2_failure)?;
        if !body.is_empty() {
            stream.send_data(body.clone(), true).map_err(h2_failure)?;
        }
        let response = response.await.map_err(h2_failure)?;
        let (parts, mut recv) = response.into_parts();
        let mut out = Response { status: parts.status.as_u16(), ..Default::default() };
        if keep {
            out.headers = Some(
                parts
                    .headers
                    .iter()
                    .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
                    .collect(),
            );
        }
        let mut kept = keep.then(Vec::new);
        while let Some(chunk) = recv.data().await {
            let chunk = chunk.map_err(h2_failure)?;
            out.body_bytes += chunk.len() as u64;
            let _ = recv.flow_control().release_capacity(chunk.len());
            if let Some(k) = kept.as_mut() {
                k.extend_from_slice(&chunk);
            }
        }
        out.wire_bytes = out.body_bytes;
        out.body = kept;
        Ok(out)
    }
}
