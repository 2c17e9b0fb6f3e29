# Sourced by bench/api_bench.sh: the data check ("a benchmark that loses data is not a result"):
# every key answered 201 has its ride, its charge (known to the stand-in provider, never twice)
# and exactly one staged receipt job. Sets keys_201 and data_ok (1 or 0).
# shellcheck shell=bash
# The parts share their variables: each sets some that the driver or another part reads.
# shellcheck disable=SC2034,SC2154

check_data() {
  echo
  echo "checking the data..."
  sleep 2  # anything still in flight finishes
  curl -sf "http://127.0.0.1:$mock_port/_mock/charges" -o "$dir/charges.json"
  python3 -c '
import json, sys
for c in json.load(open(sys.argv[1])):
    print("%s\t%s" % (c["id"], c["idempotency_key"]))' "$dir/charges.json" >"$dir/charges.tsv"
  local check no_charge dup_charge bad_jobs unknown_charge double_charge wrong_charge mock_charges \
    unrecorded unfinished other_finished
  # The SQL stays at the margin: the heredoc hands it to psql as it stands.
  check=$(sql -F ' ' <<SQL
CREATE TEMP TABLE mock_charges (id text, payment_key text);
\copy mock_charges FROM '$dir/charges.tsv'
WITH created AS (SELECT * FROM idempotency_keys WHERE response_code = 201),
     jobs AS (SELECT (job_args->0->>'ride_id')::bigint AS ride_id, count(*) AS n FROM staged_jobs
              WHERE job_name = 'send_ride_receipt' GROUP BY 1)
SELECT
  (SELECT count(*) FROM created),
  (SELECT count(*) FROM created k LEFT JOIN rides r ON r.idempotency_key_id = k.id
     WHERE r.id IS NULL OR r.stripe_charge_id IS NULL),
  (SELECT count(stripe_charge_id) - count(DISTINCT stripe_charge_id) FROM rides),
  (SELECT count(*) FROM created k JOIN rides r ON r.idempotency_key_id = k.id
     LEFT JOIN jobs j ON j.ride_id = r.id WHERE coalesce(j.n, 0) <> 1),
  (SELECT count(*) FROM rides r WHERE r.stripe_charge_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM mock_charges c WHERE c.id = r.stripe_charge_id)),
  (SELECT count(*) FROM (SELECT payment_key FROM mock_charges GROUP BY 1 HAVING count(*) > 1) d),
  (SELECT count(*) FROM mock_charges c JOIN idempotency_keys k ON k.payment_idempotency_key = c.payment_key
     WHERE k.response_code = 201 AND NOT EXISTS
       (SELECT 1 FROM rides r WHERE r.idempotency_key_id = k.id AND r.stripe_charge_id = c.id)),
  (SELECT count(*) FROM mock_charges),
  (SELECT count(*) FROM mock_charges c WHERE NOT EXISTS
     (SELECT 1 FROM rides r WHERE r.stripe_charge_id = c.id)),
  (SELECT count(*) FROM idempotency_keys WHERE recovery_point <> 'finished'),
  (SELECT count(*) FROM idempotency_keys WHERE response_code IS DISTINCT FROM 201 AND recovery_point = 'finished');
SQL
  )
  read -r keys_201 no_charge dup_charge bad_jobs unknown_charge double_charge wrong_charge mock_charges \
    unrecorded unfinished other_finished <<<"$check"
  printf '  keys answered 201: %d; mock charges: %d\n' "$keys_201" "$mock_charges"
  printf '  201 without a ride or without its charge id: %d\n' "$no_charge"
  printf '  charge ids recorded twice: %d\n' "$dup_charge"
  printf '  rides of 201 keys without exactly one staged receipt job: %d\n' "$bad_jobs"
  printf '  ride charge ids the provider does not know: %d\n' "$unknown_charge"
  printf '  payment keys charged more than once: %d\n' "$double_charge"
  printf '  charges of a 201 key other than the one on its ride: %d\n' "$wrong_charge"
  printf '  (info) charges on no ride: %d; unfinished keys: %d; finished keys not 201: %d\n' \
    "$unrecorded" "$unfinished" "$other_finished"
  data_ok=1
  if [ "$keys_201" -eq 0 ] || [ $((no_charge + dup_charge + bad_jobs + unknown_charge + double_charge + wrong_charge)) -ne 0 ]; then
    data_ok=0
  fi
}
