-- Moved here from sql/005_cancel_rides.sql by 011; the only definition. `migrate`
-- (re)creates it when this file changes.
-- Stages a ride's receipt job.
CREATE OR REPLACE FUNCTION rides_stage_ride_receipt(p_ride_id bigint, p_amount bigint, p_currency text, p_user_id bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO staged_jobs (job_name, job_args)
    SELECT j.* FROM rides_receipt_job(p_ride_id, p_amount, p_currency, p_user_id) j;
END;
$$;
