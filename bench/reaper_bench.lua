-- wrk script for bench/reaper_bench.sh: POST /rides with a fresh Idempotency-Key per request, so
-- every request is a new key inserted into the table the reaper is deleting from.
local counter = 0
local threads = 0

function setup(thread)
  threads = threads + 1
  thread:set("thread_number", threads)
end

function init(args)
  prefix = string.format("bench-%s-%d-", os.getenv("BENCH_RUN") or "run", thread_number)
  auth = "Bearer " .. os.getenv("BENCH_TOKEN")
end

function request()
  counter = counter + 1
  return wrk.format("POST", "/rides", {
    ["Authorization"] = auth,
    ["Idempotency-Key"] = prefix .. string.format("%012d", counter),
    ["Content-Type"] = "application/x-www-form-urlencoded",
  }, "origin_lat=37.7749&origin_lon=-122.4194&target_lat=37.8044&target_lon=-122.2712")
end
