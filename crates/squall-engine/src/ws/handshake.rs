//! The opening handshake (RFC 6455 §4.1): a GET with `Upgrade: websocket` and a fresh random key,
//! answered by `101 Switching Protocols` whose `Sec-WebSocket-Accept` proves the server read the key.
//! The request is prepared once per run with a place for the key; each connection writes its own.

use crate::http::request::authority;
use crate::stats::{Failure, FailureKind};
use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use sha1::{Digest, Sha1};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use url::Url;

/// RFC 6455's fixed GUID, appended to the key before hashing.
const GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// A key is 16 random bytes in base64: always 24 characters.
const KEY_LEN: usize = 24;
/// The most a handshake's answer may take: a response head this size is not a WebSocket server's.
const MAX_HEAD: usize = 16 << 10;

/// Headers the handshake sets itself: a user's value would break it (or, for extensions, ask for
/// framing, such as permessage-deflate, that squall does not speak).
const OWN: [&str; 5] =
    ["upgrade", "connection", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions"];

#[derive(Debug, Clone)]
pub struct Handshake {
    /// The request, with `KEY_LEN` bytes at `key_at` for each connection's key.
    template: Vec<u8>,
    key_at: usize,
}

impl Handshake {
    /// The handshake to `url` (http or https: the `ws(s)://` URL mapped by `ws::http_url`), with the
    /// user's headers (`Origin`, `Sec-WebSocket-Protocol`, `Authorization`, cookies ...).
    pub fn new(url: &Url, headers: &[(String, String)]) -> Result<Self, String> {
        use std::io::Write;
        if let Some((k, _)) = headers.iter().find(|(k, _)| OWN.contains(&k.to_ascii_lowercase().as_str())) {
            return Err(format!("the WebSocket handshake sets {k} itself: leave it out of the headers"));
        }
        let has = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
        let mut out = Vec::with_capacity(256);
        let _ = write!(out, "GET {}", url.path());
        if let Some(q) = url.query() {
            let _ = write!(out, "?{q}");
        }
        out.extend_from_slice(b" HTTP/1.1\r\n");
        if !has("host") {
            let _ = write!(out, "Host: {}\r\n", authority(url));
        }
        if !has("user-agent") {
            let _ = write!(out, "User-Agent: squall/{}\r\n", crate::types::VERSION);
        }
        for (k, v) in headers {
            let _ = write!(out, "{k}: {v}\r\n");
        }
        out.extend_from_slice(b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n");
        out.extend_from_slice(b"Sec-WebSocket-Key: ");
        let key_at = out.len();
        out.extend_from_slice(&[b'='; KEY_LEN]);
        out.extend_from_slice(b"\r\n\r\n");
        Ok(Handshake { template: out, key_at })
    }

    /// The request with `key` in its place.
    pub fn request(&self, key: &[u8; KEY_LEN]) -> Vec<u8> {
        let mut out = self.template.clone();
        out[self.key_at..self.key_at + KEY_LEN].copy_from_slice(key);
        out
    }

    /// Opens the WebSocket on a fresh connection: writes the request with a new key and reads the
    /// answer. Returns what the server sent after the answer's head (frames may follow it at once).
    pub async fn open<S: AsyncRead + AsyncWrite + Unpin>(&self, io: &mut S) -> Result<Bytes, Failure> {
        let key = new_key();
        io.write_all(&self.request(&key)).await.map_err(|e| crate::net::classify_io(&e, "during the handshake"))?;
        let mut buf = BytesMut::with_capacity(1024);
        loop {
            if io.read_buf(&mut buf).await.map_err(|e| crate::net::classify_io(&e, "during the handshake"))? == 0 {
                return Err(Failure::new(FailureKind::Closed, "during the WebSocket handshake"));
            }
            if let Some(head) = check_answer(&buf, &key)? {
                // What came after the head (frames sent at once), copied out: a slice would keep the
                // whole read buffer for the connection's life (1 KB a connection).
                return Ok(Bytes::copy_from_slice(&buf[head..]));
            }
            if buf.len() > MAX_HEAD {
                return Err(Failure::new(
                    FailureKind::TooLarge,
                    format!("handshake answer over {} KB", MAX_HEAD >> 10),
                ));
            }
        }
    }
}

/// 16 random bytes in base64.
fn new_key() -> [u8; KEY_LEN] {
    let raw: [u8; 16] = rand::random();
    let mut key = [0u8; KEY_LEN];
    let n = base64::engine::general_purpose::STANDARD.encode_slice(raw, &mut key).expect("24 bytes hold 16 in base64");
    debug_assert_eq!(n, KEY_LEN);
    key
}

/// What the server must answer in `Sec-WebSocket-Accept` for `key`.
pub fn accept_for(key: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(GUID);
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// Checks a handshake's answer so far: `None` while its head is incomplete, the head's length once
/// it is a valid `101`, or why it is not.
pub fn check_answer(buf: &[u8], key: &[u8]) -> Result<Option<usize>, Failure> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut resp = httparse::Response::new(&mut headers);
    let head = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(Failure::new(FailureKind::Protocol, format!("handshake answer: {e}"))),
    };
    let bad = |detail: String| Err(Failure::new(FailureKind::WebSocket, detail));
    let status = resp.code.unwrap_or(0);
    if status != 101 {
        if crate::stats::failed_status(status) {
            return Err(Failure::http(status));
        }
        return bad(format!("the server answered the handshake with {status}, not 101 Switching Protocols"));
    }
    let value = |name: &str| {
        resp.headers.iter().find(|h| h.name.eq_ignore_ascii_case(name)).map(|h| String::from_utf8_lossy(h.value))
    };
    if !value("upgrade").is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket")) {
        return bad("the handshake's answer has no Upgrade: websocket".into());
    }
    if !value("connection").is_some_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("upgrade"))) {
        return bad("the handshake's answer has no Connection: Upgrade".into());
    }
    match value("sec-websocket-accept") {
        Some(v) if v.trim() == accept_for(key) => {}
        Some(_) => return bad("the handshake's Sec-WebSocket-Accept does not match the key sent".into()),
        None => return bad("the handshake's answer has no Sec-WebSocket-Accept".into()),
    }
    if let Some(ext) = value("sec-websocket-extensions") {
        return bad(format!("the server chose extensions squall did not offer ({})", ext.trim()));
    }
    Ok(Some(head))
}

