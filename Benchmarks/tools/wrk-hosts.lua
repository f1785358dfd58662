-- hosts100's C reference (Benchmarks/run.sh): wrk's connections to 127.0.0.1, each request naming the next of the
-- virtual hosts in its Host field, in turn within each wrk thread. The server does the work it does for the Swift
-- clients (one keep-alive GET of /hosts/1k.bin routed to a name-based server block); wrk keeps one set of
-- connections for every host instead of a pool per host, and resolves no names.
-- Environment: BENCH_HOSTS (100), BENCH_HOSTS_DOMAIN (bench.test), BENCH_HTTP_PORT (18080).
local hosts = tonumber(os.getenv("BENCH_HOSTS") or "100")
local domain = os.getenv("BENCH_HOSTS_DOMAIN") or "bench.test"
local port = os.getenv("BENCH_HTTP_PORT") or "18080"
local requests = {}
for index = 0, hosts - 1 do
    requests[index] = wrk.format("GET", "/hosts/1k.bin", { Host = string.format("h%03d.%s:%s", index, domain, port) })
end
local counter = 0

request = function()
    local next = requests[counter % hosts]
    counter = counter + 1
    return next
end
