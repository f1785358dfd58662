"""The least a client can do to upload: one keep-alive connection, the head, then the body from one buffer in
sends of --chunk-kib. Prints MB/s and the sender's CPU seconds per GiB, for comparing send sizes:
`python3 Benchmarks/tools/raw_put.py --chunk-kib 64` against `--chunk-kib 1024`."""
import argparse
import resource
import socket
import time

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, default=18080)
parser.add_argument("--chunk-kib", type=int, default=64)
parser.add_argument("--uploads", type=int, default=16)
args = parser.parse_args()

size = 64 << 20
chunk = args.chunk_kib << 10
body = memoryview(b"x" * size)
sock = socket.create_connection(("127.0.0.1", args.port), timeout=60)
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

before = resource.getrusage(resource.RUSAGE_SELF)
start = time.perf_counter()
for _ in range(args.uploads):
    sock.sendall(b"PUT /dav/raw.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %d\r\n\r\n" % size)
    for offset in range(0, size, chunk):
        sock.sendall(body[offset:offset + chunk])
    head = b""
    while b"\r\n\r\n" not in head:  # nginx's 201/204 to a dav PUT has no body
        data = sock.recv(4096)
        if not data:
            raise SystemExit("nginx closed the connection")
        head += data
    if not head.startswith(b"HTTP/1.1 20"):
        raise SystemExit(f"unexpected response: {head[:60]!r}")
elapsed = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF)
cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
gib = args.uploads * size / 2**30
print(f"chunk {args.chunk_kib} KiB: {round(args.uploads * size / elapsed / 1e6)} MB/s, {cpu / gib:.3f} CPU-s per GiB")
