#!/usr/bin/env python3
# Connect time with one dead address (issue 20): a name whose first address, [::1]:P, is black-holed (a listener
# whose accept queue is full, so the kernel drops further SYNs, as a firewall would) and whose second,
# 127.0.0.1:P, serves. The name is put in a private /etc/hosts with `unshare --mount` (nothing on the machine
# changes). Each client given is run three times and timed:
#   Benchmarks/tools/happy-eyeballs-connect.py <old ahttp> <new ahttp> curl
import http.server, os, socket, subprocess, sys, tempfile, threading, time

hosts = tempfile.NamedTemporaryFile("w", suffix=".hosts", delete=False)
hosts.write("::1 dual.test\n127.0.0.1 dual.test\n127.0.0.1 localhost\n")
hosts.close()

hole = socket.socket(socket.AF_INET6)
hole.bind(("::1", 0))
hole.listen(0)
port = hole.getsockname()[1]
fillers = []
for _ in range(4):  # fill the accept queue: later SYNs are dropped
    filler = socket.socket(socket.AF_INET6)
    filler.setblocking(False)
    try:
        filler.connect(("::1", port))
    except BlockingIOError:
        pass
    fillers.append(filler)

class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

server = http.server.HTTPServer(("127.0.0.1", port), Quiet)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://dual.test:{port}/"
for client in sys.argv[1:]:
    for _ in range(3):
        start = time.time()
        run = subprocess.run(["unshare", "--mount", "sh", "-c", 'mount --bind "$0" /etc/hosts && exec "$@"', hosts.name,
                              client, "-s", "-o", "/dev/null", "-w", "%{http_code}", url],
                             capture_output=True, text=True, timeout=120)
        print(f"{client}: exit {run.returncode}, status {run.stdout or '-'}, {time.time() - start:.3f} s")
os.unlink(hosts.name)
