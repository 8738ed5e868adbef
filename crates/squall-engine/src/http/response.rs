//! What a request got back, whichever protocol carried it: one `Response` for HTTP/1.1 (`h1`) and
//! HTTP/2 (`h2`), and the bound on what of a body is kept for a script.

use crate::stats::{Failure, FailureKind};

/// The largest response body kept for a script (its `response.content`), over HTTP/1.1 and
/// HTTP/2 alike: larger than any API or page response we know of (a body a script must not read
/// whole is rather a download to count, which bench does without keeping it), and small enough that
/// a server streaming without end costs a user 64 MiB, not the machine's memory.
pub const MAX_KEPT_BODY: usize = 64 * 1024 * 1024;

/// The failure of a response whose body is larger than a script may keep.
pub fn too_large_body() -> Failure {
    Failure::new(
        FailureKind::TooLarge,
        format!("response body above {} MiB, the most kept for a script", MAX_KEPT_BODY >> 20),
    )
}

/// What an exchange read. The body and headers are kept only when asked for.
#[derive(Debug, Default)]
pub struct Response {
    pub status: u16,
    pub body_bytes: u64,
    pub wire_bytes: u64,
    /// The server will close the connection (or already has).
    pub close: bool,
    /// HTTP/2 responses kept for a script: names lowercased, values as sent.
    pub headers: Option<Vec<(String, String)>>,
    /// HTTP/1.1 responses kept for a script: the header lines as received (after the status line),
    /// one buffer for the script to parse only if it reads them.
    pub raw_head: Option<Vec<u8>>,
    /// Set-Cookie values, and the Location of a redirect, picked out of the head when kept.
    pub set_cookies: Vec<String>,
    pub location: Option<String>,
    pub body: Option<Vec<u8>>,
    /// When the kernel received the response's last bytes, if its read asked (`net::stamped`);
    /// else the caller's clock times it.
    pub received: crate::net::Stamp,
}
