-- wrk: POST /rides replaying one finished key over and over (the API answers a key it saw
-- finish from memory). Env: BENCH_TOKEN, BENCH_REPLAY_KEY (a key already answered 201).
local bench = dofile((os.getenv("BENCH_LUA_DIR") or "bench/api_bench") .. "/common.lua")
local key = os.getenv("BENCH_REPLAY_KEY") or error("BENCH_REPLAY_KEY is not set")

setup = bench.setup
done = bench.done

local replay_request

function init(args)
  bench.init_thread()
  replay_request = bench.post(key)
end

function request()
  return replay_request
end

function response(status, headers, body)
  bench.count(status)
end
