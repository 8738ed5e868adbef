//! Each scripted user's cookie jar, kept in the engine: Set-Cookie of every response (redirect hops
//! included) goes in, and every request carries the cookies whose domain matches its host. Scoping is
//! by domain only (a cookie set by host A is never sent to host B); paths, `Secure` and expiry dates
//! other than deletion (`Max-Age=0`, an empty value with a past `Expires`) are not tracked.

/// A cookie the script gives (`cookies=`, or `self.client.cookies[name] = value`) goes into a Cookie
/// header as it is: its name and value must be visible ASCII without ';' (a CR or LF would inject).
pub fn check(name: &str, value: &str) -> Result<(), String> {
    if name.is_empty() || !name.bytes().chain(value.bytes()).all(|b| b.is_ascii_graphic() && b != b';') {
        return Err(format!("invalid cookie {name:?}: names and values are visible ASCII without ';'"));
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cookie {
    pub name: String,
    pub value: String,
    /// The host that set it, or the `Domain` it names (without a leading dot).
    pub domain: String,
    /// Set without `Domain`: sent to exactly that host, not its subdomains.
    pub host_only: bool,
}

impl Cookie {
    fn matches(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        host == self.domain || (!self.host_only && host.ends_with(&format!(".{}", self.domain)))
    }
}

#[derive(Debug, Default, Clone)]
pub struct Jar {
    cookies: Vec<Cookie>,
}

impl Jar {
    /// Takes in a response's Set-Cookie header value, from `host`.
    pub fn set_from_header(&mut self, host: &str, header: &str) {
        let mut parts = header.split(';');
        let Some((name, value)) = parts.next().and_then(|p| p.trim().split_once('=')) else { return };
        let (name, value) = (name.trim(), value.trim().trim_matches('"'));
        if name.is_empty() {
            return;
        }
        let (mut domain, mut host_only, mut delete) = (host.to_ascii_lowercase(), true, false);
        for attr in parts {
            let (k, v) = attr.split_once('=').map_or((attr.trim(), ""), |(k, v)| (k.trim(), v.trim()));
            if k.eq_ignore_ascii_case("domain") && !v.is_empty() {
                domain = v.trim_start_matches('.').to_ascii_lowercase();
                host_only = false;
            } else if (k.eq_ignore_ascii_case("max-age") && v.parse::<i64>().is_ok_and(|s| s <= 0))
                || (k.eq_ignore_ascii_case("expires") && expired(v))
            {
                delete = true;
            }
        }
        self.cookies.retain(|c| !(c.name == name && c.domain == domain));
        if !delete {
            self.cookies.push(Cookie { name: name.into(), value: value.into(), domain, host_only });
        }
    }

    /// Sets a cookie from the script (`self.client.cookies[name] = value`): for every host when
    /// `domain` is empty.
    pub fn set(&mut self, name: &str, value: &str, domain: &str) {
        let domain = domain.trim_start_matches('.').to_ascii_lowercase();
        self.cookies.retain(|c| !(c.name == name && c.domain == domain));
        self.cookies.push(Cookie { name: name.into(), value: value.into(), host_only: false, domain });
    }

    /// Removes the cookies named `name` (all of them when None).
    pub fn remove(&mut self, name: Option<&str>) {
        self.cookies.retain(|c| name.is_some_and(|n| n != c.name));
    }

    pub fn all(&self) -> &[Cookie] {
        &self.cookies
    }

    /// The Cookie header value for a request to `host`, with `extra` (the call's own `cookies=`)
    /// replacing jar cookies of the same name; None when there is none.
    pub fn header_for(&self, host: &str, extra: &[(String, String)]) -> Option<String> {
        let mut out = String::new();
        let jar = self
            .cookies
            .iter()
            .filter(|c| (c.domain.is_empty() || c.matches(host)) && !extra.iter().any(|(n, _)| *n == c.name));
        for (name, value) in
            jar.map(|c| (c.name.as_str(), c.value.as_str())).chain(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())))
        {
            if !out.is_empty() {
                out.push_str("; ");
            }
            out.push_str(name);
            out.push('=');
            out.push_str(value);
        }
        (!out.is_empty()).then_some(out)
    }
}

/// Whether an `Expires` date (RFC 1123, as servers send it) lies in the past. Only the year is read:
/// servers that delete a cookie send a date decades ago (often 1970).
fn expired(date: &str) -> bool {
    let year = date.split([' ', '-']).filter_map(|w| w.parse::<i32>().ok()).find(|y| *y > 1000);
    year.is_some_and(|y| y < 2000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_go_back_to_their_host_only() {
        let mut jar = Jar::default();
        jar.set_from_header("a.test", "sid=1; Path=/; HttpOnly");
        jar.set_from_header("a.test", "theme=dark; Domain=.shop.test");
        assert_eq!(jar.header_for("a.test", &[]).as_deref(), Some("sid=1"));
        assert_eq!(jar.header_for("b.test", &[]), None);
        assert_eq!(jar.header_for("www.shop.test", &[]).as_deref(), Some("theme=dark"));
        assert_eq!(jar.header_for("sub.a.test", &[]), None, "host-only");
        // A later value replaces the earlier; Max-Age=0 and a past Expires delete.
        jar.set_from_header("a.test", "sid=2");
        assert_eq!(jar.header_for("a.test", &[("x".into(), "y".into())]).as_deref(), Some("sid=2; x=y"));
        jar.set_from_header("a.test", "sid=; Max-Age=0");
        assert_eq!(jar.header_for("a.test", &[]), None);
        jar.set_from_header("x.test", "k=v");
        jar.set_from_header("x.test", "k=; Expires=Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(jar.header_for("x.test", &[]), None);
        // The call's own cookies win over the jar's of the same name.
        jar.set("sid", "script", "");
        assert_eq!(jar.header_for("any.test", &[("sid".into(), "call".into())]).as_deref(), Some("sid=call"));
    }
}
