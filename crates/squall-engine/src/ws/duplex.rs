//! A WebSocket held in two halves, for scripted users: the `Reader` takes each whole message as it comes
//! (a task of its own reads for ever, so pings are answered and messages kept while the user does
//! something else), the `Writer` sends the user's messages, and the reader's pongs and close replies.

use super::wire::{closed, failure, violation, Prefixed};
use super::{Handshake, MAX_FRAME};
use crate::net::Stream;
use crate::stats::{Failure, FailureKind};
use fastwebsockets::{
    after_handshake_split, Frame, OpCode, Payload, Role, WebSocketError, WebSocketRead, WebSocketWrite,
};
use std::rc::Rc;
use tokio::io::{ReadHalf, WriteHalf};

/// A whole message from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    pub data: Vec<u8>,
    pub binary: bool,
}

pub struct Writer {
    ws: tokio::sync::Mutex<WebSocketWrite<WriteHalf<Prefixed>>>,
    /// A write is in progress: still set afterwards, it was cancelled mid-frame (`write`).
    torn: std::cell::Cell<bool>,
}

pub struct Reader {
    ws: WebSocketRead<ReadHalf<Prefixed>>,
    writer: Rc<Writer>,
}

/// Opens the WebSocket over a fresh connection, in two halves.
pub async fn open(mut io: Stream, handshake: &Handshake) -> Result<(Reader, Rc<Writer>), Failure> {
    let early = handshake.open(&mut io).await?;
    let (r, w) = tokio::io::split(Prefixed { early, io });
    let (mut read, write) = after_handshake_split(r, w, Role::Client);
    read.set_max_message_size(MAX_FRAME);
    read.set_auto_pong(true);
    read.set_auto_close(true);
    let writer = Rc::new(Writer { ws: tokio::sync::Mutex::new(write), torn: std::cell::Cell::new(false) });
    Ok((Reader { ws: read, writer: writer.clone() }, writer))
}

impl Writer {
    /// Sends one message (text unless `binary`; masked in place, so it is taken by value).
    pub async fn send(&self, mut payload: Vec<u8>, binary: bool) -> Result<(), Failure> {
        let opcode = if binary { OpCode::Binary } else { OpCode::Text };
        let frame = Frame::new(true, opcode, None, Payload::BorrowedMut(&mut payload));
        self.write(frame).await.map_err(failure)
    }

    /// A ping or a pong of the script's own (a control frame: at most 125 bytes, RFC 6455 §5.5).
    pub async fn control(&self, ping: bool, mut payload: Vec<u8>) -> Result<(), Failure> {
        if payload.len() > 125 {
            return Err(violation("a control frame's payload is at most 125 bytes"));
        }
        let opcode = if ping { OpCode::Ping } else { OpCode::Pong };
        let frame = Frame::new(true, opcode, None, Payload::BorrowedMut(&mut payload));
        self.write(frame).await.map_err(failure)
    }

    /// Says goodbye (close 1000) without waiting for the server's close.
    pub async fn close(&self) {
        self.close_with(1000, b"").await;
    }

    /// A close frame with `code` and `reason`, without waiting for the server's (none after a frame left
    /// half written: it would read as that frame's rest). Whether it was written.
    pub async fn close_with(&self, code: u16, reason: &[u8]) -> bool {
        self.write(Frame::close(code, reason)).await.is_ok()
    }

    async fn obliged(&self, frame: Frame<'_>) -> Result<(), WebSocketError> {
        self.write(frame).await
    }

    /// Writes a frame, unless one before it was left half written (its write cancelled: the operation
    /// ended by the script or its user's stop), after which the connection can only be dropped.
    async fn write(&self, frame: Frame<'_>) -> Result<(), WebSocketError> {
        let mut ws = self.ws.lock().await;
        if self.torn.get() {
            return Err(WebSocketError::ConnectionClosed);
        }
        self.torn.set(true);
        let written = ws.write_frame(frame).await;
        self.torn.set(false);
        written
    }
}

impl Reader {
    /// The next whole message: fragments joined (at most `MAX_FRAME` in all), pings answered on the way.
    /// A close from the server, or an error, ends the connection: the reader stops there.
    pub async fn next(&mut self) -> Result<Incoming, Failure> {
        let writer = self.writer.clone();
        let mut send = move |frame: Frame<'static>| {
            let writer = writer.clone();
            async move { writer.obliged(frame).await }
        };
        let mut message: Option<Incoming> = None;
        loop {
            let frame = self.ws.read_frame(&mut send).await.map_err(failure)?;
            match frame.opcode {
                OpCode::Close => return Err(closed(&frame.payload)),
                OpCode::Ping | OpCode::Pong => continue,
                OpCode::Text | OpCode::Binary if message.is_some() => {
                    return Err(violation("a new message began before the last one's final fragment"));
                }
                OpCode::Continuation if message.is_none() => {
                    return Err(violation("a continuation frame with no message to continue"));
                }
                OpCode::Text | OpCode::Binary | OpCode::Continuation => {}
            }
            let m =
                message.get_or_insert_with(|| Incoming { data: Vec::new(), binary: frame.opcode == OpCode::Binary });
            if m.data.len() + frame.payload.len() > MAX_FRAME {
                return Err(Failure::new(
                    FailureKind::TooLarge,
                    format!("WebSocket message over {} MB", MAX_FRAME >> 20),
                ));
            }
            m.data.extend_from_slice(&frame.payload);
            if frame.fin {
                let m = message.take().expect("set above");
                if !m.binary && std::str::from_utf8(&m.data).is_err() {
                    return Err(violation("a text message that is not UTF-8"));
                }
                return Ok(m);
            }
        }
    }
}
