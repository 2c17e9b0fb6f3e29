-- COPIED VERBATIM below the header from ../shared/perf/minimum_sql_example.sql (the minimum SQL of
-- one new key on the seed article's schema, bench/article_schema.sql); only this header is new.
-- Why a copy: it is the floor the product's schema and SQL are measured against; bench/api_bench.sh runs it
-- with pgbench -M prepared at 32 and 128 clients in the "article" database ("pgbench article
-- minimum SQL" rows), and must not read ../shared at run time: CI clones only the repository.
-- The statements stay as the article wrote them, the users lookup by email in every transaction
-- included (one more round trip and commit per pair than the product's bench/minimum_sql.sql).
--
-- The minimum SQL of one new-key POST /rides, as pgbench replays it for the performance issue's
-- limit: two read-committed transactions, each one statement chain (plus the user lookup).
-- Written against the article's schema (schema_example.sql beside it); run the same shape on the
-- product's own schema in bench/, with the product's columns and constraints.
\set r random(1, 9000000000000000000)
SELECT * FROM users WHERE (email = 'user@example.com') LIMIT 1;
BEGIN ISOLATION LEVEL READ COMMITTED;
WITH k AS (
  INSERT INTO idempotency_keys (idempotency_key, locked_at, recovery_point, request_method, request_params, request_path, user_id)
  VALUES ('pgb2-' || :client_id || '-' || :r, now(), 'ride_created', 'POST',
          '{"origin_lat":0.0,"origin_lon":0.0,"target_lat":0.0,"target_lon":0.0}'::jsonb, '/rides', 1)
  ON CONFLICT (user_id, idempotency_key) DO NOTHING
  RETURNING id
), r AS (
  INSERT INTO rides (idempotency_key_id, origin_lat, origin_lon, target_lat, target_lon, stripe_charge_id, user_id)
  SELECT k.id, 0.0, 0.0, 0.0, 0.0, NULL, 1 FROM k
  RETURNING id, idempotency_key_id
), a AS (
  INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id)
  SELECT 'ride.created', '{"origin_lat":0.0,"origin_lon":0.0,"target_lat":0.0,"target_lon":0.0}'::jsonb, '127.0.0.1', r.id, 'ride', 1 FROM r
  RETURNING id
)
SELECT r.idempotency_key_id AS key_id, r.id AS ride_id FROM r \gset
COMMIT;
BEGIN ISOLATION LEVEL READ COMMITTED;
WITH u AS (
  UPDATE rides SET stripe_charge_id = 'ch_' || :client_id || '_' || :r WHERE id = :ride_id RETURNING id
), j AS (
  INSERT INTO staged_jobs (job_name, job_args) VALUES ('send_ride_receipt', '{"amount":2000,"currency":"usd","user_id":1}'::jsonb) RETURNING id
)
UPDATE idempotency_keys SET locked_at = NULL, response_code = 201,
  response_body = '{"message":"Payment accepted. Your pilot is on their way!"}'::jsonb, recovery_point = 'finished'
  WHERE id = :key_id;
COMMIT;
