"""Byte relay between two connected sockets, shared by the Python test peers in this directory."""

import selectors
import socket


def relay(a, b, idle_timeout):
    """Copies bytes both ways until both directions have ended, a socket fails, or nothing moved for
    idle_timeout seconds. An end of stream from one side is passed on as a half-close (shutdown of the
    other side's write direction), so request/response protocols that close one way still finish."""
    a.setblocking(False)
    b.setblocking(False)
    peer_of = {a: b, b: a}
    readers = {a, b}
    with selectors.DefaultSelector() as selector:
        for sock in readers:
            selector.register(sock, selectors.EVENT_READ)
        while readers:
            events = selector.select(timeout=idle_timeout)
            if not events:
                return "idle"
            for key, _ in events:
                source = key.fileobj
                try:
                    data = source.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:
                    return "error"
                destination = peer_of[source]
                if not data:
                    selector.unregister(source)
                    readers.discard(source)
                    try:
                        destination.shutdown(socket.SHUT_WR)
                    except OSError:
                        pass
                    continue
                if not _send_all(destination, data, idle_timeout):
                    return "error"
    return "closed"


def _send_all(sock, data, idle_timeout):
    view = memoryview(data)
    with selectors.DefaultSelector() as selector:
        selector.register(sock, selectors.EVENT_WRITE)
        while view:
            try:
                view = view[sock.send(view):]
            except BlockingIOError:
                if not selector.select(timeout=idle_timeout):
                    return False
            except OSError:
                return False
    return True
