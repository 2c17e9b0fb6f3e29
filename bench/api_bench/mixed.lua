-- wrk: POST /rides, 90% with a fresh Idempotency-Key and 10% retrying a recent key whose answer
-- has already arrived (so a retry never meets its own request still in flight: that would be a
-- 409 by design, not a server problem). The API names the key in an Idempotency-Key response
-- header; without it (an older build) a key counts as answered once this thread has sent
-- FALLBACK_LAG more requests after it, which is only nearly safe (key_header=0 in the result).
-- Env: BENCH_TOKEN, BENCH_RUN, BENCH_RETRY_PERCENT (default 10).
local bench = dofile((os.getenv("BENCH_LUA_DIR") or "bench/api_bench") .. "/common.lua")
local retry_fraction = tonumber(os.getenv("BENCH_RETRY_PERCENT") or "10") / 100

setup = bench.setup
done = bench.done

local RECENT = 1000  -- answered keys kept per thread for retries
local recent, recent_count, recent_next = {}, 0, 1
local issued, issued_count = {}, 0  -- fallback: keys in the order this thread sent them
local FALLBACK_LAG = 4096
local header_works = nil  -- unknown until the first response

local function remember(key)
  recent[recent_next] = key
  recent_next = recent_next % RECENT + 1
  if recent_count < RECENT then recent_count = recent_count + 1 end
end

function init(args)
  bench.init_thread()
end

function request()
  if recent_count > 0 and math.random() < retry_fraction then
    retries = retries + 1
    return bench.post(recent[math.random(1, recent_count)])
  end
  local key = bench.new_key()
  if header_works == false then
    issued_count = issued_count + 1
    issued[issued_count] = key
    local old = issued_count - FALLBACK_LAG
    if old >= 1 then
      remember(issued[old])
      issued[old] = nil
    end
  end
  return bench.post(key)
end

function response(status, headers, body)
  bench.count(status)
  local key = bench.key_of(headers)
  if header_works == nil then header_works = key ~= nil end
  if key and status >= 200 and status < 300 then remember(key) end
end
