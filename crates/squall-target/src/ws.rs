//! `/ws`: a WebSocket echo (fastwebsockets over hyper's upgrade). Every text or binary message is sent
//! back as one frame of the same kind, after the connection's delay (`?delay_ms=N`, read at the
//! upgrade); fragmented messages are put together first; pings are answered with pongs and a close with
//! a close (fastwebsockets' auto_pong and auto_close). The counts, shared by every connection of one
//! target, are what `/ws/stats` reports, so a benchmark can compare a generator's count with the
//! server's.

use crate::reply;
use bytes::Bytes;
use fastwebsockets::{upgrade, FragmentCollector, Frame, OpCode, WebSocketError};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What the target's WebSocket connections have done so far.
#[derive(Default)]
pub struct Counts {
    /// Connections upgraded and not yet ended.
    open: AtomicU64,
    /// Connections upgraded since the target started.
    opened: AtomicU64,
    /// Messages echoed (text and binary, after any delay), since the target started.
    messages: AtomicU64,
}

impl Counts {
    pub fn json(&self) -> String {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        format!(
            "{{\"open\": {}, \"opened\": {}, \"messages\": {}}}\n",
            get(&self.open),
            get(&self.opened),
            get(&self.messages)
        )
    }
}

/// The 101 answer to an upgrade request (the echo then runs on its own task), or 400 when the request
/// is not a WebSocket handshake (no key, a version other than 13).
pub fn upgrade(mut req: Request<Incoming>, delay: Duration, counts: Arc<Counts>) -> Response<Full<Bytes>> {
    match upgrade::upgrade(&mut req) {
        Ok((response, upgraded)) => {
            tokio::spawn(async move {
                if let Ok(ws) = upgraded.await {
                    counts.open.fetch_add(1, Ordering::Relaxed);
                    counts.opened.fetch_add(1, Ordering::Relaxed);
                    let _ = echo(FragmentCollector::new(ws), delay, &counts).await;
                    counts.open.fetch_sub(1, Ordering::Relaxed);
                }
            });
            response.map(|_| Full::new(Bytes::new()))
        }
        Err(e) => reply(StatusCode::BAD_REQUEST, format!("not a WebSocket handshake: {e}\n")),
    }
}

async fn echo<S>(mut ws: FragmentCollector<S>, delay: Duration, counts: &Counts) -> Result<(), WebSocketError>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    loop {
        let frame = ws.read_frame().await?;
        match frame.opcode {
            OpCode::Close => return Ok(()), // auto_close has answered it
            OpCode::Text | OpCode::Binary => {
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                ws.write_frame(Frame::new(true, frame.opcode, None, frame.payload)).await?;
                counts.messages.fetch_add(1, Ordering::Relaxed);
            }
            _ => {} // a pong, or a ping auto_pong has answered
        }
    }
}