#[cfg(test)]
mod tests {
    use super::*;

    const RFC_KEY: &[u8] = b"dGhlIHNhbXBsZSBub25jZQ==";

    fn answer(extra: &str) -> String {
        format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{extra}\r\n",
            extra = extra
        )
    }

    #[test]
    fn the_accept_value_is_rfc_6455s_example() {
        assert_eq!(accept_for(RFC_KEY), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn a_valid_answer_ends_where_its_head_ends() {
        let a = answer("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n");
        let mut buf = a.clone().into_bytes();
        buf.extend_from_slice(b"\x81\x02hi");
        assert_eq!(check_answer(&buf, RFC_KEY).unwrap(), Some(a.len()));
        assert_eq!(check_answer(&buf[..a.len() - 3], RFC_KEY).unwrap(), None);
    }

    #[test]
    fn wrong_answers_fail_with_their_reason() {
        let kind = |s: &str| check_answer(s.as_bytes(), RFC_KEY).unwrap_err();
        assert_eq!(kind("HTTP/1.1 403 Forbidden\r\n\r\n"), Failure::http(403));
        assert!(kind("HTTP/1.1 200 OK\r\n\r\n").message().contains("200, not 101"));
        assert!(kind(&answer("Sec-WebSocket-Accept: nope\r\n")).message().contains("does not match"));
        assert!(kind(&answer("")).message().contains("no Sec-WebSocket-Accept"));
        let deflate = answer(
            "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\nSec-WebSocket-Extensions: permessage-deflate\r\n",
        );
        assert!(kind(&deflate).message().contains("permessage-deflate"));
        assert_eq!(kind("HTTP/1.1 1x1\r\n\r\n").kind, FailureKind::Protocol);
    }

    #[test]
    fn the_request_carries_each_connections_key_and_the_users_headers() {
        let url = Url::parse("http://h:9/chat?room=1").unwrap();
        let hs = Handshake::new(&url, &[("Origin".into(), "http://h".into())]).unwrap();
        let key = new_key();
        let text = String::from_utf8(hs.request(&key)).unwrap();
        assert!(text.starts_with("GET /chat?room=1 HTTP/1.1\r\nHost: h:9\r\n"), "{text}");
        assert!(text.contains("Origin: http://h\r\n") && text.contains("Sec-WebSocket-Version: 13\r\n"));
        assert!(text.ends_with(&format!("Sec-WebSocket-Key: {}\r\n\r\n", std::str::from_utf8(&key).unwrap())));
        assert_ne!(new_key(), key);
        assert!(Handshake::new(&url, &[("connection".into(), "close".into())]).is_err());
    }
}
