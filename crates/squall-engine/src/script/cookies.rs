//! Each scripted user's cookie jar, kept in the engine: Set-Cookie of every response (redirect hops
//! included) goes in, and every request carries the cookies whose domain matches its host. Scoping is
//! by domain only (a cookie set by host A is never sent to host B); paths, `Secure` and expiry dates
//! other than deletion (`Max-Age=0`, an empty value with a past `Expires`) are not tracked.
//!
//! Bounded as browsers bound theirs, whatever the servers set (issue 26: a server that set a new
//! cookie on every response made each request carry a 3 MB Cookie header after 300 requests):
//! - a cookie's name and value at most `MAX_COOKIE` bytes together (4,096: RFC 6265bis 5.6, as
//!   Chromium and Firefox), an attribute value at most `MAX_ATTRIBUTE` (1,024, RFC 6265bis); a larger
//!   cookie is ignored, a larger attribute too;
//! - at most `MAX_PER_DOMAIN` cookies a domain (180, Chromium's and Firefox's) and `MAX_COOKIES` in
//!   the jar (3,000, Chromium's): past either, the oldest set (of that domain, or of all) is evicted;
//! - a request's Cookie header at most `MAX_HEADER` bytes (8 KiB, curl's since CVE-2022-32205): the
//!   newest cookies that fit go, older ones stay in the jar but out of that header. The call's own
//!   `cookies=` always go, and leave the jar's cookies the rest.
//!
//! So a user's jar holds at most about 12 MiB (3,000 x 4 KiB), 720 KiB of it a domain, and no
//! request carries more than 8 KiB of the jar's cookies.

