//! One MQTT connection: TCP (or TLS) through the engine's connector, the CONNECT/CONNACK handshake,
//! a write buffer that batches packets into one write, and a read buffer packets are decoded from.

use super::codec::{Hello, Incoming, Version};
use crate::net::classify_io;
use crate::net::{Connector, Stream};
use crate::stats::{Failure, FailureKind};
use bytes::BytesMut;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub struct Conn {
    stream: Stream,
    pub version: Version,
    rbuf: BytesMut,
    pub wbuf: BytesMut,
    /// The broker's receive maximum (MQTT 5), which caps the in-flight window.
    pub receive_max: Option<u16>,
    /// The largest packet read (`Hello::max_packet`): the read buffer grows no further.
    max_packet: usize,
}

fn closed(phase: &str) -> Failure {
    Failure::new(FailureKind::Closed, phase.to_string())
}

impl Conn {
    /// Connects and completes the MQTT handshake within `timeout`.
    pub async fn open(
        connector: &Connector,
        which: usize,
        version: Version,
        hello: &Hello<'_>,
        timeout: Duration,
    ) -> Result<Conn, Failure> {
        let attempt = async {
            let stream = connector.connect(which).await?;
            let mut conn = Conn {
                stream,
                version,
                rbuf: BytesMut::with_capacity(4096),
                wbuf: BytesMut::with_capacity(4096),
                receive_max: None,
                max_packet: hello.max_packet,
            };
            version.connect(&mut conn.wbuf, hello);
            conn.flush().await?;
            loop {
                match conn.next().await? {
                    Incoming::ConnAck { refused: Some(reason), .. } => {
                        return Err(Failure::new(FailureKind::Refused, format!("CONNACK refused: {reason}")));
                    }
                    Incoming::ConnAck { refused: None, receive_max } => {
                        conn.receive_max = receive_max;
                        return Ok(conn);
                    }
                    Incoming::Disconnect(reason) => {
                        return Err(Failure::new(FailureKind::Refused, format!("disconnected: {reason}")))
                    }
                    _ => {}
                }
            }
        };
        match tokio::time::timeout(timeout, attempt).await {
            Ok(r) => r,
            Err(_) => Err(Failure::new(FailureKind::ConnectTimeout, "")),
        }
    }

    pub async fn flush(&mut self) -> Result<(), Failure> {
        if self.wbuf.is_empty() {
            return Ok(());
        }
        let r = self.stream.write_all(&self.wbuf).await;
        self.wbuf.clear();
        r.map_err(|e| classify_io(&e, "while publishing"))
    }

    /// Reads more bytes from the broker; cancel-safe, so it can wait in a `select!`.
    pub async fn fill(&mut self) -> Result<(), Failure> {
        if self.rbuf.capacity() - self.rbuf.len() < 1024 {
            self.rbuf.reserve(16 * 1024);
        }
        match self.stream.read_buf(&mut self.rbuf).await {
            Ok(0) => Err(closed("")),
            Ok(_) => Ok(()),
            Err(e) => Err(classify_io(&e, "")),
        }
    }

    /// The next whole packet already read, if any.
    pub fn decoded(&mut self) -> Result<Option<Incoming>, Failure> {
        self.version.read(&mut self.rbuf, self.max_packet)
    }

    /// Waits for the next packet.
    pub async fn next(&mut self) -> Result<Incoming, Failure> {
        loop {
            if let Some(p) = self.decoded()? {
                return Ok(p);
            }
            self.fill().await?;
        }
    }

    /// A polite goodbye; errors don't matter any more.
    pub async fn close(mut self) {
        self.version.disconnect(&mut self.wbuf);
        let _ = tokio::time::timeout(Duration::from_millis(200), self.flush()).await;
        let _ = self.stream.shutdown().await;
    }
}
