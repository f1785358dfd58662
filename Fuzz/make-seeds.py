#!/usr/bin/env python3
"""Writes the seed corpus Fuzz/corpus/<target>/ (checked in; run again after changing it).

Each file is one libFuzzer input in the target's format (docs/fuzzing.md): the parser, chunked and
inflate targets start with a configuration byte; the string targets separate parts with 0x00."""
import gzip, hashlib, os, zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    folder = os.path.join(ROOT, target)
    os.makedirs(folder, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


CRLF = "\r\n"
heads = [
    "HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Tue, 24 Nov 2026 15:00:00 GMT\r\nContent-Type: text/html\r\n"
    "Content-Length: 5\r\nLast-Modified: Mon, 01 Jan 2024 00:00:00 GMT\r\nConnection: keep-alive\r\n"
    'ETag: "65920080-5"\r\nAccept-Ranges: bytes\r\n\r\nhello',
    "HTTP/1.1 204 No Content\r\nKeep-Alive: timeout=5, max=100\r\n\r\n",
    "HTTP/1.1 304 Not Modified\r\nETag: x\r\nContent-Length: 10\r\n\r\n",
    "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close",
    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
    "HTTP/1.1 201 Created\r\nLocation: /items/1\r\nContent-Length: 2\r\n\r\nok",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n",
    "HTTP/1.1 200 OK\nContent-Length: 3\nX-Folded: a\n  b\n\nabc",
    "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd",
    "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n1\r\nx\r\n0\r\n\r\n",
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    "HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01",
    "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Digest realm=\"r\", nonce=\"n\", qop=\"auth\"\r\n"
    "Content-Length: 0\r\n\r\n",
    "HTTP/1.1 302 Found\r\nLocation: https://example.com/\r\nSet-Cookie: a=b; Path=/\r\nSet-Cookie: c=d\r\n"
    "Content-Length: 0\r\nConnection: close\r\n\r\n",
]
# Config byte: bits 0-1 method (GET, HEAD, CONNECT, POST), bit 2 close at end, bits 3-4 limits.
for i, head in enumerate(heads):
    write("FuzzResponseParser", bytes([0]) + head.encode("latin-1"))
    write("FuzzResponseParser", bytes([4 | (i % 4) << 3]) + head.encode("latin-1"))
# Two responses on one connection, the second reusing the first's fields.
write("FuzzResponseParser", b"\x00" + (heads[0] + heads[0].replace("hello", "HELLO")).encode())
write("FuzzResponseParser", b"\x01" + heads[0].split("hello")[0].encode() + heads[1].encode())
write("FuzzResponseParser", b"\x02" + heads[12].encode("latin-1"))

chunked = [
    "5\r\nhello\r\n0\r\n\r\n",
    "1;a=b;c=\"d\"\r\nx\r\n0\r\nTrailer-A: 1\r\nTrailer-B: 2\r\n\r\n",
    "A\r\n0123456789\r\nff\r\n" + "y" * 255 + "\r\n0\r\n\r\n",
    "3\nabc\n0\n\n",
    "0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz",
    "4 \r\nabcd\r\n0\r\n\r\n",
    "fffffffffffffffff\r\n",
    "-1\r\n",
    "2\r\nab\r\n0\r\n",
]
for c in chunked:
    write("FuzzChunked", b"\x00" + c.encode())
    write("FuzzChunked", b"\x04" + c.encode())

urls = [
    ("https://api.example.com/v1/items?page=2", "../v2/items"),
    ("http://a/b/c/d;p?q", "g;x?y#s"),
    ("http://a/b/c/d;p?q", "../../../g"),
    ("http://a/b/c/d;p?q", "//g"),
    ("http://a/b/c/d;p?q", "?y"),
    ("http://a/b/c/d;p?q", ""),
    ("http://a/b/c/d;p?q", "http:g"),
    ("https://user:p%40ss@example.com:8443/a/B%20c;p?x=1&y=%2F#frag", "/./x/../y"),
    ("http://[2001:db8::1]:8080/x", "https://[::ffff:192.0.2.1]/"),
    ("http://127.0.0.1/", "http://%C3%BC:a:b@a/"),
    ("HTTP://EXAMPLE.COM:80", "mailto:x@y"),
    ("http://xn--bcher-kva.example/", "./%2e%2E/a"),
]
for base, reference in urls:
    write("FuzzURL", base + "\0" + reference)

cookies = [
    "sid=31d4d96e407aad42; Path=/; Secure; HttpOnly",
    "lang=en-US; Expires=Wed, 09 Jun 2021 10:18:14 GMT",
    "a=b; Max-Age=3600; Domain=.example.co.uk; SameSite=Lax",
    "__Host-id=1; Secure; Path=/",
    "__Secure-x=y; Secure; Domain=example.co.uk; SameSite=None",
    "n=v; expires=Sunday, 06-Nov-94 08:49:37 GMT; path=/a",
    "n=v; Expires=Sun Nov  6 08:49:37 1994",
    "x=\"quoted value\"; Max-Age=-1",
    "Thu, 01-Jan-70 00:00:01 GMT",
    "weird=1; domain=b\xc3\xbccher.example; path=",
    "c=d\0www.example.com\0/account/login",
]
for c in cookies:
    write("FuzzCookie", c.encode())

challenges = [
    'Basic realm="WallyWorld", charset="UTF-8"',
    'Digest realm="http-auth@example.org", qop="auth, auth-int", algorithm=SHA-256, '
    'nonce="7ypf/xlj9XXwfDPEoM4URrv/xwf94BcCAzFZH4GiTo0v", opaque="FQhe/qaU925kfnzjCev0ciny7QMkPqMAFRtzCUYo5tdS"',
    "NTLM TlRMTVNTUAACAAAADAAMADAAAAA1AoEAASNFZ4mrze8=",
    "Negotiate, NTLM\0Basic realm=x",
    'Bearer realm="example", error="invalid_token", error_description="The access token expired"',
    'Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"',
    "Basic realm=unquoted, , Digest",
]
for c in challenges:
    write("FuzzAuthChallenge", c)

hosts = [
    "www.example.com", "example.co.uk", "a.b.example.co.uk", "kawasaki.jp", "city.kawasaki.jp",
    "a.b.kawasaki.jp", "www.ck", "a.www.ck", "com", "localhost", "b\u00fccher.de", "\u98df\u72ee.\u516c\u53f8.cn",
    "xn--85x722f.xn--55qx5d.cn", "github.io", "user.github.io", "EXAMPLE.COM", "a..b", ".com", "example.com.",
    "192.168.0.1", "\u4f8b\u5b50\u3002\u4e2d\u56fd",
]
for h in hosts:
    write("FuzzPublicSuffix", h)

text = b"".join(b'{"id": %d, "name": "item %d", "tags": ["a", "b"]},\n' % (i, i) for i in range(60))
# Config byte: bit 0 deflate, bits 1-3 small buffer, bits 4-6 maxBytes (1-8 KiB).
write("FuzzInflate", bytes([0x70]) + gzip.compress(text, mtime=0))
write("FuzzInflate", bytes([0x72]) + gzip.compress(b"hello") + gzip.compress(b" world") + b"\0\0")
write("FuzzInflate", bytes([0x04]) + gzip.compress(text, mtime=0))  # over 1 KiB: the limit
write("FuzzInflate", bytes([0x71]) + zlib.compress(text))
raw = zlib.compressobj(6, zlib.DEFLATED, -15)
write("FuzzInflate", bytes([0x73]) + raw.compress(text) + raw.flush())
write("FuzzInflate", bytes([0x70]) + gzip.compress(b"\0" * 100000, mtime=0))  # a small bomb
write("FuzzInflate", bytes([0x70]) + gzip.compress(b"truncated body", mtime=0)[:-6])
write("FuzzInflate", bytes([0x00]))
