"""Whom the dashboard answers, and whose controls it takes: the defences that keep a web page the user
visits from reading or driving it (docs/dashboard.md: the dashboard's safety; issue 26). A page of another origin can
send a browser's "simple" requests anywhere (a no-cors fetch, a form), and a page whose name it rebinds to
127.0.0.1 (DNS rebinding) is same-origin with the dashboard in the browser's eyes. Jupyter and
webpack-dev-server defend with the checks below; so does squall, each on its own, in depth:

- Host (DNS rebinding): bound to loopback (the default), the dashboard answers a request only if its
  Host (and an absolute request target's authority) is `localhost`, the name it was bound by, or an IP
  address: a rebinding page's Host is the attacker's name, never an address (webpack-dev-server's rule).
  Bound beyond loopback (`--web-host 0.0.0.0`, an interface, a name), it answers every Host: it is then
  reached by names it cannot list (the machine's names, DNS aliases, a proxy's, a Kubernetes Service's,
  the one Prometheus scrapes), as Jupyter answers every Host when it listens beyond loopback. There, a
  rebinding page gets what anyone reaching the port gets: the controls need `--web-auth` (else they are
  disabled), and with it every request needs its credentials, which the browser does not hold for the
  attacker's name. A refused Host is answered 403 before the credentials are asked for, so that the
  browser never prompts for the dashboard's password on the attacker's page.
- Controls (POST): the request must come from the dashboard's own page: `Origin`, when sent, is the
  dashboard's own (`http://` + its Host, or `https://` behind a TLS proxy that keeps the Host), and
  `Sec-Fetch-Site`, when sent, is `same-origin` (another port of localhost is `same-site`, and refused);
  the body is declared `application/json` (a page of another
  origin cannot send that without a CORS preflight, which the dashboard does not grant); and the request
  carries the run's token (`X-Squall-Token`), a random value the page reads from its own HTML, which
  another origin cannot read. Scripts and curl send the JSON type and the token (read from `GET /`).
- Reads (GET): a request from another site's page that is not a top-level navigation (`Sec-Fetch-Site`
  `cross-site` or `same-site` and not `Sec-Fetch-Mode: navigate` to a document) is refused (Fetch
  Metadata's resource isolation); every answer says `Cross-Origin-Resource-Policy: same-origin` and may not
  be framed (`X-Frame-Options: DENY`, `frame-ancestors 'none'`: no clickjacking of the controls). The
  data needs no token: another origin cannot read it (no CORS), a rebinding page is refused by the Host
  rule, and Prometheus, curl and the download links must reach it with a plain GET.
"""

from __future__ import annotations

import hmac
import ipaddress
import secrets
from email.message import Message
from urllib.parse import urlsplit

TOKEN_HEADER = "X-Squall-Token"
# On every answer: never framed (clickjacking), never read by another origin's no-cors request.
HEADERS = {
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "frame-ancestors 'none'",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the dashboard on this machine ('' binds every interface)."""
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str | None:
    """The name of a Host header's value (`name[:port]`, `[v6][:port]`), lowercased; None if malformed."""
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return None
        name, rest = v[1:end], v[end + 1 :]
    else:
        name, sep, port = v.partition(":")
        rest = sep + port
    if rest and not (rest[0] == ":" and rest[1:].isascii() and (rest[1:].isdigit() or rest == ":")):
        return None
    return name[:-1] if name.endswith(".") else name


class Guard:
    """The checks of one dashboard, bound to `bind_host`, with its run's token."""

    def __init__(self, bind_host: str) -> None:
        self.any_host = not is_loopback(bind_host)
        self.names = {"localhost", bind_host.lower().rstrip(".")}
        self.token = secrets.token_urlsafe(24)

    def _allows(self, name: str | None) -> bool:
        if name is None:
            return False
        if name in self.names:
            return True
        try:
            ipaddress.ip_address(name)
        except ValueError:
            return False
        return True

    def host_refusal(self, headers: Message, target: str) -> str | None:
        """Why this request's Host is not answered, or None (see the module's policy)."""
        hosts = headers.get_all("Host") or []
        if len(hosts) > 1:
            return "a request has one Host header"
        try:
            authority = urlsplit(target).netloc if "://" in target[:12] else ""
        except ValueError:
            return "the request target is not a URL"
        if self.any_host:
            return None
        for given in [*hosts, authority.rpartition("@")[2]]:
            if given and not self._allows(_host_name(given)):
                shown = given if given.isprintable() and len(given) <= 100 else repr(given[:100])
                return (
                    f"this dashboard answers localhost and IP addresses, not '{shown}' "
                    "(a page whose name resolves here is refused: DNS rebinding; --web-host widens it)"
                )
        return None

    def read_refusal(self, headers: Message) -> str | None:
        """Why a GET is refused: another site's page loading the dashboard's data (not a navigation)."""
        site = headers.get("Sec-Fetch-Site")
        if site in (None, "same-origin", "none"):
            return None
        if headers.get("Sec-Fetch-Mode") == "navigate" and headers.get("Sec-Fetch-Dest") in (None, "document"):
            return None  # a link to the dashboard from elsewhere opens it
        return "another site's page cannot load this dashboard's data"

    def control_refusal(self, headers: Message) -> tuple[int, str] | None:
        """(status, why) when a control request is not the dashboard's own page's, else None."""
        origins = headers.get_all("Origin")
        if origins is not None:
            host = headers.get("Host", "").strip().lower()
            own = len(origins) == 1 and origins[0].strip().lower() in (f"http://{host}", f"https://{host}")
            if not own or not host:
                return 403, "a page of another origin cannot use this dashboard's controls"
        site = headers.get("Sec-Fetch-Site")
        if site is not None and site != "same-origin":
            return 403, "a page of another origin cannot use this dashboard's controls"
        media = (headers.get("Content-Type") or "").split(";", 1)[0].strip().lower()
        if media != "application/json":
            return 415, "the controls take a JSON body (Content-Type: application/json)"
        given = headers.get(TOKEN_HEADER) or ""
        if not hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode()):
            return 403, f"the controls need this run's token ({TOKEN_HEADER}, in the page): reload the page"
        return None
