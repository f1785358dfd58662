#!/usr/bin/env python3
"""A small SOCKS5 test server for AsyncHTTP's tests (started by scripts/test.sh), standard library only.

RFC 1928 CONNECT (address types IPv4, domain name, IPv6) with either no authentication (method 0x00) or,
when --username/--password are given, only RFC 1929 username/password (method 0x02). BIND and UDP
ASSOCIATE are answered "command not supported" (0x07).

It only connects to loopback addresses (a domain name is resolved here and every address it yields must
be loopback); anything else is refused with 0x02 "connection not allowed by ruleset", so the peer cannot
be used to reach the network.

One line per SOCKS request goes to --log (flushed at once), so tests can check what the client asked for,
e.g. that a socks5h client sent the host name rather than an address it resolved itself:

    CONNECT client=127.0.0.1:50312 user=socksuser atyp=domain target=localhost:8080 reply=0x00 bound=127.0.0.1:41234

At most --max-clients connections are served at once (one thread each); further ones wait up to 10 s for
a free slot and are then closed. A tunnel with no traffic in either direction for --idle-timeout seconds
is closed.
"""

import argparse
import errno
import ipaddress
import socket
import struct
import sys
import threading

from relay import relay  # scripts/peers/relay.py, next to this file

SOCKS_VERSION = 5
AUTH_VERSION = 1  # RFC 1929 subnegotiation version

METHOD_NONE = 0x00
METHOD_USERPASS = 0x02
METHOD_REFUSED = 0xFF

CMD_CONNECT = 0x01

ATYP_IPV4 = 0x01
ATYP_DOMAIN = 0x03
ATYP_IPV6 = 0x04
ATYP_NAMES = {ATYP_IPV4: "ipv4", ATYP_DOMAIN: "domain", ATYP_IPV6: "ipv6"}

REP_SUCCEEDED = 0x00
REP_GENERAL_FAILURE = 0x01
REP_NOT_ALLOWED = 0x02
REP_NETWORK_UNREACHABLE = 0x03
REP_HOST_UNREACHABLE = 0x04
REP_CONNECTION_REFUSED = 0x05
REP_TTL_EXPIRED = 0x06
REP_COMMAND_NOT_SUPPORTED = 0x07
REP_ADDRESS_TYPE_NOT_SUPPORTED = 0x08


class ClientGone(Exception):
    """The client closed or sent something that is not SOCKS5; nothing more can be answered."""


class Log:
    def __init__(self, path):
        self._file = open(path, "a", encoding="utf-8") if path and path != "-" else sys.stdout
        self._lock = threading.Lock()

    def line(self, text):
        with self._lock:
            self._file.write(text + "\n")
            self._file.flush()


def receive_exactly(sock, count):
    data = b""
    while len(data) < count:
        part = sock.recv(count - len(data))
        if not part:
            raise ClientGone("client closed after %d of %d bytes" % (len(data), count))
        data += part
    return data


def encode_address(address):
    """ATYP + BND.ADDR + BND.PORT for a socket address (host, port[, flow, scope])."""
    ip = ipaddress.ip_address(address[0])
    kind = ATYP_IPV4 if ip.version == 4 else ATYP_IPV6
    return bytes([kind]) + ip.packed + struct.pack("!H", address[1])


def reply(sock, code, bound=None):
    sock.sendall(bytes([SOCKS_VERSION, code, 0]) + encode_address(bound or ("0.0.0.0", 0)))


def reply_code_for(error):
    if isinstance(error, socket.gaierror):
        return REP_HOST_UNREACHABLE
    if isinstance(error, (socket.timeout, TimeoutError)):
        return REP_TTL_EXPIRED
    return {
        errno.ECONNREFUSED: REP_CONNECTION_REFUSED,
        errno.ENETUNREACH: REP_NETWORK_UNREACHABLE,
        errno.EHOSTUNREACH: REP_HOST_UNREACHABLE,
        errno.ETIMEDOUT: REP_TTL_EXPIRED,
    }.get(getattr(error, "errno", None), REP_GENERAL_FAILURE)


