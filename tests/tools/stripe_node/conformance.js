// Conformance of the stand-in provider with the official Stripe client library (stripe-node):
// starts rocket-rides-stripe-mock (through tools/rrsuite), drives the real library against it through the cases a
// payments backend meets (replays, mismatches, declines, bad keys, the library's own retries
// over 500s, dropped connections and timeouts, refunds), and checks what the library makes of
// every answer, lastResponse.requestId included. Plain Node (18 and later), no test framework:
// run by tests/tools/stripe_node/run.sh, which installs the pinned library. Prints one line per case;
// exits 1 if any failed.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {up} = require('../../support/rrsuite.js');

const Stripe = require('stripe');

const mockBinary = process.env.ROCKET_RIDES_STRIPE_MOCK;
const expectedVersion = process.env.STRIPE_NODE_VERSION;
const apiKey = 'sk_test_conformance_4242';

// --- the stand-in provider, really started -------------------------------------------------

// Through the suites' process package: on a free port, ready once /_mock/stats answers; stop()
// returns the problems (an exit other than 0 on SIGTERM among them).
async function startMock() {
  const shape = await up('provider', ['--bin-dir', path.dirname(mockBinary), '--stripe-key', apiKey, '--seed', '18',
    '--log-dir', fs.mkdtempSync(path.join(os.tmpdir(), 'rocket-rides-stripe-node-'))]);
  return {port: shape.provider_port, stop: shape.stop, logDir: shape.log_dir};
}

function admin(port, method, urlPath, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    const request = http.request(
        {host: '127.0.0.1', port, method, path: urlPath, headers: {'Content-Type': 'application/json'}},
        (response) => {
          let text = '';
          response.on('data', (chunk) => (text += chunk));
          response.on('end', () => {
            if (response.statusCode !== 200) reject(new Error(`${method} ${urlPath}: ${response.statusCode} ${text}`));
            else resolve(JSON.parse(text));
          });
        });
    request.on('error', reject);
    request.end(data);
  });
}

// --- assertions shared by the cases -----------------------------------------------------------

// What the library read from the answer: Stripe's request id, and the version it asked for.
function assertAnswerHeaders(lastResponse, what) {
  assert.ok(lastResponse, `${what}: no lastResponse`);
  assert.equal(typeof lastResponse.requestId, 'string', `${what}: lastResponse.requestId is undefined`);
  assert.match(lastResponse.requestId, /^req_[A-Za-z0-9]{14}$/, `${what}: requestId`);
  assert.equal(lastResponse.apiVersion, Stripe.API_VERSION, `${what}: Stripe-Version not echoed`);
}

function assertErrorRequestId(error, what) {
  assert.equal(typeof error.requestId, 'string', `${what}: error.requestId is undefined`);
  assert.match(error.requestId, /^req_/, `${what}: error.requestId`);
  assert.equal(error.headers['stripe-version'], Stripe.API_VERSION, `${what}: Stripe-Version on the error`);
}

async function rejection(promise, what) {
  try {
    const value = await promise;
    assert.fail(`${what}: expected an error, got ${JSON.stringify(value).slice(0, 200)}`);
  } catch (error) {
    if (error instanceof assert.AssertionError) throw error;
    return error;
  }
}

// Every id once, in the expected order (newest first).
function assertListed(ids, expected, what) {
  assert.equal(new Set(ids).size, ids.length, `${what}: an object listed twice`);
  assert.equal(ids.length, expected.length, `${what}: ${ids.length} listed, ${expected.length} made`);
  assert.deepEqual(ids, expected, `${what}: not newest first`);
}

// Waits for the next second and returns it: everything made from now on has created >= it, and
// what earlier cases made has created < it.
async function nextSecond() {
  const next = Math.floor(Date.now() / 1000) + 1;
  await new Promise((resolve) => setTimeout(resolve, next * 1000 - Date.now() + 5));
  return next;
}

function key(name) {
  return `conformance-${name}-${process.pid}-${Date.now()}`;
}

// --- the cases ---------------------------------------------------------------------------------

