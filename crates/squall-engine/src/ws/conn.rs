//! One WebSocket connection after its handshake: a message sent and its reply read, as one exchange.

use super::wire::{closed, failure, violation, Prefixed};
use super::{Handshake, MAX_FRAME};
use crate::net::Stream;
use crate::stats::Failure;
use fastwebsockets::{Frame, OpCode, Payload, Role, WebSocket};

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
