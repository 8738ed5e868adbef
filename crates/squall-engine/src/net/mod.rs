//! Connections: name resolution, plain TCP or TLS over TCP behind one type (so the protocols above
//! needn't care), and how I/O errors become failures.

pub mod stamped;
pub mod tls;

use crate::stats::{Failure, FailureKind};
use rustls::pki_types::ServerName;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

pub use stamped::{open_connections, Stamp, Tcp};

/// `AsyncWrite` for a type that writes through its field `$io` (an `AsyncWrite + Unpin`), every method
/// forwarded, vectored writes included (one `writev` for several buffers, where the default impl
/// writes only the first): `Tcp` over tokio's stream, ws's `Prefixed` over a `Stream`.
macro_rules! write_through {
    ($ty:ty, $io:ident) => {
        impl tokio::io::AsyncWrite for $ty {
            fn poll_write(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                buf: &[u8],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.get_mut().$io).poll_write(cx, buf)
            }

            fn poll_write_vectored(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
                bufs: &[std::io::IoSlice<'_>],
            ) -> std::task::Poll<std::io::Result<usize>> {
                std::pin::Pin::new(&mut self.get_mut().$io).poll_write_vectored(cx, bufs)
            }

            fn is_write_vectored(&self) -> bool {
                self.$io.is_write_vectored()
            }

            fn poll_flush(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().$io).poll_flush(cx)
            }

            fn poll_shutdown(
                self: std::pin::Pin<&mut Self>,
                cx: &mut std::task::Context<'_>,
            ) -> std::task::Poll<std::io::Result<()>> {
                std::pin::Pin::new(&mut self.get_mut().$io).poll_shutdown(cx)
            }
        }
    };
}
pub(crate) use write_through;

pub enum Stream {
    Plain(Tcp),
    Tls(Box<TlsStream<Tcp>>),
}

impl Stream {
    /// A plain TCP connection, its receive times not asked of the kernel.
    pub fn plain(tcp: TcpStream) -> Stream {
        Stream::Plain(Tcp::new(tcp))
    }

    /// The TCP connection under it (under TLS too).
    pub fn tcp(&self) -> &Tcp {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    pub fn tcp_mut(&mut self) -> &mut Tcp {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_mut().0,
        }
    }
}

/// How long opening a connection took: the TCP connect, and the TLS handshake after it (https).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Opened {
    pub tcp: Duration,
    pub tls: Option<Duration>,
}

/// How to reach the target: its addresses and, for https, the TLS connector and server name.
#[derive(Clone)]
pub struct Connector {
    pub addrs: Arc<Vec<SocketAddr>>,
    pub tls: Option<(TlsConnector, ServerName<'static>)>,
}

impl Connector {
    pub fn new(addrs: Vec<SocketAddr>, tls: Option<(Arc<rustls::ClientConfig>, &str)>) -> Result<Self, String> {
        let tls = match tls {
            None => None,
            Some((config, host)) => {
                let name = ServerName::try_from(host.to_string())
                    .map_err(|_| format!("'{host}' is not a valid TLS server name"))?;
                Some((TlsConnector::from(config), name))
            }
        };
        Ok(Connector { addrs: Arc::new(addrs), tls })
    }

    /// Opens a connection; `which` spreads connections over the resolved addresses.
    pub async fn connect(&self, which: usize) -> Result<Stream, Failure> {
        Ok(self.connect_timed(which).await?.0)
    }

    /// Opens a connection, and says how long its TCP connect and its TLS handshake took.
    pub async fn connect_timed(&self, which: usize) -> Result<(Stream, Opened), Failure> {
        let addr = self.addrs[which % self.addrs.len()];
        let t0 = Instant::now();
        let tcp = TcpStream::connect(addr).await.map_err(|e| classify_io(&e, "while connecting"))?;
        let _ = tcp.set_nodelay(true);
        let tcp = Tcp::new(tcp);
        let t1 = Instant::now();
        let mut opened = Opened { tcp: t1 - t0, tls: None };
        match &self.tls {
            None => Ok((Stream::Plain(tcp), opened)),
            Some((connector, name)) => match connector.connect(name.clone(), tcp).await {
                Ok(s) => {
                    opened.tls = Some(t1.elapsed());
                    Ok((Stream::Tls(Box::new(s)), opened))
                }
                Err(e) => Err(match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
                    Some(tls) => Failure::new(FailureKind::Tls, tls.to_string()),
                    None => classify_io(&e, "during the TLS handshake"),
                }),
            },
        }
    }

    /// The ALPN protocol the server chose, if any.
    pub fn alpn(stream: &Stream) -> Option<Vec<u8>> {
        match stream {
            Stream::Plain(_) => None,
            Stream::Tls(s) => s.get_ref().1.alpn_protocol().map(|p| p.to_vec()),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    /// Forwarded, so that a writer of several buffers (h2's frame head and its data, fastwebsockets'
    /// frame head and a payload over 1 KiB) makes one `writev` instead of a `write` a buffer.
    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The addresses of `host`, or a one-line reason.
/// `host:port` as people write it: an IPv6 address in brackets (`[::1]:8080`, not `::1:8080`).
pub fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

pub fn resolve(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    nonempty((host, port).to_socket_addrs().map(Iterator::collect), host)
}

/// `resolve` inside the engine's runtime, without blocking its thread.
pub async fn resolve_async(host: &str, port: u16) -> Result<Vec<SocketAddr>, String> {
    nonempty(tokio::net::lookup_host((host, port)).await.map(Iterator::collect), host)
}

fn nonempty(found: std::io::Result<Vec<SocketAddr>>, host: &str) -> Result<Vec<SocketAddr>, String> {
    match found {
        Ok(addrs) if !addrs.is_empty() => Ok(addrs),
        _ => Err(format!("cannot resolve host '{host}'")),
    }
}

pub fn classify_io(e: &io::Error, phase: &str) -> Failure {
    use io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => Failure::new(FailureKind::ConnectRefused, ""),
        ConnectionReset | ConnectionAborted | BrokenPipe => Failure::new(FailureKind::Reset, ""),
        UnexpectedEof => Failure::new(FailureKind::Closed, phase.to_string()),
        TimedOut => Failure::new(FailureKind::Timeout, ""),
        InvalidData if e.get_ref().is_some_and(|inner| inner.is::<rustls::Error>()) => {
            Failure::new(FailureKind::Tls, e.to_string())
        }
        _ => Failure::new(FailureKind::Io, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_addresses_are_bracketed() {
        assert_eq!(host_port("::1", 80), "[::1]:80");
        assert_eq!(host_port("[::1]", 80), "[::1]:80");
        assert_eq!(host_port("example.com", 443), "example.com:443");
    }

    /// Several buffers go in one write: the head and the payload of a frame are one segment.
    #[tokio::test]
    async fn vectored_writes_reach_the_socket_whole() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (client, server) = tokio::join!(tokio::net::TcpStream::connect(addr), listener.accept());
        let mut s = Stream::Plain(Tcp::new(client.unwrap()));
        assert!(s.is_write_vectored());
        let payload = vec![7u8; 2048];
        let n = s.write_vectored(&[io::IoSlice::new(b"head"), io::IoSlice::new(&payload)]).await.unwrap();
        assert_eq!(n, 4 + 2048, "one write of both buffers");
        drop(s);
        let mut got = Vec::new();
        server.unwrap().0.read_to_end(&mut got).await.unwrap();
        assert_eq!(got.len(), 2052);
    }
}