function cases(mock) {
  const options = {host: '127.0.0.1', port: mock.port, protocol: 'http', telemetry: false};
  const stripe = new Stripe(apiKey, {...options, maxNetworkRetries: 0});
  const stats = () => admin(mock.port, 'GET', '/_mock/stats');
  const configure = (faults) => admin(mock.port, 'POST', '/_mock/config', faults);
  const ride = (extra = {}) => ({amount: 2000, currency: 'usd', customer: 'cus_conformance', ...extra});
  const chargeWithRetries = async (retries, params, requestOptions = {}) =>
    new Stripe(apiKey, {...options, maxNetworkRetries: retries}).charges.create(params, requestOptions);
  // `count` charges of `customer`, oldest first, each with its number as metadata n.
  const makeCharges = async (count, customer) => {
    const made = [];
    for (let n = 0; n < count; n += 1) {
      made.push(await stripe.charges.create(ride({customer, amount: 1000 + n, metadata: {n: String(n)}})));
    }
    return made;
  };

  return [
    ['a customer is created, echoes its metadata and is retrieved', async () => {
      const customer = await stripe.customers.create(
          {email: 'rider@example.com', name: 'Ada Rider', metadata: {rider_id: '7'}});
      assertAnswerHeaders(customer.lastResponse, 'customers.create');
      assert.match(customer.id, /^cus_/);
      assert.equal(customer.object, 'customer');
      assert.equal(customer.email, 'rider@example.com');
      assert.equal(customer.livemode, false);
      assert.deepEqual(customer.metadata, {rider_id: '7'});
      assert.equal(customer.balance, 0);
      assert.equal(customer.delinquent, false);
      const again = await stripe.customers.retrieve(customer.id);
      assertAnswerHeaders(again.lastResponse, 'customers.retrieve');
      assert.equal(again.name, 'Ada Rider');
    }],

    ['a charge carries the fields of the API reference', async () => {
      const charge = await stripe.charges.create(ride({description: 'Rocket Rides ride', metadata: {ride_id: '42'}}));
      assertAnswerHeaders(charge.lastResponse, 'charges.create');
      assert.match(charge.id, /^ch_/);
      assert.equal(charge.object, 'charge');
      assert.equal(charge.amount, 2000);
      assert.equal(charge.amount_captured, 2000);
      assert.equal(charge.amount_refunded, 0);
      assert.equal(charge.currency, 'usd');
      assert.equal(charge.customer, 'cus_conformance');
      assert.equal(charge.description, 'Rocket Rides ride');
      assert.ok(Math.abs(charge.created - Date.now() / 1000) < 300, 'created is now, in epoch seconds');
      assert.deepEqual(charge.metadata, {ride_id: '42'});
      assert.equal(charge.livemode, false);
      assert.equal(charge.paid, true);
      assert.equal(charge.captured, true);
      assert.equal(charge.refunded, false);
      assert.equal(charge.status, 'succeeded');
      assert.match(charge.balance_transaction, /^txn_/);
      assert.deepEqual(Object.keys(charge.outcome).sort(),
          ['network_status', 'reason', 'risk_level', 'risk_score', 'seller_message', 'type']);
      assert.equal(charge.outcome.type, 'authorized');
      assert.equal(charge.outcome.network_status, 'approved_by_network');
      assert.match(charge.receipt_url, /^https:\/\//);
      assert.equal(charge.failure_code, null);
      assert.equal(charge.failure_message, null);
      assert.match(charge.payment_method, /^card_/);
      assert.equal(charge.payment_method_details.type, 'card');
      assert.equal(charge.payment_method_details.card.last4, '4242');
      assert.equal(charge.source.id, charge.payment_method);
      assert.deepEqual(charge.refunds,
          {object: 'list', data: [], has_more: false, total_count: 0, url: `/v1/charges/${charge.id}/refunds`});
      assert.equal(charge.lastResponse.headers['content-type'], 'application/json');
    }],

    ['the same idempotency key replays the same charge', async () => {
      const idempotencyKey = key('replay');
      const before = await stats();
      const first = await stripe.charges.create(ride(), {idempotencyKey});
      const second = await stripe.charges.create(ride(), {idempotencyKey});
      assertAnswerHeaders(second.lastResponse, 'replay');
      assert.equal(second.id, first.id);
      assert.equal(second.lastResponse.idempotencyKey, idempotencyKey);
      assert.equal(second.lastResponse.headers['idempotent-replayed'], 'true');
      assert.equal(second.lastResponse.headers['original-request'], first.lastResponse.requestId);
      assert.notEqual(second.lastResponse.requestId, first.lastResponse.requestId);
      const after = await stats();
      assert.equal(after.charges - before.charges, 1);
    }],

    ['the same key with other parameters is a StripeIdempotencyError', async () => {
      const idempotencyKey = key('mismatch');
      await stripe.charges.create(ride(), {idempotencyKey});
      const error = await rejection(stripe.charges.create(ride({amount: 2500}), {idempotencyKey}), 'mismatch');
      assert.ok(error instanceof Stripe.errors.StripeIdempotencyError, `got ${error.type}: ${error.message}`);
      assert.equal(error.statusCode, 400);
      assert.equal(error.rawType, 'idempotency_error');
      assertErrorRequestId(error, 'mismatch');
    }],

    ['a decline is a StripeCardError naming the failed charge', async () => {
      const error = await rejection(stripe.charges.create(ride({customer: 'cus_declined_1'})), 'decline');
      assert.ok(error instanceof Stripe.errors.StripeCardError, `got ${error.type}: ${error.message}`);
      assert.equal(error.statusCode, 402);
      assert.equal(error.code, 'card_declined');
      assert.equal(error.decline_code, 'generic_decline');
      assert.equal(error.message, 'Your card was declined.');
      assert.match(error.doc_url, /^https:\/\/stripe\.com\/docs\/error-codes\/card-declined$/);
      assertErrorRequestId(error, 'decline');
      assert.match(error.charge, /^ch_/);
      const failed = await stripe.charges.retrieve(error.charge);
      assertAnswerHeaders(failed.lastResponse, 'retrieve declined');
      assert.equal(failed.status, 'failed');
      assert.equal(failed.paid, false);
      assert.equal(failed.captured, false);
      assert.equal(failed.failure_code, 'card_declined');
      assert.equal(failed.failure_message, 'Your card was declined.');
      assert.equal(failed.outcome.type, 'issuer_declined');
      assert.equal(failed.outcome.reason, 'generic_decline');
      assert.equal(failed.balance_transaction, null);
    }],

    ['a wrong API key is a StripeAuthenticationError', async () => {
      const wrong = new Stripe('sk_test_wrong_key_9999', {...options, maxNetworkRetries: 0});
      const error = await rejection(wrong.charges.create(ride()), 'bad key');
      assert.ok(error instanceof Stripe.errors.StripeAuthenticationError, `got ${error.type}: ${error.message}`);
      assert.equal(error.statusCode, 401);
      assert.match(error.message, /^Invalid API Key provided: .*9999$/);
      assert.ok(!error.message.includes('sk_test_wrong_key_9999'), 'the whole key is never echoed');
      assertErrorRequestId(error, 'bad key');
    }],

    ['a missing parameter and an unknown charge are StripeInvalidRequestErrors', async () => {
      const missing = await rejection(stripe.charges.create({amount: 2000, customer: 'cus_x'}), 'missing');
      assert.ok(missing instanceof Stripe.errors.StripeInvalidRequestError, `got ${missing.type}`);
      assert.equal(missing.statusCode, 400);
      assert.equal(missing.code, 'parameter_missing');
      assert.equal(missing.param, 'currency');
      assertErrorRequestId(missing, 'missing');
      const unknown = await rejection(stripe.charges.retrieve('ch_does_not_exist'), 'unknown charge');
      assert.ok(unknown instanceof Stripe.errors.StripeInvalidRequestError, `got ${unknown.type}`);
      assert.equal(unknown.statusCode, 404);
      assert.equal(unknown.code, 'resource_missing');
      assertErrorRequestId(unknown, 'unknown charge');
    }],

    ['the library retries 500s with its own key and gets one charge', async () => {
      const before = await stats();
      await configure({fail_next: 2});
      const charge = await chargeWithRetries(2, ride());
      assertAnswerHeaders(charge.lastResponse, 'after 500s');
      assert.match(charge.lastResponse.idempotencyKey, /^stripe-node-retry-/);
      const after = await stats();
      assert.equal(after.failures_injected - before.failures_injected, 2);
      assert.equal(after.charges - before.charges, 1);
      assert.equal(after.requests - before.requests, 3);
    }],

    ['500s beyond the retries are a StripeAPIError, nothing charged', async () => {
      const before = await stats();
      await configure({fail_next: 2});
      const error = await rejection(chargeWithRetries(1, ride()), '500s');
      assert.ok(error instanceof Stripe.errors.StripeAPIError, `got ${error.type}: ${error.message}`);
      assert.equal(error.statusCode, 500);
      assert.equal(error.rawType, 'api_error');
      assertErrorRequestId(error, '500s');
      const after = await stats();
      assert.equal(after.failures_injected - before.failures_injected, 2);
      assert.equal(after.charges - before.charges, 0);
    }],

    ['a dropped connection is retried by the library and replays the charge', async () => {
      const before = await stats();
      await configure({drop_next: 1});
      // Retries off: the library still retries a closed connection once, with the key it sent.
      const charge = await stripe.charges.create(ride());
      assertAnswerHeaders(charge.lastResponse, 'after a drop');
      assert.equal(charge.lastResponse.headers['idempotent-replayed'], 'true');
      const after = await stats();
      assert.equal(after.drops_injected - before.drops_injected, 1);
      assert.equal(after.charges - before.charges, 1);
      assert.equal(after.replays - before.replays, 1);
    }],

    ['dropped connections beyond the retries are a StripeConnectionError; the key recovers', async () => {
      const idempotencyKey = key('drops');
      const before = await stats();
      await configure({drop_next: 2});
      const error = await rejection(chargeWithRetries(1, ride(), {idempotencyKey}), 'drops');
      assert.ok(error instanceof Stripe.errors.StripeConnectionError, `got ${error.type}: ${error.message}`);
      const retried = await stripe.charges.create(ride(), {idempotencyKey});
      assertAnswerHeaders(retried.lastResponse, 'retry after drops');
      assert.equal(retried.lastResponse.headers['idempotent-replayed'], 'true');
      const after = await stats();
      assert.equal(after.drops_injected - before.drops_injected, 2);
      assert.equal(after.charges - before.charges, 1, 'charged once whatever the drops');
    }],

    ['a timeout is a StripeConnectionError; a retry with the key charges once', async () => {
      const idempotencyKey = key('timeout');
      const before = await stats();
      await configure({latency_ms: 1500});
      const impatient = new Stripe(apiKey, {...options, maxNetworkRetries: 0, timeout: 300});
      const error = await rejection(impatient.charges.create(ride(), {idempotencyKey}), 'timeout');
      assert.ok(error instanceof Stripe.errors.StripeConnectionError, `got ${error.type}: ${error.message}`);
      assert.match(error.message, /timeout/i);
      await configure({latency_ms: 0});
      // Let the abandoned request finish at the provider, as a real slow one would.
      await new Promise((resolve) => setTimeout(resolve, 1700));
      const charge = await stripe.charges.create(ride(), {idempotencyKey});
      assertAnswerHeaders(charge.lastResponse, 'retry after timeout');
      assert.equal(charge.lastResponse.headers['idempotent-replayed'], 'true');
      const after = await stats();
      assert.equal(after.charges - before.charges, 1);
    }],

    // --- refunds ---

    ['a refund is created and its charge shows it', async () => {
      const charge = await stripe.charges.create(ride());
      const refund = await stripe.refunds.create(
          {charge: charge.id, reason: 'requested_by_customer', metadata: {ride_id: '9'}});
      assertAnswerHeaders(refund.lastResponse, 'refunds.create');
      assert.match(refund.id, /^re_/);
      assert.equal(refund.object, 'refund');
      assert.equal(refund.amount, 2000);
      assert.equal(refund.charge, charge.id);
      assert.equal(refund.currency, 'usd');
      assert.equal(refund.status, 'succeeded');
      assert.equal(refund.reason, 'requested_by_customer');
      assert.match(refund.balance_transaction, /^txn_/);
      assert.deepEqual(refund.metadata, {ride_id: '9'});
      const fetched = await stripe.refunds.retrieve(refund.id);
      assertAnswerHeaders(fetched.lastResponse, 'refunds.retrieve');
      assert.equal(fetched.amount, 2000);
      const refunded = await stripe.charges.retrieve(charge.id);
      assert.equal(refunded.refunded, true);
      assert.equal(refunded.amount_refunded, 2000);
      assert.equal(refunded.refunds.total_count, 1);
      assert.equal(refunded.refunds.data[0].id, refund.id);
    }],

    ['partial refunds add up, then the charge is refunded', async () => {
      const charge = await stripe.charges.create(ride());
      const part = await stripe.refunds.create({charge: charge.id, amount: 500});
      assert.equal(part.amount, 500);
      let current = await stripe.charges.retrieve(charge.id);
      assert.equal(current.amount_refunded, 500);
      assert.equal(current.refunded, false);
      const rest = await stripe.refunds.create({charge: charge.id});
      assert.equal(rest.amount, 1500, 'without an amount, the unrefunded rest');
      current = await stripe.charges.retrieve(charge.id);
      assert.equal(current.amount_refunded, 2000);
      assert.equal(current.refunded, true);
      assert.deepEqual(current.refunds.data.map((r) => r.id), [rest.id, part.id], 'newest first');
    }],

    ['over-refunds, refunded and unknown charges are refused as Stripe refuses them', async () => {
      const charge = await stripe.charges.create(ride());
      const tooMuch = await rejection(stripe.refunds.create({charge: charge.id, amount: 2001}), 'over-refund');
      assert.ok(tooMuch instanceof Stripe.errors.StripeInvalidRequestError, `got ${tooMuch.type}`);
      assert.equal(tooMuch.code, 'amount_too_large');
      assert.equal(tooMuch.param, 'amount');
      assertErrorRequestId(tooMuch, 'over-refund');
      await stripe.refunds.create({charge: charge.id});
      const again = await rejection(stripe.refunds.create({charge: charge.id}), 'already refunded');
      assert.equal(again.code, 'charge_already_refunded');
      assert.equal(again.statusCode, 400);
      assertErrorRequestId(again, 'already refunded');
      const unknown = await rejection(stripe.refunds.create({charge: 'ch_does_not_exist'}), 'unknown charge');
      assert.equal(unknown.statusCode, 404);
      assert.equal(unknown.code, 'resource_missing');
      assertErrorRequestId(unknown, 'refund of an unknown charge');
      const declined = await rejection(stripe.charges.create(ride({customer: 'cus_declined_2'})), 'decline');
      const failed = await rejection(stripe.refunds.create({charge: declined.charge}), 'refund of a failed charge');
      assert.equal(failed.code, 'charge_not_refundable');
    }],

    ['a refund key replays its refund, and refuses other parameters', async () => {
      const charge = await stripe.charges.create(ride());
      const idempotencyKey = key('refund');
      const before = await stats();
      const first = await stripe.refunds.create({charge: charge.id, amount: 700}, {idempotencyKey});
      const second = await stripe.refunds.create({charge: charge.id, amount: 700}, {idempotencyKey});
      assertAnswerHeaders(second.lastResponse, 'refund replay');
      assert.equal(second.id, first.id);
      assert.equal(second.lastResponse.headers['idempotent-replayed'], 'true');
      const mismatch = await rejection(
          stripe.refunds.create({charge: charge.id, amount: 800}, {idempotencyKey}), 'refund mismatch');
      assert.ok(mismatch instanceof Stripe.errors.StripeIdempotencyError, `got ${mismatch.type}`);
      assertErrorRequestId(mismatch, 'refund mismatch');
      const after = await stats();
      assert.equal(after.refunds - before.refunds, 1);
      assert.equal((await stripe.charges.retrieve(charge.id)).amount_refunded, 700);
    }],

    ['refunds go through the library\'s retries over a 500 and a dropped connection, once', async () => {
      const charge = await stripe.charges.create(ride());
      const before = await stats();
      await configure({fail_next: 1, drop_next: 1});
      const refunds = new Stripe(apiKey, {...options, maxNetworkRetries: 2});
      const refund = await refunds.refunds.create({charge: charge.id});
      assertAnswerHeaders(refund.lastResponse, 'refund after faults');
      const after = await stats();
      assert.equal(after.failures_injected - before.failures_injected, 1);
      assert.equal(after.drops_injected - before.drops_injected, 1);
      assert.equal(after.refunds - before.refunds, 1);
      assert.equal((await stripe.charges.retrieve(charge.id)).amount_refunded, 2000);
    }],

    // --- lists, as a reconciliation pages through them ---

    ['more than 100 charges auto-paginate newest first, each once, with their metadata', async () => {
      const since = await nextSecond();
      const made = await makeCharges(120, 'cus_paging');
      const expected = made.map((c) => c.id).reverse();
      const seen = [];
      for await (const charge of stripe.charges.list({limit: 100, created: {gte: since}})) {
        assert.equal(charge.object, 'charge');
        seen.push(charge);
      }
      assertListed(seen.map((c) => c.id), expected, 'for await');
      for (const charge of seen) {
        assert.deepEqual(charge.metadata, {n: String(made.findIndex((m) => m.id === charge.id))}, 'metadata listed');
      }
      const array = await stripe.charges.list({limit: 100, created: {gte: since}}).autoPagingToArray({limit: 1000});
      assertListed(array.map((c) => c.id), expected, 'autoPagingToArray');
      const small = await stripe.charges.list({limit: 7, created: {gte: since}}).autoPagingToArray({limit: 1000});
      assertListed(small.map((c) => c.id), expected, 'pages of 7');
      const page = await stripe.charges.list({limit: 100, created: {gte: since}});
      assertAnswerHeaders(page.lastResponse, 'charges.list');
      assert.equal(page.object, 'list');
      assert.equal(page.url, '/v1/charges');
      assert.equal(page.has_more, true);
      assert.equal(page.data.length, 100);
      const customer = await stripe.charges.list({customer: 'cus_paging', created: {gte: since}, limit: 100})
          .autoPagingToArray({limit: 1000});
      assertListed(customer.map((c) => c.id), expected, 'customer filter');
      const none = await stripe.charges.list({created: {gt: made[made.length - 1].created}});
      assert.deepEqual(none.data, []);
      assert.equal(none.has_more, false);
    }],

    ['refunds auto-paginate newest first, and by charge', async () => {
      const since = await nextSecond();
      const [first, second] = await makeCharges(2, 'cus_refunds');
      const refunds = [];
      for (const [charge, amount] of [[first, 100], [first, 200], [second, 300]]) {
        refunds.push(await stripe.refunds.create({charge: charge.id, amount, metadata: {amount: String(amount)}}));
      }
      const all = await stripe.refunds.list({limit: 2, created: {gte: since}}).autoPagingToArray({limit: 100});
      assertListed(all.map((r) => r.id), refunds.map((r) => r.id).reverse(), 'refunds');
      assert.deepEqual(all.map((r) => r.metadata.amount), ['300', '200', '100']);
      const ofFirst = await stripe.refunds.list({charge: first.id, limit: 1}).autoPagingToArray({limit: 100});
      assertListed(ofFirst.map((r) => r.id), [refunds[1].id, refunds[0].id], 'charge filter');
    }],

    ['a listing that fails, drops and is refused mid-way', async () => {
      const since = await nextSecond();
      const made = await makeCharges(105, 'cus_faults');
      const expected = made.map((c) => c.id).reverse();
      const before = await stats();
      // The library retries a 500 and a dropped connection by itself, mid-listing.
      const patient = new Stripe(apiKey, {...options, maxNetworkRetries: 2});
      const seen = [];
      for await (const charge of patient.charges.list({limit: 50, created: {gte: since}})) {
        seen.push(charge.id);
        if (seen.length === 50) await configure({fail_next: 1});
        if (seen.length === 100) await configure({drop_next: 1});
      }
      assertListed(seen, expected, 'through a 500 and a drop');
      const after = await stats();
      assert.equal(after.failures_injected - before.failures_injected, 1);
      assert.equal(after.drops_injected - before.drops_injected, 1);
      // Without retries the iteration raises; a caller resumes after the last object it saw.
      const resumed = [];
      let failure = null;
      try {
        for await (const charge of stripe.charges.list({limit: 50, created: {gte: since}})) {
          resumed.push(charge.id);
          if (resumed.length === 50) await configure({fail_next: 1});
        }
      } catch (error) {
        failure = error;
      }
      assert.ok(failure instanceof Stripe.errors.StripeAPIError, `got ${failure && failure.type}`);
      assert.equal(resumed.length, 50);
      const rest = await stripe.charges.list({limit: 100, created: {gte: since}, starting_after: resumed[49]})
          .autoPagingToArray({limit: 1000});
      assertListed(resumed.concat(rest.map((c) => c.id)), expected, 'resumed');
      const bad = await rejection(stripe.charges.list({limit: 101}), 'limit 101');
      assert.ok(bad instanceof Stripe.errors.StripeInvalidRequestError, `got ${bad.type}`);
      assert.equal(bad.param, 'limit');
      const unknown = await rejection(stripe.charges.list({starting_after: 'ch_nothere'}), 'unknown cursor');
      assert.ok(unknown instanceof Stripe.errors.StripeInvalidRequestError, `got ${unknown.type}`);
      assert.equal(unknown.statusCode, 400);
      assert.equal(unknown.code, 'resource_missing');
      assert.equal(unknown.param, 'starting_after');
    }],
  ];
}

// --- the run -----------------------------------------------------------------------------------

async function main() {
  assert.ok(mockBinary && fs.existsSync(mockBinary), `no rocket-rides-stripe-mock at "${mockBinary}"`);
  const installed = JSON.parse(fs.readFileSync(
      path.join(path.dirname(require.resolve('stripe')), '..', 'package.json'), 'utf8')).version;
  if (expectedVersion) assert.equal(installed, expectedVersion, 'the installed stripe-node is not the pinned one');
  console.log(`stripe-node ${installed} (API version ${Stripe.API_VERSION}) on Node ${process.version}`);

  const mock = await startMock();
  let passed = 0;
  let failed = 0;
  const list = cases(mock);
  try {
    for (const [index, [name, run]] of list.entries()) {
      const started = Date.now();
      try {
        await run();
        passed += 1;
        console.log(`ok ${index + 1} - ${name} (${Date.now() - started} ms)`);
      } catch (error) {
        failed += 1;
        console.log(`not ok ${index + 1} - ${name}\n  ${String(error && error.stack || error).replace(/\n/g, '\n  ')}`);
        await admin(mock.port, 'POST', '/_mock/config', {fail_next: 0, drop_next: 0, latency_ms: 0}).catch(() => {});
      }
    }
  } finally {
    const problems = await mock.stop();
    for (const problem of problems) {
      failed += 1;
      console.log(`not ok - ${problem}`);
    }
    if (!problems.length) fs.rmSync(mock.logDir, {recursive: true, force: true});
  }
  console.log(`${passed} of ${list.length} cases passed` + (failed ? `; ${failed} failures` : ''));
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  console.error(`conformance run failed: ${error && error.stack || error}`);
  process.exitCode = 1;
});
