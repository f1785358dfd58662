# Client CPU per request (getrusage of the child / requests) for two bench-asynchttp builds, interleaved:
#   Benchmarks/tools/cpu-per-request.py <new-bench-asynchttp> <base-bench-asynchttp> <scenario> <rounds>
# against the nginx of `SERVE=1 Benchmarks/run.sh`. The stable figure on a shared 2-core machine.
import subprocess, resource, json, sys, statistics, os
NEW, BASE = sys.argv[1], sys.argv[2]
sys.argv = [sys.argv[0]] + sys.argv[3:]
CERT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".bench", "cert.pem")
scenario=sys.argv[1]; rounds=int(sys.argv[2])
url="http://127.0.0.1:18080" if not scenario.startswith("tls") else "https://127.0.0.1:18443"
conc="32" if scenario=="conc" else "1"
res={"base":[], "new":[]}
for r in range(rounds):
    for who,b in (("base",BASE),("new",NEW)):
        before=resource.getrusage(resource.RUSAGE_CHILDREN)
        out=subprocess.run([b,"--scenario",scenario,"--url",url,"--concurrency",conc,"--cacert",CERT,"--seconds","4","--requests","2000000"],capture_output=True,text=True).stdout.strip().splitlines()[-1]
        after=resource.getrusage(resource.RUSAGE_CHILDREN)
        j=json.loads(out); cpu=(after.ru_utime-before.ru_utime)+(after.ru_stime-before.ru_stime)
        res[who].append((j["req_per_s"], cpu/j["requests"]*1e6))
for who in res:
    print(who, "req/s median %.0f" % statistics.median(x[0] for x in res[who]), "CPU µs/request median %.2f" % statistics.median(x[1] for x in res[who]), [round(x[1],2) for x in res[who]])
