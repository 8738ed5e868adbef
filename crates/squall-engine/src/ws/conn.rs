//! One WebSocket connection after its handshake: a message sent and its reply read, as one exchange.

use super::{Handshake, MAX_FRAME};
use crate::net::Stream;
use crate::stats::{Failure, FailureKind};
use bytes::{Buf, Bytes};
use fastwebsockets::{Frame, OpCode, Payload, Role, WebSocket, WebSocketError};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// What came back for one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The reply's payload, all its fragments.
    pub bytes: u64,
    /// Frames read for it (fragments, and pings answered on the way).
    pub frames: u64,
}

pub struct WsConn {
    ws: WebSocket<Prefixed>,
    /// The message, copied here for each send: the client masks it in place (RFC 6455 §5.3).
    scratch: Vec<u8>,
}

impl WsConn {
    /// Opens the WebSocket over a fresh connection.
    pub async fn open(mut io: Stream, handshake: &Handshake) -> Result<WsConn, Failure> {
        let early = handshake.open(&mut io).await?;
        let mut ws = WebSocket::after_handshake(Prefixed { early, io }, Role::Client);
        ws.set_max_message_size(MAX_FRAME);
        ws.set_auto_pong(true);
        ws.set_auto_close(true);
        Ok(WsConn { ws, scratch: Vec::new() })
    }

    /// Sends `message` (a text message unless `binary`) and reads its reply: the next whole data
    /// message. An error leaves the connection unusable: drop it.
    pub async fn exchange(&mut self, message: &[u8], binary: bool) -> Result<Reply, Failure> {
        self.scratch.clear();
        self.scratch.extend_from_slice(message);
        let opcode = if binary { OpCode::Binary } else { OpCode::Text };
        let frame = Frame::new(true, opcode, None, Payload::BorrowedMut(&mut self.scratch));
        self.ws.write_frame(frame).await.map_err(failure)?;
        self.receive().await
    }

    /// Says goodbye (close 1000) without waiting for the server's close: the end of a run.
    pub async fn close(&mut self) {
        let _ = self.ws.write_frame(Frame::close(1000, b"")).await;
    }

    /// Reads the next whole data message; its fragments are counted, not kept (`ws` module doc).
    pub async fn receive(&mut self) -> Result<Reply, Failure> {
        let mut reply = Reply { bytes: 0, frames: 0 };
        let mut in_message = false;
        loop {
            let frame = self.ws.read_frame().await.map_err(failure)?;
            reply.frames += 1;
            match frame.opcode {
                OpCode::Close => return Err(closed(&frame.payload)),
                OpCode::Text | OpCode::Binary if in_message => {
                    return Err(violation("a new message began before the last one's final fragment"));
                }
                OpCode::Continuation if !in_message => {
                    return Err(violation("a continuation frame with no message to continue"));
                }
                OpCode::Text | OpCode::Binary | OpCode::Continuation => {
                    reply.bytes += frame.payload.len() as u64;
                    if frame.fin {
                        return Ok(reply);
                    }
                    in_message = true;
                }
                OpCode::Ping | OpCode::Pong => {} // a ping was answered by the reader (auto pong)
            }
        }
    }
}

fn violation(what: &str) -> Failure {
    Failure::new(FailureKind::WebSocket, what)
}

/// The server's close frame, as a failure: its code and reason (RFC 6455 §7.4).
fn closed(payload: &[u8]) -> Failure {
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

fn failure(e: WebSocketError) -> Failure {
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
struct Prefixed {
    early: Bytes,
    io: Stream,
}

impl AsyncRead for Prefixed {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.early.has_remaining() {
            let n = this.early.len().min(buf.remaining());
            buf.put_slice(&this.early[..n]);
            this.early.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}
