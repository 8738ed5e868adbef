//! WebSocket (RFC 6455) as the engine speaks it: the opening handshake (`handshake`), then one
//! exchange after another on the connection (`conn`): a message sent, the next message received is
//! its reply. Frames are read and written by `fastwebsockets` (Deno's; its reads parse in place from
//! one buffer, its writes mask in place); the handshake is written here, because the crate's own
//! needs hyper's client and squall's connections are its own (`net::Stream`, timed, TLS or not).
//!
//! A scripted user's connection is held as a `duplex` instead: a reader that takes every message as it
//! comes (answering pings even while the user thinks) and a writer the user's operations share.
//!
//! What a reply is: the first whole data message (text or binary) after the send; pings met on the
//! way are answered, a close from the server fails the exchange with its code and reason. Fragmented
//! replies are counted, not kept: a bench only needs their size, so a server that fragments without
//! end costs time, not memory.

pub mod conn;
pub mod duplex;
pub mod handshake;
pub mod op;
mod wire;

pub use conn::{Reply, WsConn};
pub use duplex::{Incoming, Reader, Writer};
pub use handshake::Handshake;
pub use op::{WsOp, WsTx};
pub use wire::is_close_frame;

/// The largest frame a reply may carry. A bigger one fails the exchange (`too large`) before its
/// payload is read: 10,000 connections must not each hold a server's 64 MB frame.
pub const MAX_FRAME: usize = 16 << 20;

/// Whether `url` is a WebSocket URL (`ws://` or `wss://`).
pub fn is_ws_url(url: &str) -> bool {
    let lower = url.get(..6).unwrap_or(url).to_ascii_lowercase();
    lower.starts_with("ws://") || lower.starts_with("wss://")
}

/// The `http(s)://` URL a `ws(s)://` URL's handshake goes to (RFC 6455 §3: the same host, port,
/// path and query).
pub fn http_url(url: &str) -> String {
    match url.find("://") {
        Some(i) if url[..i].eq_ignore_ascii_case("wss") => format!("https{}", &url[i..]),
        Some(i) if url[..i].eq_ignore_ascii_case("ws") => format!("http{}", &url[i..]),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_urls_map_to_their_handshakes_urls() {
        assert!(is_ws_url("ws://x/") && is_ws_url("WSS://x/") && !is_ws_url("http://x/") && !is_ws_url("ws"));
        assert_eq!(http_url("ws://h:9/a?b=1"), "http://h:9/a?b=1");
        assert_eq!(http_url("WSS://h/"), "https://h/");
        assert_eq!(http_url("http://h/"), "http://h/");
    }
}
