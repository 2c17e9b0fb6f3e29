-- Shared by new_keys.lua, replay.lua and mixed.lua (wrk loads each into every thread's Lua state).
-- Counts responses by status per thread and, in done(), prints one machine-readable line:
--   BENCH_RESULT requests=N seconds=S rps=R p50_ms=.. p99_ms=.. s2xx=.. s409=.. s5xx=.. sother=..
--                socket_errors=.. key_header=0|1|-1 retries=..
-- Environment: BENCH_TOKEN (bearer token), BENCH_RUN (a run id that makes keys unique across runs).
local M = {}

M.token = os.getenv("BENCH_TOKEN") or error("BENCH_TOKEN is not set")
M.run = os.getenv("BENCH_RUN") or tostring(os.time())
M.body = '{"origin_lat":37.7749,"origin_lon":-122.4194,"target_lat":37.8044,"target_lon":-122.2712}'

local threads = {}
local next_id = 1

-- Main state: number each thread and keep it to read its counters in done().
function M.setup(thread)
  thread:set("thread_id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

-- Thread state: counters live in globals so the main state can read them with thread:get().
s2xx, s409, s5xx, sother, retries, key_header_seen, key_header_missing = 0, 0, 0, 0, 0, 0, 0
local serial = 0

function M.init_thread()
  math.randomseed(os.time() * 1000 + (thread_id or 0) * 7919 + math.floor(os.clock() * 1e6))
end

-- A key no other request of this run or any other run uses: run id, thread, serial, and random
-- hex; at least 20 characters, about as long as a UUID.
function M.new_key()
  serial = serial + 1
  return string.format("bench-%s-%d-%d-%08x%08x", M.run, thread_id or 0, serial, math.random(0, 0x7fffffff),
                       math.random(0, 0x7fffffff))
end

function M.post(key)
  return wrk.format("POST", "/rides", {
    ["Authorization"] = "Bearer " .. M.token,
    ["Idempotency-Key"] = key,
    ["Content-Type"] = "application/json",
  }, M.body)
end

function M.count(status)
  if status >= 200 and status < 300 then
    s2xx = s2xx + 1
  elseif status == 409 then
    s409 = s409 + 1
  elseif status >= 500 then
    s5xx = s5xx + 1
  else
    sother = sother + 1
  end
end

-- The Idempotency-Key a response names (the API echoes it), or nil.
function M.key_of(headers)
  local key = headers["Idempotency-Key"] or headers["idempotency-key"]
  if key then
    key_header_seen = key_header_seen + 1
  else
    key_header_missing = key_header_missing + 1
  end
  return key
end

function M.done(summary, latency, requests)
  local totals = {s2xx = 0, s409 = 0, s5xx = 0, sother = 0, retries = 0, seen = 0, missing = 0}
  for _, thread in ipairs(threads) do
    totals.s2xx = totals.s2xx + (thread:get("s2xx") or 0)
    totals.s409 = totals.s409 + (thread:get("s409") or 0)
    totals.s5xx = totals.s5xx + (thread:get("s5xx") or 0)
    totals.sother = totals.sother + (thread:get("sother") or 0)
    totals.retries = totals.retries + (thread:get("retries") or 0)
    totals.seen = totals.seen + (thread:get("key_header_seen") or 0)
    totals.missing = totals.missing + (thread:get("key_header_missing") or 0)
  end
  local e = summary.errors
  local socket_errors = e.connect + e.read + e.write + e.timeout
  if totals.s2xx + totals.s409 + totals.s5xx + totals.sother == 0 and summary.requests > 0 then
    -- A script without a response() callback (replay.lua keeps wrk light): wrk's own count of
    -- non-2xx/3xx answers is all there is, reported as "other".
    totals.sother = e.status
    totals.s2xx = summary.requests - e.status
  end
  local seconds = summary.duration / 1e6
  local key_header = -1  -- not looked at
  if totals.seen > 0 and totals.missing == 0 then
    key_header = 1
  elseif totals.missing > 0 then
    key_header = 0
  end
  io.write(string.format(
    "BENCH_RESULT requests=%d seconds=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f s2xx=%d s409=%d s5xx=%d sother=%d " ..
      "socket_errors=%d key_header=%d retries=%d\n",
    summary.requests, seconds, summary.requests / seconds, latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, totals.s2xx, totals.s409, totals.s5xx, totals.sother, socket_errors, key_header,
    totals.retries))
end

return M
