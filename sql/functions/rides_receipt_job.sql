-- A charged ride's receipt job, the one definition of its name and arguments for every statement
-- that stages one (rides_record_charge_and_finish, rides_record_charges_and_finish,
-- rides_stage_ride_receipt): the worker (Sidekiq's SendRideReceipt) reads these arguments, so a
-- ride charged by a single call, in a batch or by a resumed key gets the same job.
-- One SELECT in SQL, not STRICT, not VOLATILE, no SET: the planner inlines it into the calling
-- statement (`INSERT INTO staged_jobs ... SELECT j.* FROM ..., rides_receipt_job(...) j`), so sharing
-- it costs no call (coalesced_phases_test looks at the plan).
CREATE OR REPLACE FUNCTION rides_receipt_job(p_ride_id bigint, p_amount bigint, p_currency text, p_user_id bigint)
RETURNS TABLE (job_name text, job_args jsonb)
LANGUAGE sql STABLE AS $$
    SELECT 'send_ride_receipt'::text, jsonb_build_array(jsonb_build_object(
        'amount', p_amount, 'currency', p_currency, 'user_id', p_user_id, 'ride_id', p_ride_id))
$$;
