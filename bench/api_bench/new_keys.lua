-- wrk: POST /rides, every request with a fresh Idempotency-Key (the full new-key path:
-- two transactions and one provider call each). Env: BENCH_TOKEN, BENCH_RUN.
local bench = dofile((os.getenv("BENCH_LUA_DIR") or "bench/api_bench") .. "/common.lua")

setup = bench.setup
done = bench.done

function init(args)
  bench.init_thread()
end

function request()
  return bench.post(bench.new_key())
end

function response(status, headers, body)
  bench.count(status)
end