class Server:
    def __init__(self, options):
        self.options = options
        self.log = Log(options.log)
        self.slots = threading.BoundedSemaphore(options.max_clients)

    def serve(self):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.options.host, self.options.port))
        listener.listen(128)
        mode = "username/password" if self.options.username is not None else "no authentication"
        self.log.line("LISTEN %s:%d %s" % (self.options.host, listener.getsockname()[1], mode))
        while True:
            client, peer = listener.accept()
            if not self.slots.acquire(timeout=10):
                self.log.line("BUSY client=%s:%d closed: %d connections already" % (peer[0], peer[1], self.options.max_clients))
                client.close()
                continue
            threading.Thread(target=self.serve_client, args=(client, peer), daemon=True).start()

    def serve_client(self, client, peer):
        client_name = "%s:%d" % (peer[0], peer[1])
        try:
            client.settimeout(self.options.handshake_timeout)
            user = self.negotiate(client, client_name)
            upstream = self.connect(client, client_name, user)
            if upstream is not None:
                with upstream:
                    relay(client, upstream, self.options.idle_timeout)
        except ClientGone as error:
            self.log.line("CLOSED client=%s %s" % (client_name, error))
        except OSError as error:
            self.log.line("ERROR client=%s %s" % (client_name, error))
        finally:
            client.close()
            self.slots.release()

    def negotiate(self, client, client_name):
        """Method selection and, if configured, RFC 1929 authentication. Returns the user name or '-'."""
        version, count = receive_exactly(client, 2)
        if version != SOCKS_VERSION:
            raise ClientGone("not SOCKS5 (version byte %d)" % version)
        methods = receive_exactly(client, count)
        wanted = METHOD_USERPASS if self.options.username is not None else METHOD_NONE
        if wanted not in methods:
            client.sendall(bytes([SOCKS_VERSION, METHOD_REFUSED]))
            raise ClientGone("no acceptable method: offered %s, need 0x%02x" % (list(methods), wanted))
        client.sendall(bytes([SOCKS_VERSION, wanted]))
        if wanted == METHOD_NONE:
            return "-"

        version, length = receive_exactly(client, 2)
        if version != AUTH_VERSION:
            raise ClientGone("bad username/password subnegotiation version %d" % version)
        username = receive_exactly(client, length).decode("utf-8", "replace")
        (length,) = receive_exactly(client, 1)
        password = receive_exactly(client, length).decode("utf-8", "replace")
        if username != self.options.username or password != self.options.password:
            client.sendall(bytes([AUTH_VERSION, 0x01]))
            self.log.line("AUTH-FAILED client=%s user=%s" % (client_name, username))
            raise ClientGone("authentication failed")
        client.sendall(bytes([AUTH_VERSION, 0x00]))
        return username

    def connect(self, client, client_name, user):
        """Reads the request and answers it; returns the upstream socket after a successful CONNECT."""
        version, command, _, kind = receive_exactly(client, 4)
        if version != SOCKS_VERSION:
            raise ClientGone("request with version byte %d" % version)
        if kind == ATYP_IPV4:
            host = socket.inet_ntop(socket.AF_INET, receive_exactly(client, 4))
        elif kind == ATYP_IPV6:
            host = socket.inet_ntop(socket.AF_INET6, receive_exactly(client, 16))
        elif kind == ATYP_DOMAIN:
            (length,) = receive_exactly(client, 1)
            host = receive_exactly(client, length).decode("ascii", "replace")
        else:
            reply(client, REP_ADDRESS_TYPE_NOT_SUPPORTED)
            self.log.line("REQUEST client=%s user=%s atyp=0x%02x reply=0x%02x"
                          % (client_name, user, kind, REP_ADDRESS_TYPE_NOT_SUPPORTED))
            return None
        (port,) = struct.unpack("!H", receive_exactly(client, 2))
        target = ("[%s]:%d" if ":" in host else "%s:%d") % (host, port)
        entry = "client=%s user=%s atyp=%s target=%s" % (client_name, user, ATYP_NAMES[kind], target)

        if command != CMD_CONNECT:
            reply(client, REP_COMMAND_NOT_SUPPORTED)
            self.log.line("COMMAND-0x%02x %s reply=0x%02x" % (command, entry, REP_COMMAND_NOT_SUPPORTED))
            return None

        code, upstream = self.open_upstream(host, port)
        if upstream is None:
            reply(client, code)
            self.log.line("CONNECT %s reply=0x%02x" % (entry, code))
            return None
        bound = upstream.getsockname()
        reply(client, REP_SUCCEEDED, bound)
        self.log.line("CONNECT %s reply=0x00 bound=%s" % (entry, ("[%s]:%d" if ":" in bound[0] else "%s:%d") % bound[:2]))
        return upstream

    def open_upstream(self, host, port):
        """(reply code, connected socket or None). Only loopback destinations are allowed."""
        try:
            candidates = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as error:
            return reply_code_for(error), None
        if not candidates or not all(ipaddress.ip_address(c[4][0].split("%")[0]).is_loopback for c in candidates):
            return REP_NOT_ALLOWED, None
        last_error = None
        for family, kind, protocol, _, address in candidates:
            upstream = socket.socket(family, kind, protocol)
            upstream.settimeout(self.options.connect_timeout)
            try:
                upstream.connect(address)
                return REP_SUCCEEDED, upstream
            except OSError as error:
                upstream.close()
                last_error = error
        return reply_code_for(last_error), None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--username", help="require RFC 1929 authentication with this user name")
    parser.add_argument("--password", help="and this password")
    parser.add_argument("--log", default="-", help="file for one line per request ('-': standard output)")
    parser.add_argument("--max-clients", type=int, default=64)
    parser.add_argument("--handshake-timeout", type=float, default=10.0)
    parser.add_argument("--connect-timeout", type=float, default=5.0)
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    options = parser.parse_args()
    if (options.username is None) != (options.password is None):
        parser.error("--username and --password go together")
    try:
        Server(options).serve()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
