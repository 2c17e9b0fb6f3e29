"""The data check ("a benchmark that loses data is not a result"): every key answered 201 has its
ride, its charge (known to the stand-in provider, never twice) and exactly one staged receipt job.
Sets the figures keys_201 and data_ok ("1" or "0")."""

import json
import time
import urllib.request

from .base import psql, say

CHECK = r"""
CREATE TEMP TABLE mock_charges (id text, payment_key text);
\copy mock_charges FROM '%s'
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
"""


def check_data(b):
    say("\nchecking the data...")
    time.sleep(2)  # anything still in flight finishes
    with urllib.request.urlopen("http://127.0.0.1:%d/_mock/charges" % b.mock.port, timeout=60) as answer:
        charges = json.load(answer)
    path = b.file("charges.tsv")
    with open(path, "w") as f:
        f.write("".join("%s\t%s\n" % (c["id"], c["idempotency_key"]) for c in charges))
    out = psql(b.database_url, stdin=CHECK % path).strip().splitlines()[-1]
    (keys_201, no_charge, dup_charge, bad_jobs, unknown_charge, double_charge, wrong_charge, mock_charges, unrecorded,
     unfinished, other_finished) = (int(x) for x in out.split("|"))
    say("  keys answered 201: %d; mock charges: %d" % (keys_201, mock_charges))
    say("  201 without a ride or without its charge id: %d" % no_charge)
    say("  charge ids recorded twice: %d" % dup_charge)
    say("  rides of 201 keys without exactly one staged receipt job: %d" % bad_jobs)
    say("  ride charge ids the provider does not know: %d" % unknown_charge)
    say("  payment keys charged more than once: %d" % double_charge)
    say("  charges of a 201 key other than the one on its ride: %d" % wrong_charge)
    say("  (info) charges on no ride: %d; unfinished keys: %d; finished keys not 201: %d" % (
        unrecorded, unfinished, other_finished))
    ok = keys_201 > 0 and no_charge + dup_charge + bad_jobs + unknown_charge + double_charge + wrong_charge == 0
    b.figures["keys_201"] = str(keys_201)
    b.figures["data_ok"] = "1" if ok else "0"
    return ok
