-- Prints one JSON line when wrk finishes: totals, answers with a status >= 400 ("Non-2xx
-- or 3xx" in wrk's words), socket errors and latency percentiles in microseconds.
-- There is deliberately no response() hook: wrk would call Lua and build a header table
-- for every answer, and at ~100k answers/s that makes wrk, not the server, the bottleneck.
-- bench/whoami.ts checks separately that one request answers exactly 200 before and
-- after each load run.
-- WRK_METHOD and WRK_BODY (bench/whoami.ts, BENCH_ROUTE=track) make every request a POST
-- with that body; wrk builds the request once, so this costs nothing per request.
wrk.method = os.getenv("WRK_METHOD") or wrk.method
wrk.body = os.getenv("WRK_BODY") or wrk.body

done = function(summary, latency, requests)
  io.write(string.format(
    '{"requests":%d,"durationUs":%d,"statusErrors":%d,"connectErrors":%d,"readErrors":%d,' ..
    '"writeErrors":%d,"timeouts":%d,"p50Us":%d,"p99Us":%d,"maxUs":%d}\n',
    summary.requests, summary.duration, summary.errors.status, summary.errors.connect,
    summary.errors.read, summary.errors.write, summary.errors.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
