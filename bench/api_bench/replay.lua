-- wrk: POST /rides replaying one finished key over and over (the API answers a key it saw
-- finish from memory). Env: BENCH_TOKEN, BENCH_REPLAY_KEY (a key already answered 201).
--
-- Kept light on purpose: no request() and no response() callback, so wrk sends one prebuilt
-- request and never calls into Lua per request (with callbacks wrk was the heaviest process of
-- this run on a 2-core machine). wrk still counts non-2xx answers; done() reports them as
-- "other".
local bench = dofile((os.getenv("BENCH_LUA_DIR") or "bench/api_bench") .. "/common.lua")
local key = os.getenv("BENCH_REPLAY_KEY") or error("BENCH_REPLAY_KEY is not set")

setup = bench.setup
done = bench.done

wrk.method = "POST"
wrk.path = "/rides"
wrk.body = bench.body
wrk.headers["Authorization"] = "Bearer " .. bench.token
wrk.headers["Idempotency-Key"] = key
wrk.headers["Content-Type"] = "application/json"
