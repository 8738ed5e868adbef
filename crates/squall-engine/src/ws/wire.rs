//! What both ways of holding a WebSocket share: the connection with the bytes that came after the
//! handshake's answer, and how the frame layer's errors and a server's close become failures.

use super::MAX_FRAME;
use crate::net::Stream;
use crate::stats::{Failure, FailureKind};
use bytes::{Buf, Bytes};
use fastwebsockets::WebSocketError;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

pub(super) fn violation(what: &str) -> Failure {
    Failure::new(FailureKind::WebSocket, what)
}

/// The server's close frame, as a failure: its code and reason (RFC 6455 §7.4).
pub(super) fn closed(payload: &[u8]) -> Failure {
    if payload.len() < 2 {
        return Failure::new(FailureKind::Closed, "(WebSocket close)");
    }
    let code = u16::from_be_bytes([payload[0], payload[1]]);
    let reason = String::from_utf8_lossy(&payload[2..]);
    let reason: String = reason.chars().take(120).collect();
    match reason.is_empty() {
        true => Failure::new(FailureKind::Closed, format!("(WebSocket close {code})")),
        false => Failure::new(FailureKind::Closed, format!("(WebSocket close {code}: {reason})")),
    }
}

/// Whether `f` is a server's close frame (`closed`), not a connection that ended without one.
pub fn is_close_frame(f: &Failure) -> bool {
    f.kind == FailureKind::Closed && f.detail.starts_with("(WebSocket close")
}

pub(super) fn failure(e: WebSocketError) -> Failure {
    match e {
        WebSocketError::IoError(e) => crate::net::classify_io(&e, "(WebSocket)"),
        WebSocketError::UnexpectedEOF | WebSocketError::ConnectionClosed => {
            Failure::new(FailureKind::Closed, "(no WebSocket close)")
        }
        WebSocketError::FrameTooLarge => {
            Failure::new(FailureKind::TooLarge, format!("WebSocket frame over {} MB", MAX_FRAME >> 20))
        }
        other => Failure::new(FailureKind::WebSocket, other.to_string()),
    }
}

/// The connection, with what the server sent right after its handshake answer read first.
pub(super) struct Prefixed {
    pub(super) early: Bytes,
    pub(super) io: Stream,
}

impl AsyncRead for Prefixed {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.early.has_remaining() {
            let n = this.early.len().min(buf.remaining());
            buf.put_slice(&this.early[..n]);
            this.early.advance(n);
            if !this.early.has_remaining() {
                this.early = Bytes::new(); // (frames that came with the handshake's answer, read now)
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

crate::net::write_through!(Prefixed, io);
