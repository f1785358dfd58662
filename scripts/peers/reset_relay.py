#!/usr/bin/env python3
"""A TCP relay that resets a share of the connections it accepts: for the load run's fault half.

    reset_relay.py --listen-port P --target-port T [--reset-fraction 0.1] [--seed 1] [--port-file F]

Listens on 127.0.0.1:P (P=0 picks a free port, written to --port-file) and forwards every accepted
connection to 127.0.0.1:T, both ways, one thread per connection. For a `--reset-fraction` of the accepted
connections (chosen at random), the relay picks a point at random and aborts the client's side there with
an RST (SO_LINGER 0, then close), and closes the upstream side:
  - "accept": at once, before reading anything;
  - "request": after the first request bytes arrived, before forwarding them;
  - "response": after forwarding a random number of response bytes (0 to 16 KiB, so anywhere in the
    first dozen responses of a 1 KiB file: inside a head, inside a body, or between two responses).
Loopback only. Logs one line per reset kind and a summary on SIGTERM/SIGINT to stderr.
"""

import argparse
import random
import selectors
import signal
import socket
import struct
import sys
import threading

counts_lock = threading.Lock()
counts = {"accepted": 0, "reset_accept": 0, "reset_request": 0, "reset_response": 0, "clean": 0}


def bump(key):
    with counts_lock:
        counts[key] += 1


def abort(sock):
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def handle(client, target_port, plan, idle_timeout):
    kind, budget = plan
    if kind == "accept":
        bump("reset_accept")
        abort(client)
        return
    try:
        upstream = socket.create_connection(("127.0.0.1", target_port), timeout=5)
    except OSError:
        abort(client)
        return
    client.setblocking(False)
    upstream.setblocking(False)
    peer = {client: upstream, upstream: client}
    open_readers = {client, upstream}
    forwarded_response = 0
    with selectors.DefaultSelector() as selector:
        selector.register(client, selectors.EVENT_READ)
        selector.register(upstream, selectors.EVENT_READ)
        try:
            while open_readers:
                events = selector.select(timeout=idle_timeout)
                if not events:
                    break
                for key, _ in events:
                    source = key.fileobj
                    try:
                        data = source.recv(65536)
                    except BlockingIOError:
                        continue
                    except OSError:
                        raise ConnectionError
                    if source is client and data and kind == "request":
                        bump("reset_request")
                        abort(client)
                        upstream.close()
                        return
                    if source is upstream and data and kind == "response":
                        room = budget - forwarded_response
                        if len(data) >= room:
                            send_all(client, data[:room])
                            bump("reset_response")
                            abort(client)
                            upstream.close()
                            return
                        forwarded_response += len(data)
                    destination = peer[source]
                    if not data:
                        selector.unregister(source)
                        open_readers.discard(source)
                        try:
                            destination.shutdown(socket.SHUT_WR)
                        except OSError:
                            pass
                        continue
                    send_all(destination, data)
        except (ConnectionError, OSError):
            pass
    bump("clean")
    client.close()
    upstream.close()


def send_all(sock, data):
    view = memoryview(data)
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_WRITE)
        while view:
            try:
                view = view[sock.send(view):]
            except BlockingIOError:
                if not selector.select(timeout=30):
                    raise ConnectionError


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--listen-port", type=int, default=0)
    parser.add_argument("--target-port", type=int, required=True)
    parser.add_argument("--reset-fraction", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--port-file")
    parser.add_argument("--idle-timeout", type=float, default=30.0)
    args = parser.parse_args()
    rng = random.Random(args.seed)

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.listen_port))
    listener.listen(1024)
    port = listener.getsockname()[1]
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write(str(port))
        import os
        os.replace(args.port_file + ".tmp", args.port_file)

    def summary(*_):
        with counts_lock:
            print("reset_relay: " + " ".join(f"{k}={v}" for k, v in counts.items()), file=sys.stderr, flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, summary)
    signal.signal(signal.SIGINT, summary)
    signal.signal(signal.SIGUSR1, lambda *_: print("reset_relay: " + " ".join(f"{k}={v}" for k, v in counts.items()), file=sys.stderr, flush=True))

    while True:
        client, _ = listener.accept()
        bump("accepted")
        if rng.random() < args.reset_fraction:
            kind = rng.choice(["accept", "request", "response", "response"])
            plan = (kind, rng.randrange(0, 16 * 1024))
        else:
            plan = ("none", 0)
        threading.Thread(target=handle, args=(client, args.target_port, plan, args.idle_timeout), daemon=True).start()


if __name__ == "__main__":
    main()