/// The most bytes of a cookie's name and value together.
pub const MAX_COOKIE: usize = 4096;
/// The most bytes of an attribute's value (`Domain=...`).
pub const MAX_ATTRIBUTE: usize = 1024;
/// The most cookies a domain.
pub const MAX_PER_DOMAIN: usize = 180;
/// The most cookies in a jar.
pub const MAX_COOKIES: usize = 3000;
/// The most bytes of the jar's cookies in a request's Cookie header.
pub const MAX_HEADER: usize = 8 * 1024;

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
        if name.is_empty() || name.len() + value.len() > MAX_COOKIE {
            return;
        }
        let (mut domain, mut host_only, mut delete) = (host.to_ascii_lowercase(), true, false);
        for attr in parts {
            let (k, v) = attr.split_once('=').map_or((attr.trim(), ""), |(k, v)| (k.trim(), v.trim()));
            if v.len() > MAX_ATTRIBUTE {
                continue;
            }
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
            self.add(Cookie { name: name.into(), value: value.into(), domain, host_only });
        }
    }

    /// Adds a cookie as the newest, evicting the oldest of its domain, or of the jar, past the bounds.
    /// The jar is in the order cookies were set: the oldest first.
    fn add(&mut self, cookie: Cookie) {
        let same = self.cookies.iter().filter(|c| c.domain == cookie.domain).count();
        if same >= MAX_PER_DOMAIN {
            if let Some(i) = self.cookies.iter().position(|c| c.domain == cookie.domain) {
                self.cookies.remove(i);
            }
        }
        if self.cookies.len() >= MAX_COOKIES {
            self.cookies.remove(0);
        }
        self.cookies.push(cookie);
    }

    /// Sets a cookie from the script (`self.client.cookies[name] = value`): for every host when
    /// `domain` is empty.
    pub fn set(&mut self, name: &str, value: &str, domain: &str) {
        let domain = domain.trim_start_matches('.').to_ascii_lowercase();
        self.cookies.retain(|c| !(c.name == name && c.domain == domain));
        self.add(Cookie { name: name.into(), value: value.into(), host_only: false, domain });
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
        let sent = |c: &&Cookie| (c.domain.is_empty() || c.matches(host)) && !extra.iter().any(|(n, _)| *n == c.name);
        let size = |c: &Cookie| c.name.len() + c.value.len() + 3; // name=value; (and a space)
                                                                  // Usually they all fit; else the newest that fit (`MAX_HEADER`, less the call's own).
        let mut room = MAX_HEADER.saturating_sub(extra.iter().map(|(n, v)| n.len() + v.len() + 3).sum());
        let mut fits = vec![];
        if self.cookies.iter().filter(sent).map(size).sum::<usize>() > room {
            fits = vec![false; self.cookies.len()];
            for (i, c) in self.cookies.iter().enumerate().rev().filter(|(_, c)| sent(c)) {
                if size(c) <= room {
                    room -= size(c);
                    fits[i] = true;
                }
            }
        }
        let jar = self.cookies.iter().enumerate().filter(|(i, c)| sent(c) && fits.get(*i).is_none_or(|f| *f));
        for (name, value) in jar
            .map(|(_, c)| (c.name.as_str(), c.value.as_str()))
            .chain(extra.iter().map(|(n, v)| (n.as_str(), v.as_str())))
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

    /// A server that sets a new cookie on every response (issue 26): the jar keeps the newest 180 of
    /// its domain, and a request carries the newest that fit in 8 KiB.
    #[test]
    fn the_jar_and_the_header_are_bounded() {
        let mut jar = Jar::default();
        let value = "v".repeat(100);
        for n in 0..1000 {
            jar.set_from_header("a.test", &format!("c{n}={value}; Path=/"));
        }
        jar.set_from_header("b.test", "other=1");
        let of = |d: &str| jar.all().iter().filter(|c| c.domain == d).count();
        assert_eq!((of("a.test"), of("b.test")), (MAX_PER_DOMAIN, 1));
        assert_eq!(jar.all()[0].name, format!("c{}", 1000 - MAX_PER_DOMAIN), "the oldest went first");
        let header = jar.header_for("a.test", &[]).unwrap();
        assert!(header.len() <= MAX_HEADER && header.len() > MAX_HEADER - 110, "{}", header.len());
        assert!(header.ends_with(&format!("c999={value}")), "the newest go, in the order they were set");
        let sent = header.split("; ").count();
        assert_eq!(header.split("; ").next().unwrap(), format!("c{}={value}", 1000 - sent));
        // The call's own cookies always go, and leave the jar the rest of the 8 KiB.
        let big = vec![("mine".to_string(), "m".repeat(5000))];
        let header = jar.header_for("a.test", &big).unwrap();
        assert!(header.ends_with(&format!("c999={value}; mine={}", big[0].1)));
        assert!(header.len() <= MAX_HEADER && header.len() > MAX_HEADER - 110, "{}", header.len());
        // Over all domains, at most MAX_COOKIES, the oldest evicted.
        let mut jar = Jar::default();
        for n in 0..MAX_COOKIES + 5 {
            jar.set_from_header(&format!("h{}.test", n / 100), &format!("c{n}=1"));
        }
        assert_eq!(jar.all().len(), MAX_COOKIES);
        assert_eq!(jar.all()[0].name, "c5");
    }

    /// As browsers do: a cookie of more than 4,096 bytes is ignored, an attribute above 1,024 too.
    #[test]
    fn a_cookie_or_attribute_too_large_is_ignored() {
        let mut jar = Jar::default();
        jar.set_from_header("a.test", &format!("big={}", "v".repeat(MAX_COOKIE)));
        jar.set_from_header("a.test", &format!("fits={}", "v".repeat(MAX_COOKIE - 4)));
        jar.set_from_header("a.test", &format!("d=1; Domain={}", "x".repeat(MAX_ATTRIBUTE + 1)));
        let names: Vec<(&str, &str)> = jar.all().iter().map(|c| (c.name.as_str(), c.domain.as_str())).collect();
        assert_eq!(names, [("fits", "a.test"), ("d", "a.test")]);
    }
}
