//! The request a run sends and where it goes: URL checks, name resolution, the serialized HTTP/1.1
//! request (built once, written as-is for every request).

use crate::net::resolve;
use std::net::SocketAddr;
use url::Url;

#[derive(Debug, Clone)]
pub struct RequestSpec {
    pub url: Url,
    pub https: bool,
    pub host: String,
    pub port: u16,
    pub addrs: Vec<SocketAddr>,
    pub method: String,
    /// Stats name: the path and query unless the config names it.
    pub name: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub keepalive: bool,
    /// The whole HTTP/1.1 request, ready to write.
    pub h1_bytes: Vec<u8>,
}

pub fn parse_url(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw).map_err(|e| format!("invalid URL '{raw}': {e}"))?;
    match url.scheme() {
        "http" | "https" => {}
        s => return Err(format!("invalid URL '{raw}': scheme '{s}' is not http or https")),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("invalid URL '{raw}': no host"));
    }
    Ok(url)
}

impl RequestSpec {
    /// The request to `url`; `name` (the stats name) defaults to the URL's path and query.
    pub fn new(
        url: &str,
        method: &str,
        headers: &[(String, String)],
        name: Option<&str>,
        keepalive: bool,
        body: Vec<u8>,
    ) -> Result<Self, String> {
        let url = parse_url(url)?;
        check_method(method)?;
        check_headers(headers)?;
        let method = method.to_ascii_uppercase();
        let host = url.host_str().unwrap().trim_matches(|c| c == '[' || c == ']').to_string();
        let https = url.scheme() == "https";
        let port = url.port_or_known_default().unwrap_or(if https { 443 } else { 80 });
        let name = name.map_or_else(|| path_and_query(&url), str::to_string);
        let mut spec = RequestSpec {
            https,
            addrs: Vec::new(),
            method,
            name,
            headers: headers.to_vec(),
            body,
            keepalive,
            h1_bytes: Vec::new(),
            host,
            port,
            url,
        };
        spec.h1_bytes = spec.serialize_h1();
        Ok(spec)
    }

    /// Resolves the host once, before the run, so that a bad name fails fast and clearly.
    pub fn resolve(&mut self) -> Result<(), String> {
        self.addrs = resolve(&self.host, self.port)?;
        Ok(())
    }

    fn serialize_h1(&self) -> Vec<u8> {
        serialize_h1(&self.method, &self.url, &self.headers, &self.body, self.keepalive)
    }
}

/// A method is a token of letters: anything else (a space, CR, LF) would rewrite the request line.
pub fn check_method(method: &str) -> Result<(), String> {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("invalid HTTP method {method:?}"));
    }
    Ok(())
}

/// Header names are visible ASCII without ':'; values hold no CR, LF or NUL (which would end the
/// header and inject another, or a whole request).
pub fn check_headers(headers: &[(String, String)]) -> Result<(), String> {
    for (k, v) in headers {
        if k.is_empty() || k.bytes().any(|b| !b.is_ascii_graphic() || b == b':') {
            return Err(format!("invalid header name {k:?}"));
        }
        if v.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0)) {
            return Err(format!("invalid value for header {k:?}: it contains CR, LF or NUL"));
        }
    }
    Ok(())
}

/// The Host header value: the port only when it is not the scheme's default.
pub fn authority(url: &Url) -> String {
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => format!("[{a}]"),
        Some(h) => h.to_string(),
        None => String::new(),
    };
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host,
    }
}

/// A whole HTTP/1.1 request. User headers replace squall's defaults of the same name; squall sets
/// Content-Length from the body and Connection from `keepalive`.
pub fn serialize_h1(method: &str, url: &Url, headers: &[(String, String)], body: &[u8], keepalive: bool) -> Vec<u8> {
    let mut out = serialize_h1_head(method, url, headers);
    finish_h1(&mut out, method, body, keepalive);
    out
}

/// Whether a request carries Content-Length: it has a body, or its method expects one.
pub fn needs_length(method: &str, body: &[u8]) -> bool {
    !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH")
}

