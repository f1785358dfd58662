#!/usr/bin/env python3
"""NTLM test peers for AsyncHTTP's tests (started by scripts/test.sh): an origin server and a proxy, both
HTTP/1.1 with keep-alive, verifying NTLM with pyspnego's acceptor (an implementation independent of the
client under test). The accepted users are read by pyspnego from the file named by the environment
variable NTLM_USER_FILE, one `DOMAIN:user:password` line each.

NTLM authenticates a connection, not a request: the type 1 (negotiate) and type 3 (authenticate) messages
must arrive on the same TCP connection, and the connection stays authenticated afterwards (as with IIS and
Squid). Each connection keeps its own acceptor context, so a type 3 on any other connection fails; that is
how tests prove that a client pins the handshake to one connection.

Origin (--origin-port), any method:
  /ntlm/...  no Authorization                        -> 401, WWW-Authenticate: NTLM
             Authorization: NTLM <type 1>            -> 401, WWW-Authenticate: NTLM <type 2>
             Authorization: NTLM <type 3>, same conn -> 200, JSON body (below)
             type 3 without a type 1 on this conn    -> 401, WWW-Authenticate: NTLM (counted: orphanType3)
             wrong password                          -> 401, WWW-Authenticate: NTLM (counted: failed)
             no Authorization on an authenticated connection -> 200 (authenticatedNow: false)
  /stats     JSON counters, no authentication (the request itself is counted as a connection/request)
  200 body: {"authenticated": true, "user": "TESTDOM\\ntlmuser", "method": "GET", "path": "/ntlm/x",
             "connection": 7, "requestsOnConnection": 3, "handshakesOnConnection": 1,
             "authenticatedNow": true, "ntlmResponse": "NTLMv2", "bodyLength": 0}
             (ntlmResponse: NTLMv2, NTLMv1 or LM, from the length of the type 3's NT response; pyspnego's
             acceptor, at its default LM_COMPAT_LEVEL 3, accepts all three)

Proxy (--proxy-port): the same exchange with 407 and Proxy-Authorization / Proxy-Authenticate, then
  absolute-form http:// requests are forwarded (a new upstream connection each time, response buffered,
  Content-Length set, Via: 1.1 asynchttp-ntlm-proxy, X-Proxy-Connection-Id: <n>, X-Proxy-User: <user>);
  CONNECT host:port answers 200 and relays bytes both ways until both sides have closed.
  Only loopback destinations are allowed (403 otherwise). `GET /stats` (origin-form, no authentication)
  returns the proxy's counters.

Every response has a Content-Length (none on 1xx/204/304 and the CONNECT 200). At most --max-connections
connections are served at once; idle keep-alive connections close after --idle-timeout seconds.
"""

import argparse
import base64
import http.client
import ipaddress
import json
import os
import socket
import struct
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import spnego
from spnego.exceptions import SpnegoError

from relay import relay  # scripts/peers/relay.py, next to this file

NTLM_SIGNATURE = b"NTLMSSP\x00"

HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection",
    "te", "trailer", "transfer-encoding", "upgrade",
}


def log(text):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def ntlm_message_type(token):
    """1, 2 or 3 for an NTLM message, None for anything else."""
    if len(token) < 12 or not token.startswith(NTLM_SIGNATURE):
        return None
    return struct.unpack("<I", token[8:12])[0]


def nt_response_kind(token):
    """Which response a type 3 message carries, from the length of its NtChallengeResponse field:
    "NTLMv2" (longer than 24 bytes), "NTLMv1" (24 bytes, also NTLM2 session security) or "LM" (none)."""
    length = struct.unpack_from("<H", token, 20)[0] if len(token) >= 22 else 0
    return "NTLMv2" if length > 24 else "NTLMv1" if length == 24 else "LM"


def is_loopback(host, port):
    try:
        candidates = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(candidates) and all(ipaddress.ip_address(c[4][0].split("%")[0]).is_loopback for c in candidates)


class Stats:
    def __init__(self, *names):
        self._lock = threading.Lock()
        self._counts = {name: 0 for name in names}

    def add(self, name, amount=1):
        with self._lock:
            self._counts[name] += amount
            return self._counts[name]

    def snapshot(self):
        with self._lock:
            return dict(self._counts)


class BoundedThreadingHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most `max_connections` connection threads."""

    daemon_threads = True
    block_on_close = False

    def __init__(self, address, handler, name, max_connections, idle_timeout):
        self.name = name
        self.idle_timeout = idle_timeout
        self.slots = threading.BoundedSemaphore(max_connections)
        self.stats = Stats(
            "connections", "requests", "challenges", "handshakes", "authenticated", "failed", "orphanType3",
            "forwarded", "tunnels",
        )
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        if not self.slots.acquire(timeout=10):
            log("%s: too many connections, closing one from %s:%d" % (self.name, *client_address[:2]))
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address):
        log("%s: connection from %s:%d ended with %r" % (self.name, *client_address[:2], sys.exc_info()[1]))


class NTLMHandler(BaseHTTPRequestHandler):
    """One instance per TCP connection: the NTLM state below belongs to that connection."""

    protocol_version = "HTTP/1.1"
    # Unbuffered reads, so a CONNECT tunnel finds every byte after the request head in the socket itself.
    rbufsize = 0

    # Set by subclasses: origin (401, WWW-*) or proxy (407, Proxy-*).
    status_code = 401
    request_header = "Authorization"
    challenge_header = "WWW-Authenticate"

    def setup(self):
        self.timeout = self.server.idle_timeout
        super().setup()
        self.stats = self.server.stats
        self.connection_number = self.stats.add("connections")
        self.pending = None  # acceptor context between type 1 and type 3
        self.user = None  # principal once this connection has authenticated
        self.response_kind = None  # NTLMv2, NTLMv1 or LM: what the client's type 3 carried
        self.requests_here = 0
        self.handshakes_here = 0

    def version_string(self):
        return "asynchttp-ntlm-peer"

    def log_message(self, format, *args):
        log("%s[conn %d] %s" % (self.server.name, self.connection_number, format % args))

    # --- plumbing ---

    def read_exactly(self, count):
        data = b""
        while len(data) < count:
            part = self.rfile.read(count - len(data))
            if not part:
                raise ConnectionError("client closed inside a request body")
            data += part
        return data

    def read_body(self):
        """The request body (Content-Length or chunked), read completely so the connection stays usable."""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            body = b""
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(8192) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return body
                body += self.read_exactly(size)
                self.read_exactly(2)  # CRLF after the chunk
        return self.read_exactly(int(self.headers.get("Content-Length") or 0))

    def answer(self, status, body=b"", content_type="text/plain; charset=utf-8", headers=()):
        if isinstance(body, str):
            body = body.encode("utf-8")
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def answer_json(self, status, value, headers=()):
        self.answer(status, json.dumps(value, indent=1) + "\n", "application/json", headers)

    # --- NTLM ---

    def challenge(self, token, reason):
        self.stats.add("challenges")
        value = "NTLM " + base64.b64encode(token).decode("ascii") if token else "NTLM"
        self.answer(self.status_code, reason + "\n", headers=[(self.challenge_header, value)])

    def authenticate(self):
        """True if the request may go on (now or earlier on this connection); otherwise the 401/407 is sent."""
        header = self.headers.get(self.request_header)
        if header is None:
            if self.user is not None:
                return True
            self.challenge(None, "NTLM authentication required")
            return False

        scheme, _, value = header.strip().partition(" ")
        token = b""
        if scheme.lower() == "ntlm":
            try:
                token = base64.b64decode(value.strip(), validate=True)
            except ValueError:
                pass
        kind = ntlm_message_type(token)
        self.user = None  # a new Authorization header starts over, whatever happened before

        if kind == 1:
            self.pending = spnego.server(protocol="ntlm", options=spnego.NegotiateOptions.use_ntlm)
            try:
                answer = self.pending.step(token)
            except SpnegoError as error:
                self.pending = None
                self.challenge(None, "bad NTLM type 1 message: %s" % error)
                return False
            self.handshakes_here += 1
            self.stats.add("handshakes")
            self.challenge(answer, "NTLM challenge")
            return False

        if kind == 3:
            context, self.pending = self.pending, None
            if context is None:
                self.stats.add("orphanType3")
                self.log_message("NTLM type 3 without a type 1 on this connection")
                self.challenge(None, "NTLM type 3 message without a type 1 on this connection")
                return False
            try:
                context.step(token)
            except SpnegoError as error:
                self.stats.add("failed")
                self.log_message("NTLM authentication failed: %s", error)
                self.challenge(None, "NTLM authentication failed")
                return False
            self.user = context.client_principal
            self.response_kind = nt_response_kind(token)
            self.authenticated_now = True
            self.stats.add("authenticated")
            self.log_message("NTLM authenticated %s (%s)", self.user, self.response_kind)
            return True

        self.pending = None
        self.challenge(None, "expected NTLM type 1 or type 3 message")
        return False

    # --- dispatch ---

    def handle_any(self):
        self.requests_here += 1
        self.stats.add("requests")
        self.authenticated_now = False
        body = self.read_body()
        self.respond(body)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_CONNECT = handle_any


class OriginHandler(NTLMHandler):
    def respond(self, body):
        path = urllib.parse.urlsplit(self.path).path
        if path == "/stats":
            self.answer_json(200, self.stats.snapshot())
            return
        if not (path == "/ntlm" or path.startswith("/ntlm/")):
            self.answer(404, "not found: only /ntlm/... and /stats\n")
            return
        if not self.authenticate():
            return
        self.answer_json(200, {
            "authenticated": True,
            "user": self.user,
            "method": self.command,
            "path": self.path,
            "connection": self.connection_number,
            "requestsOnConnection": self.requests_here,
            "handshakesOnConnection": self.handshakes_here,
            "authenticatedNow": self.authenticated_now,
            "ntlmResponse": self.response_kind,
            "bodyLength": len(body),
        })


class ProxyHandler(NTLMHandler):
    status_code = 407
    request_header = "Proxy-Authorization"
    challenge_header = "Proxy-Authenticate"

    def respond(self, body):
        if self.command == "CONNECT":
            self.tunnel()
            return
        if self.path.startswith("/"):
            if urllib.parse.urlsplit(self.path).path == "/stats":
                self.answer_json(200, self.stats.snapshot())
            else:
                self.answer(400, "this is a proxy: send absolute-form requests (or GET /stats)\n")
            return
        if not self.authenticate():
            return
        self.forward(body)

    def forward(self, body):
        target = urllib.parse.urlsplit(self.path)
        if target.scheme != "http" or not target.hostname:
            self.answer(400, "only absolute http:// URLs are forwarded (use CONNECT for https)\n")
            return
        port = target.port or 80
        if not is_loopback(target.hostname, port):
            self.answer(403, "only loopback destinations are allowed\n")
            return
        upstream = http.client.HTTPConnection(target.hostname, port, timeout=self.server.idle_timeout)
        try:
            upstream.putrequest(self.command, urllib.parse.urlunsplit(("", "", target.path or "/", target.query, "")),
                                skip_host=True, skip_accept_encoding=True)
            if "Host" not in self.headers:
                upstream.putheader("Host", target.netloc)
            for name, value in self.headers.items():
                if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                    upstream.putheader(name, value)
            if body or self.command in ("POST", "PUT", "PATCH"):
                upstream.putheader("Content-Length", str(len(body)))
            upstream.putheader("Via", "1.1 asynchttp-ntlm-proxy")
            upstream.endheaders(body or None)
            response = upstream.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.answer(502, "upstream %s:%d failed: %r\n" % (target.hostname, port, error))
            return
        finally:
            upstream.close()
        self.stats.add("forwarded")

        self.log_request(response.status)
        self.send_response_only(response.status, response.reason)
        for name, value in response.getheaders():
            if name.lower() not in HOP_BY_HOP and name.lower() != "content-length":
                self.send_header(name, value)
        self.send_header("Via", "1.1 asynchttp-ntlm-proxy")
        self.send_header("X-Proxy-Connection-Id", str(self.connection_number))
        self.send_header("X-Proxy-User", self.user or "")
        no_body = response.status in (204, 304) or 100 <= response.status < 200
        if self.command == "HEAD":
            if response.getheader("Content-Length") is not None:
                self.send_header("Content-Length", response.getheader("Content-Length"))
        elif not no_body:
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD" and not no_body:
            self.wfile.write(payload)

    def tunnel(self):
        host, separator, port = self.path.rpartition(":")
        host = host.strip("[]")
        if not separator or not port.isdigit() or not host:
            self.answer(400, "CONNECT needs host:port\n")
            return
        if not self.authenticate():
            return
        if not is_loopback(host, int(port)):
            self.answer(403, "only loopback destinations are allowed\n")
            return
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError as error:
            self.answer(502, "cannot connect to %s: %s\n" % (self.path, error))
            return
        self.stats.add("tunnels")
        with upstream:
            self.log_request(200)
            self.send_response_only(200, "Connection established")
            self.end_headers()
            self.log_message("tunnel to %s as %s", self.path, self.user)
            relay(self.connection, upstream, self.server.idle_timeout)
        self.close_connection = True


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--origin-port", type=int, required=True)
    parser.add_argument("--proxy-port", type=int, required=True)
    parser.add_argument("--max-connections", type=int, default=64, help="per server")
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    options = parser.parse_args()

    users = os.environ.get("NTLM_USER_FILE", "")
    if not os.path.isfile(users):
        parser.error("set NTLM_USER_FILE to a file of DOMAIN:user:password lines (pyspnego reads it)")

    servers = [
        BoundedThreadingHTTPServer((options.host, options.origin_port), OriginHandler, "origin",
                                   options.max_connections, options.idle_timeout),
        BoundedThreadingHTTPServer((options.host, options.proxy_port), ProxyHandler, "proxy",
                                   options.max_connections, options.idle_timeout),
    ]
    for server in servers:
        log("%s listening on http://%s:%d" % (server.name, *server.server_address[:2]))
        threading.Thread(target=server.serve_forever, name=server.name, daemon=True).start()
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
