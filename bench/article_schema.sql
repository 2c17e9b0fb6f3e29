-- COPIED VERBATIM below the header from ../shared/perf/schema_example.sql (the seed article's
-- tables, shared by the sessions of this project beside the repository); only this header is new.
-- Why a copy: it is the floor the product's schema and SQL are measured against ("pgbench article minimum SQL"
-- rows of bench/api_bench.sh, loaded into a database of its own, "article", in the bench's
-- throwaway PostgreSQL), and the bench must not read ../shared at run time: CI clones only the
-- repository. Do not edit it to suit the product: a change would move the floor it measures.
--
-- The design's tables (as the seed article describes them), for measuring the database
-- limit with pgbench: same columns, constraints and indexes that a request touches.
CREATE TABLE users (
  id bigserial PRIMARY KEY,
  email text NOT NULL UNIQUE CHECK (char_length(email) <= 255),
  stripe_customer_id text NOT NULL UNIQUE CHECK (char_length(stripe_customer_id) <= 50)
);
CREATE INDEX users_email ON users (email);
CREATE TABLE idempotency_keys (
  id bigserial PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  idempotency_key text NOT NULL CHECK (char_length(idempotency_key) <= 100),
  last_run_at timestamptz NOT NULL DEFAULT now(),
  locked_at timestamptz DEFAULT now(),
  request_method text NOT NULL CHECK (char_length(request_method) <= 10),
  request_params jsonb NOT NULL,
  request_path text NOT NULL CHECK (char_length(request_path) <= 100),
  response_code int,
  response_body jsonb,
  recovery_point text NOT NULL CHECK (char_length(recovery_point) <= 50),
  user_id bigint NOT NULL REFERENCES users (id) ON DELETE RESTRICT
);
CREATE UNIQUE INDEX idempotency_keys_user_id_idempotency_key ON idempotency_keys (user_id, idempotency_key);
CREATE TABLE audit_records (
  id bigserial PRIMARY KEY,
  action text NOT NULL CHECK (char_length(action) <= 50),
  created_at timestamptz NOT NULL DEFAULT now(),
  data jsonb NOT NULL,
  origin_ip cidr NOT NULL,
  resource_id bigint NOT NULL,
  resource_type text NOT NULL CHECK (char_length(resource_type) <= 50),
  user_id bigint NOT NULL REFERENCES users ON DELETE RESTRICT
);
CREATE TABLE rides (
  id bigserial PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now(),
  idempotency_key_id bigint UNIQUE REFERENCES idempotency_keys ON DELETE SET NULL,
  origin_lat numeric(13, 10) NOT NULL,
  origin_lon numeric(13, 10) NOT NULL,
  target_lat numeric(13, 10) NOT NULL,
  target_lon numeric(13, 10) NOT NULL,
  stripe_charge_id text UNIQUE CHECK (char_length(stripe_charge_id) <= 50),
  user_id bigint NOT NULL REFERENCES users ON DELETE RESTRICT
);
CREATE INDEX rides_idempotency_key_id ON rides (idempotency_key_id) WHERE idempotency_key_id IS NOT NULL;
CREATE TABLE staged_jobs (
  id bigserial PRIMARY KEY,
  job_name text NOT NULL,
  job_args jsonb NOT NULL
);
INSERT INTO users (id, email, stripe_customer_id) VALUES (1, 'user@example.com', 'cus_1'), (2, 'user-bad-source@example.com', 'cus_2');
