-- The minimum SQL of one new-key POST /rides, for `pgbench -M prepared` on the product's
-- own schema (sql/, migrated by `rocket-rides-api migrate`): the least work the design
-- allows, against which bench/api_bench.sh measures the API ("pgbench minimum SQL" rows).
--
-- Two READ COMMITTED transactions, each one statement chain, with no transaction across the
-- provider call between them:
--   1. the key (created already locked, with its fencing token, at recovery point ride_created),
--      the ride and its audit record;
--   2. the charge id on the ride, the receipt job staged, the key finished with its 201 and
--      unlocked, fenced by the token. The 201's body is not stored (NULL): it is the ride's own
--      rendering, which every reader of the key renders back from the ride (sql/013), so
--      the least the design allows writes none of its ~300 bytes into the key's final row version.
-- The columns, values and sizes are the product's: the request's params and client address, the
-- receipt job's arguments; the schema's CHECKs, unique indexes, defaults (payment_idempotency_key,
-- jid) and the staged_jobs trigger all run.
-- No token lookup: the API answers it from its cache (0 round trips while cached).
--
-- Expects -D user_id=N (an existing user). pgbench turns every ":name" into a variable, also
-- inside a string literal ("...:null" would become an unset parameter), so the literals that
-- hold ':' are written as U&'' literals with ':' as \003A: the server stores the same text.
-- Keys must be 20 to 255 characters: a negative 19-digit number is 20.
\set key random(-9223372036854775807, -1000000000000000000)
BEGIN ISOLATION LEVEL READ COMMITTED;
WITH k AS (
  INSERT INTO idempotency_keys (user_id, idempotency_key, request_method, request_path, request_params, origin_ip,
                                recovery_point, locked_at, lock_token)
  VALUES (:user_id::bigint, :key::text, 'POST', '/rides',
          U&'{"origin_lat"\003A37.7749,"origin_lon"\003A-122.4194,"target_lat"\003A37.8044,"target_lon"\003A-122.2712}'::jsonb,
          '127.0.0.1', 'ride_created', now(), gen_random_uuid())
  ON CONFLICT (user_id, idempotency_key) DO NOTHING
  RETURNING id, lock_token, payment_idempotency_key
), r AS (
  INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, user_id)
  SELECT k.id, 37.7749, -122.4194, 37.8044, -122.2712, :user_id::bigint FROM k
  RETURNING id, idempotency_key_id
), a AS (
  INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
  SELECT 'create_ride',
         U&'{"origin_lat"\003A37.7749,"origin_lon"\003A-122.4194,"target_lat"\003A37.8044,"target_lon"\003A-122.2712}'::jsonb,
         '127.0.0.1', r.id, 'ride', :user_id::bigint FROM r
)
SELECT k.id AS key_id, k.lock_token, k.payment_idempotency_key, r.id AS ride_id
FROM k JOIN r ON r.idempotency_key_id = k.id \gset
COMMIT;
-- (the API calls the payment provider here, holding no transaction; the charge id stands in for
-- the provider's, unique per key like it)
BEGIN ISOLATION LEVEL READ COMMITTED;
WITH ride AS (
  UPDATE rides SET stripe_charge_id = 'ch_' || :payment_idempotency_key::text WHERE id = :ride_id::bigint
  RETURNING id
), job AS (
  INSERT INTO staged_jobs (job_name, job_args)
  SELECT 'send_ride_receipt',
         jsonb_build_array(jsonb_build_object('amount', 2000, 'currency', 'usd', 'user_id', :user_id::bigint,
                                              'ride_id', ride.id))
  FROM ride
)
UPDATE idempotency_keys
SET recovery_point = 'finished', response_code = 201,
    response_body = NULL,
    locked_at = NULL, lock_token = NULL, last_run_at = now()
WHERE id = :key_id::bigint AND lock_token = :lock_token::uuid;
COMMIT;
