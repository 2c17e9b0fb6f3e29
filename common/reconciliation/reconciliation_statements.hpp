// The statements of a reconciliation pass, each with its parameters. The ledger tables
// (provider_charges, provider_refunds) are the insert-only record of what the provider was asked
// for; rides and idempotency_keys are what a rebuild writes back.
#pragma once

#include "common/db/statements.hpp"

namespace rr::reconciliation::statements {

// $1 holder, $2 lease seconds. A row back: the lease is ours until the pass ends or it expires.
// A lease taken before an open write fence was closed (expires_at less the lease's length is when
// it was taken) binds nobody: the fence is a restore's, the lease came back with the restored rows,
// and its holder ran against the database that the restore replaced. Left standing, it would keep
// the restore's own pass, and so the writes, waiting for up to the lease's length.
inline const db::Statement kTakeLease{
    "reconcile_take_lease",
    "UPDATE reconciliation_lease SET holder = $1, expires_at = now() + make_interval(secs => $2) "
    "WHERE id = 1 AND (holder IS NULL OR holder = $1 OR expires_at < now() OR expires_at - make_interval(secs => $2) "
    "< (SELECT max(closed_at) FROM write_fences WHERE reopened_at IS NULL)) RETURNING 1"};
// $1 holder, $2 the window end the pass finished (unix seconds) or NULL when it did not finish.
inline const db::Statement kReleaseLease{
    "reconcile_release_lease",
    "UPDATE reconciliation_lease SET holder = NULL, expires_at = NULL, covered_until = CASE WHEN $2::bigint IS NULL "
    "THEN covered_until ELSE GREATEST(covered_until, to_timestamp($2::bigint)) END WHERE id = 1 AND holder = $1"};
// Seconds between now and the newest window end a pass finished; NULL before the first.
inline const db::Statement kLagSeconds{
    "reconcile_lag_seconds",
    "SELECT extract(epoch FROM now() - covered_until)::float8 FROM reconciliation_lease WHERE id = 1"};

// $1 charge id -> ride_id, user_id, amount, currency, the user's stripe_customer_id (NULL: no such user).
inline const db::Statement kChargeLedgerRow{
    "reconcile_charge_ledger_row",
    "SELECT pc.ride_id, pc.user_id, pc.amount, pc.currency, u.stripe_customer_id FROM provider_charges pc "
    "LEFT JOIN users u ON u.id = pc.user_id WHERE pc.stripe_charge_id = $1"};
// $1 refund id -> ride_id, user_id, amount, currency, stripe_charge_id.
inline const db::Statement kRefundLedgerRow{
    "reconcile_refund_ledger_row",
    "SELECT ride_id, user_id, amount, currency, stripe_charge_id FROM provider_refunds WHERE stripe_refund_id = $1"};
// $1 from, $2 to (unix seconds) -> the ledger's charges recorded in the window.
inline const db::Statement kLedgerChargesIn{
    "reconcile_ledger_charges_in",
    "SELECT pc.stripe_charge_id, pc.ride_id, pc.amount, pc.currency, u.stripe_customer_id FROM provider_charges pc "
    "LEFT JOIN users u ON u.id = pc.user_id "
    "WHERE pc.recorded_at >= to_timestamp($1::bigint) AND pc.recorded_at < to_timestamp($2::bigint + 1)"};
inline const db::Statement kLedgerRefundsIn{
    "reconcile_ledger_refunds_in",
    "SELECT stripe_refund_id, ride_id, amount, currency FROM provider_refunds "
    "WHERE recorded_at >= to_timestamp($1::bigint) AND recorded_at < to_timestamp($2::bigint + 1)"};

// $1 user id -> stripe_customer_id.
inline const db::Statement kUserCustomer{"reconcile_user_customer",
                                         "SELECT stripe_customer_id FROM users WHERE id = $1"};
// $1 ride id -> user_id, stripe_charge_id, cancelled_at IS NOT NULL, stripe_refund_id, whether the
// ride's key exists unfinished (its request still running or left to the completer).
inline const db::Statement kRideById{
    "reconcile_ride_by_id",
    "SELECT r.user_id, r.stripe_charge_id, r.cancelled_at IS NOT NULL, r.stripe_refund_id, "
    "EXISTS (SELECT 1 FROM idempotency_keys k WHERE k.id = r.idempotency_key_id AND k.response_code IS NULL) "
    "FROM rides r WHERE r.id = $1"};
// $1 user, $2 client key -> whether the key is unfinished.
inline const db::Statement kKeyOf{
    "reconcile_key_of",
    "SELECT response_code IS NULL FROM idempotency_keys WHERE user_id = $1 AND idempotency_key = $2"};

// Moves a sequence past $2 (never backwards): $1 the sequence's name.
inline const db::Statement kSequencePast{
    "reconcile_sequence_past",
    "SELECT setval($1::text::regclass, GREATEST($2::bigint, (SELECT last_value FROM pg_sequences "
    "WHERE schemaname = current_schema() AND sequencename = $1::text)))"};

// The rebuild of a paid ride whose rows a restore lost, in one transaction (rebuild_ride.cpp):
// the finished key ($1 user, $2 client key, $3 request params JSON, $4 created_at, $5 provider key)
// with its 201 stored as NULL, which every reader renders from the key's ride with the renderer
// named ($6, rides::kCreatedAnswerRenderer: sql/013, sql/019).
inline const db::Statement kInsertFinishedRideKey{
    "reconcile_insert_finished_ride_key",
    "INSERT INTO idempotency_keys (created_at, idempotency_key, last_run_at, locked_at, lock_token, request_method, "
    "request_params, request_path, response_code, response_body, response_renderer, recovery_point, "
    "payment_idempotency_key, user_id) "
    "VALUES ($4::timestamptz, $2, now(), NULL, NULL, 'POST', $3::jsonb, '/rides', 201, NULL, $6, 'finished', $5, $1) "
    "RETURNING id"};
// $1 ride id, $2 created_at, $3 key id, $4..$7 coordinates, $8 charge id, $9 user, $10 params JSON.
inline const db::Statement kInsertRebuiltRide{
    "reconcile_insert_rebuilt_ride",
    "WITH ride AS (INSERT INTO rides (id, created_at, idempotency_key_id, origin_lat, origin_lon, target_lat, "
    "target_lon, stripe_charge_id, user_id) VALUES ($1, $2::timestamptz, $3, $4::numeric, $5::numeric, $6::numeric, "
    "$7::numeric, $8, $9) RETURNING id) "
    "INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id) "
    "SELECT 'reconcile_rebuild_ride', $10::jsonb, '0.0.0.0'::cidr, ride.id, 'ride', $9 FROM ride RETURNING "
    "resource_id"};
// $1 charge id, $2 ride, $3 user, $4 amount, $5 currency.
inline const db::Statement kInsertChargeLedgerRow{
    "reconcile_insert_charge_ledger_row",
    "INSERT INTO provider_charges (stripe_charge_id, ride_id, user_id, amount, currency) VALUES ($1, $2, $3, $4, $5) "
    "ON CONFLICT DO NOTHING"};
// $1 refund id, $2 charge id, $3 ride, $4 user, $5 amount, $6 currency.
inline const db::Statement kInsertRefundLedgerRow{
    "reconcile_insert_refund_ledger_row",
    "INSERT INTO provider_refunds (stripe_refund_id, stripe_charge_id, ride_id, user_id, amount, currency) "
    "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING"};

// A refund the database lost: the ride cancelled with it (only if not cancelled yet), at the
// refund's time, with its audit record. $1 ride, $2 refund id, $3 cancelled at (unix seconds),
// $4 reason or NULL, $5 audit data JSON. Returns the ride as RR_RIDE_VIEW_COLUMNS reads it.
inline const db::Statement kCancelWithLostRefund{
    "reconcile_cancel_with_lost_refund",
    "WITH cancelled AS (UPDATE rides SET cancelled_at = to_timestamp($3::bigint), stripe_refund_id = $2, "
    "cancel_reason = $4 WHERE id = $1 AND cancelled_at IS NULL RETURNING id, user_id), "
    "audit AS (INSERT INTO audit_records (action, data, origin_ip, resource_id, resource_type, user_id) "
    "SELECT 'reconcile_cancel_ride', $5::jsonb, '0.0.0.0'::cidr, id, 'ride', user_id FROM cancelled) "
    "SELECT id FROM cancelled"};
// A ride cancelled without a refund id (the provider said it was refunded already): the id recorded.
inline const db::Statement kRecordRefundId{
    "reconcile_record_refund_id",
    "UPDATE rides SET stripe_refund_id = $2 WHERE id = $1 AND stripe_refund_id IS NULL RETURNING id"};
// $1 ride -> the ride's view (common/rides/ride_response.hpp).
inline const db::Statement kRideView{"reconcile_ride_view",
                                     "SELECT id, origin_lat::float8::text, origin_lon::float8::text, "
                                     "target_lat::float8::text, target_lon::float8::text, stripe_charge_id, "
                                     "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
                                     "to_char(cancelled_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'), "
                                     "stripe_refund_id FROM rides WHERE id = $1"};
// The cancel's finished key: $1 user, $2 client key, $3 params JSON, $4 path, $5 the 200's body.
inline const db::Statement kInsertFinishedCancelKey{
    "reconcile_insert_finished_cancel_key",
    "INSERT INTO idempotency_keys (idempotency_key, locked_at, lock_token, request_method, request_params, "
    "request_path, response_code, response_body, recovery_point, user_id) "
    "VALUES ($2, NULL, NULL, 'POST', $3::jsonb, $4, 200, $5, 'finished', $1) "
    "ON CONFLICT (user_id, idempotency_key) DO NOTHING"};

// $1 kind, $2 provider object, $3 ride, $4 action -> whether that break is recorded already.
inline const db::Statement kBreakRecorded{
    "reconcile_break_recorded",
    "SELECT 1 FROM reconciliation_breaks WHERE kind = $1 AND COALESCE(provider_object_id, '') = COALESCE($2, '') "
    "AND COALESCE(ride_id, 0) = COALESCE($3::bigint, 0) AND action = $4"};
// $1 kind, $2 provider object, $3 ride, $4 action, $5 details JSON: a row back when it is new.
inline const db::Statement kRecordBreak{
    "reconcile_record_break",
    "INSERT INTO reconciliation_breaks (kind, provider_object_id, ride_id, action, details) "
    "VALUES ($1, $2, $3, $4, $5::jsonb) ON CONFLICT DO NOTHING RETURNING id"};
// $1 charge id -> whether reconciliation refunded it (its refund is ours, not a lost cancel).
inline const db::Statement kRefundedByReconciliation{
    "reconcile_refunded_by_reconciliation",
    "SELECT 1 FROM reconciliation_breaks WHERE provider_object_id = $1 AND action = 'refunded'"};

// $1 window start (unix seconds), $2 when the pass started: fences whose window it covered, reopened.
inline const db::Statement kReopenFences{
    "reconcile_reopen_fences",
    "UPDATE write_fences SET reopened_at = now() WHERE reopened_at IS NULL AND reconcile_since >= "
    "to_timestamp($1::bigint) AND closed_at <= to_timestamp($2::float8) RETURNING id, reason"};
// The oldest reconcile_since of the open fences (unix seconds), NULL when none is open.
inline const db::Statement kOpenFenceSince{
    "reconcile_open_fence_since",
    "SELECT floor(extract(epoch FROM min(reconcile_since)))::bigint FROM write_fences WHERE reopened_at IS NULL"};

}  // namespace rr::reconciliation::statements