/// Ends a request whose head (`serialize_h1_head`, and any per-request headers) is in `out`:
/// Content-Length, Connection when not kept alive, the blank line, the body.
pub fn finish_h1(out: &mut Vec<u8>, method: &str, body: &[u8], keepalive: bool) {
    use std::io::Write;
    if needs_length(method, body) {
        let _ = write!(out, "Content-Length: {}\r\n", body.len());
    }
    if !keepalive {
        out.extend_from_slice(b"Connection: close\r\n");
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
}

/// The request line and headers, without Content-Length, Connection and the blank line: the part of
/// a request that depends only on the method, URL and headers, so it can be prepared once.
pub fn serialize_h1_head(method: &str, url: &Url, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(head_capacity(url, headers));
    write_h1_head(&mut out, method, url, headers);
    out
}

/// Room for a head `write_h1_head` writes (its request line and headers), with some to spare for
/// what follows it (a cookie, the length).
pub fn head_capacity(url: &Url, headers: &[(String, String)]) -> usize {
    let named: usize = headers.iter().map(|(k, v)| k.len() + v.len() + 4).sum();
    url.as_str().len() + named + 128
}

/// `serialize_h1_head` into `out`. Written by copying slices, not with `write!`: 430 -> 89 ns for a head of
/// three headers (200,000 heads of 10,000 URLs, release build), which every scripted request makes.
pub fn write_h1_head(out: &mut Vec<u8>, method: &str, url: &Url, headers: &[(String, String)]) {
    let has_header = |name: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(name));
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(url.path().as_bytes());
    if let Some(q) = url.query() {
        out.push(b'?');
        out.extend_from_slice(q.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\n");
    if !has_header("host") {
        out.extend_from_slice(b"Host: ");
        write_authority(out, url);
        out.extend_from_slice(b"\r\n");
    }
    if !has_header("user-agent") {
        out.extend_from_slice(b"User-Agent: squall/");
        out.extend_from_slice(crate::types::VERSION.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    if !has_header("accept") {
        out.extend_from_slice(b"Accept: */*\r\n");
    }
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("connection") {
            continue;
        }
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
}

/// `authority(url)` into `out`.
fn write_authority(out: &mut Vec<u8>, url: &Url) {
    match url.host() {
        Some(url::Host::Ipv6(_)) | None => out.extend_from_slice(authority(url).as_bytes()),
        Some(_) => {
            // A domain or an IPv4 address: as the URL spells it (`host_str`), as `Host::to_string` does.
            out.extend_from_slice(url.host_str().unwrap_or_default().as_bytes());
            if let Some(p) = url.port() {
                out.push(b':');
                out.extend_from_slice(p.to_string().as_bytes());
            }
        }
    }
}

pub fn path_and_query(url: &Url) -> String {
    match url.query() {
        Some(q) => format!("{}?{}", url.path(), q),
        None => url.path().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(url: &str) -> Result<RequestSpec, String> {
        RequestSpec::new(url, "GET", &[], None, true, vec![])
    }

    #[test]
    fn serializes_a_get() {
        let spec = get("http://example.test:8080/a/b?x=1").unwrap();
        let text = String::from_utf8(spec.h1_bytes).unwrap();
        assert!(text.starts_with("GET /a/b?x=1 HTTP/1.1\r\nHost: example.test:8080\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\n"));
        assert!(!text.contains("Content-Length"));
        assert_eq!(spec.name, "/a/b?x=1");
    }

    #[test]
    fn post_body_gets_length_and_user_headers_win() {
        let headers = [("User-Agent".into(), "mine".into()), ("Content-Length".into(), "99".into())];
        let spec = RequestSpec::new("https://example.test/", "post", &headers, None, false, b"{}".to_vec()).unwrap();
        let text = String::from_utf8(spec.h1_bytes).unwrap();
        assert!(text.contains("User-Agent: mine\r\n") && !text.contains("squall/"));
        assert!(text.contains("Content-Length: 2\r\n") && !text.contains("99"));
        assert!(text.contains("Connection: close\r\n"));
        assert!(text.ends_with("\r\n\r\n{}"));
        assert_eq!(spec.port, 443);
    }

    #[test]
    fn the_host_header_is_the_urls_authority() {
        let urls = [
            "http://example.test/",
            "http://Example.TEST:8080/a",
            "https://example.test:443/",
            "http://127.0.0.1:31894/x?y",
            "http://[::1]:8080/",
            "http://[2001:db8::1]/",
            "http://b\u{fc}cher.example/",
            "http://localhost:80/",
        ];
        for raw in urls {
            let url = parse_url(raw).unwrap();
            let head = String::from_utf8(serialize_h1_head("GET", &url, &[])).unwrap();
            let host = head.lines().find_map(|l| l.strip_prefix("Host: ")).unwrap();
            assert_eq!(host, authority(&url), "{raw}");
        }
    }

    #[test]
    fn rejects_bad_urls_and_headers() {
        assert!(parse_url("localhost:8080").is_err());
        assert!(parse_url("ftp://x/").is_err());
        assert!(parse_url("http://").is_err());
        assert!(RequestSpec::new("http://x/", "GET", &[("Bad Name".into(), "v".into())], None, true, vec![]).is_err());
        assert!(get("http://x/").is_ok());
        assert!(check_headers(&[("X".into(), "a\r\nEvil: injected".into())]).is_err());
        assert!(check_method("GET / HTTP/1.1\r\nX:").is_err() && check_method("PATCH").is_ok());
    }
}
