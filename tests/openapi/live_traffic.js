// The live API against its contract: starts the real rocket-rides-api (a database of its own, the
// stand-in provider), drives it through the flows a client meets (a new key, its replay, the key
// with other parameters, the key in flight and the wait for it, a cancel, bad keys, no token, the
// per-user bound, a declined card, a provider outage and the retry that resumes it, the reads,
// routing refusals, a refused framing), asserts what each answer must be, and checks every
// answer's status, headers and body against docs/openapi.yaml (conformance.js). Also checks that
// GET /openapi.yaml serves the file's very bytes, cacheably. Prints one line per exchange; exits 1
// on any finding. Run by tests/openapi/run.sh live.
'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');

const {Contract} = require('./conformance');
const {startStack, configureProvider, providerRequests, waitForProviderCalls} = require('./stack');

const documentPath = process.env.OPENAPI_DOCUMENT;
const documentBytes = fs.readFileSync(documentPath);
const contract = new Contract(documentBytes.toString('utf8'));
const exchanges = [];
const findings = [];

const newKey = () => crypto.randomUUID();

// One request on a connection of its own, recorded with its answer and checked against the document.
function send(origin, label, method, path, {headers = {}, body} = {}) {
  return new Promise((resolve, reject) => {
    const url = new URL(path, origin);
    const payload = body === undefined ? undefined : Buffer.from(body);
    const allHeaders = {...headers};
    if (payload !== undefined) allHeaders['Content-Length'] = payload.length;
    const request = http.request({host: url.hostname, port: url.port, method, path, headers: allHeaders, agent: false},
        (response) => {
          const chunks = [];
          response.on('data', (chunk) => chunks.push(chunk));
          response.on('end', () => {
            const pairs = [];
            for (let i = 0; i < response.rawHeaders.length; i += 2) pairs.push([response.rawHeaders[i], response.rawHeaders[i + 1]]);
            const exchange = {label, method, path, requestHeaders: headers, status: response.statusCode, headers: pairs,
              body: Buffer.concat(chunks)};
            record(exchange);
            resolve(exchange);
          });
        });
    request.on('error', reject);
    request.end(payload);
  });
}

// A request written byte for byte on a raw socket (framing Node's client would not send), its
// answer read until the server closes.
function sendRaw(port, label, method, path, bytes) {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks = [];
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const raw = Buffer.concat(chunks);
      const headEnd = raw.indexOf('\r\n\r\n');
      const lines = raw.subarray(0, headEnd).toString('latin1').split('\r\n');
      const status = Number(lines[0].split(' ')[1]);
      const headers = lines.slice(1).map((line) => [line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]);
      const exchange = {label, method, path, requestHeaders: {}, status, headers, body: raw.subarray(headEnd + 4)};
      record(exchange);
      resolve(exchange);
    });
    socket.write(bytes);
  });
}

function header(exchange, name) {
  const found = exchange.headers.find(([n]) => n.toLowerCase() === name.toLowerCase());
  return found ? found[1] : undefined;
}

function json(exchange) {
  return JSON.parse(exchange.body.toString('utf8'));
}

function record(exchange) {
  exchanges.push(exchange);
  const problems = contract.check(exchange);
  // The document's rule for the key, against what the API made of the key sent.
  const key = exchange.requestHeaders['Idempotency-Key'];
  if (typeof key === 'string' && exchange.method === 'POST') {
    const schema = contract.headerParameterSchema(exchange.path === '/rides' ? 'createRide' : 'cancelRide', 'Idempotency-Key');
    const documentAccepts = contract.schemaProblems(schema, key).length === 0;
    const apiRefused = exchange.status === 400 && exchange.body.toString('utf8').includes('Idempotency-Key');
    if (documentAccepts === apiRefused) {
      problems.push(`Idempotency-Key ${JSON.stringify(key)}: the document ${documentAccepts ? 'accepts' : 'refuses'} it, the API ${apiRefused ? 'refused' : 'accepted'} it`);
    }
  }
  console.log(`${problems.length ? 'FAIL' : 'ok  '} ${exchange.status} ${exchange.method} ${exchange.path}  ${exchange.label}`);
  for (const problem of problems) console.log(`       ${problem}`);
  findings.push(...problems.map((p) => `${exchange.label}: ${p}`));
}

// An expectation about the API itself (the document is checked by record()).
function expect(exchange, status, extra = () => {}) {
  try {
    assert.equal(exchange.status, status, `${exchange.label}: status`);
    extra(exchange);
  } catch (e) {
    console.log(`FAIL ${exchange.label}: ${e.message}`);
    findings.push(`${exchange.label}: ${e.message}`);
  }
}

const form = (params) => new URLSearchParams(params).toString();
const SF = {origin_lat: '37.7749', origin_lon: '-122.4194', target_lat: '37.8044', target_lon: '-122.2712'};
const FORM = {'Content-Type': 'application/x-www-form-urlencoded'};

async function drive(stack) {
  const {origin} = stack;
  const rider = stack.createRider('openapi-rider@example.com', 'cus_openapi_rider');
  const busy = stack.createRider('openapi-busy@example.com', 'cus_openapi_busy');
  const declined = stack.createRider('openapi-declined@example.com', 'cus_openapi_declined');
  const auth = (token) => ({Authorization: `Bearer ${token}`});
  const post = (label, token, key, params, extra = {}) =>
    send(origin, label, 'POST', '/rides', {headers: {...auth(token), ...FORM, 'Idempotency-Key': key, ...extra}, body: form(params)});

  // The contract itself, served.
  const served = await send(origin, 'the document', 'GET', '/openapi.yaml');
  expect(served, 200, (e) => {
    assert.ok(e.body.equals(documentBytes), 'GET /openapi.yaml is not the bytes of ' + documentPath);
    assert.equal(header(e, 'Content-Type'), 'application/yaml');
  });
  const etag = header(served, 'ETag');
  expect(await send(origin, 'the document, revalidated', 'GET', '/openapi.yaml', {headers: {'If-None-Match': etag}}), 304,
      (e) => assert.equal(header(e, 'ETag'), etag));
  expect(await send(origin, 'the document, revalidated in a list of weak tags', 'GET', '/openapi.yaml',
      {headers: {'If-None-Match': `W/"0000", W/${etag}`}}), 304);
  expect(await send(origin, 'the document, HEAD', 'HEAD', '/openapi.yaml'), 200, (e) => {
    assert.equal(Number(header(e, 'Content-Length')), documentBytes.length);
    assert.equal(header(e, 'ETag'), etag);
  });
  expect(await send(origin, 'the document, another version cached', 'GET', '/openapi.yaml',
      {headers: {'If-None-Match': '"0000"'}}), 200);
  expect(await send(origin, 'liveness', 'GET', '/healthz'), 200);
  expect(await send(origin, 'readiness', 'GET', '/readyz'), 200);

  // A new key, its replay (bare and as an sf-string), the key with other parameters.
  const key = newKey();
  const created = await post('new key', rider, key, SF, {'X-Request-Id': 'openapi-suite-1'});
  expect(created, 201, (e) => {
    assert.equal(header(e, 'X-Request-Id'), 'openapi-suite-1');
    assert.equal(header(e, 'Idempotency-Key'), key);
    assert.equal(header(e, 'Idempotent-Replayed'), undefined);
  });
  const rideId = json(created).ride.id;
  expect(await post('replay', rider, key, SF), 201, (e) => {
    assert.equal(header(e, 'Idempotent-Replayed'), 'true');
    assert.ok(e.body.equals(created.body), 'a replay is the stored body byte for byte');
  });
  expect(await post('replay, key as an sf-string', rider, `"${key}"`, SF), 201,
      (e) => assert.equal(header(e, 'Idempotent-Replayed'), 'true'));
  expect(await post('same key, other parameters', rider, key, {...SF, target_lat: '37.9'}), 422,
      (e) => assert.equal(json(e).error.type, 'idempotency_error'));
  expect(await send(origin, 'new key, JSON body', 'POST', '/rides', {
    headers: {...auth(rider), 'Content-Type': 'application/json', 'Idempotency-Key': newKey()},
    body: JSON.stringify({origin_lat: 37.7749, origin_lon: -122.4194, target_lat: '37.8044', target_lon: -122.2712})}), 201);

  // Keys the contract refuses, and one at each length bound it accepts.
  expect(await send(origin, 'no key', 'POST', '/rides', {headers: {...auth(rider), ...FORM}, body: form(SF)}), 400);
  for (const [label, bad] of [['key too short', 'short-key'], ['key too long', 'k'.repeat(256)],
    ['comma-separated keys', `${newKey()},${newKey()}`], ['blank quoted key', '"' + ' '.repeat(24) + '"'],
    ['quoted key with a bad escape', `"${newKey()}\\n"`], ['quoted key with an inner quote', `"${newKey()}"x"`]]) {
    expect(await post(label, rider, bad, SF), 400, (e) => assert.equal(json(e).error.type, 'invalid_request_error'));
  }
  expect(await send(origin, 'two key headers', 'POST', '/rides',
      {headers: {...auth(rider), ...FORM, 'Idempotency-Key': [newKey(), newKey()]}, body: form(SF)}), 400);
  expect(await post('key of 20 characters', rider, 'k'.repeat(12) + crypto.randomBytes(4).toString('hex'), SF), 201);
  expect(await post('key of 255 characters, quoted with escapes', rider,
      '"' + '\\"\\\\' + crypto.randomBytes(8).toString('hex') + 'k'.repeat(237) + '"', SF), 201);

  // Requests that cannot be read.
  expect(await post('coordinate not a number', rider, newKey(), {...SF, origin_lat: 'north'}), 422);
  expect(await post('coordinate out of range', rider, newKey(), {...SF, target_lon: '-190'}), 422);
  expect(await post('coordinate with an exponent', rider, newKey(), {...SF, target_lat: '3.7e1'}), 422);
  expect(await post('parameter missing', rider, newKey(), {origin_lat: '1', origin_lon: '2', target_lat: '3'}), 422);
  expect(await send(origin, 'malformed JSON', 'POST', '/rides',
      {headers: {...auth(rider), 'Content-Type': 'application/json', 'Idempotency-Key': newKey()}, body: '{"origin_lat":'}), 400);
  expect(await send(origin, 'a body neither form nor JSON', 'POST', '/rides',
      {headers: {...auth(rider), 'Content-Type': 'text/plain', 'Idempotency-Key': newKey()}, body: 'hello'}), 415);
  expect(await send(origin, 'a gzipped body', 'POST', '/rides',
      {headers: {...auth(rider), ...FORM, 'Content-Encoding': 'gzip', 'Idempotency-Key': newKey()}, body: 'x'}), 415,
  (e) => assert.equal(header(e, 'Accept-Encoding'), 'identity'));
  expect(await send(origin, 'a body over 64 KiB', 'POST', '/rides',
      {headers: {...auth(rider), ...FORM, 'Idempotency-Key': newKey()}, body: 'x='.padEnd(70 * 1024, 'y')}), 413);

  // No token, another scheme, a token that is no one's.
  expect(await send(origin, 'no token', 'POST', '/rides', {headers: {...FORM, 'Idempotency-Key': newKey()}, body: form(SF)}), 401,
      (e) => assert.equal(header(e, 'WWW-Authenticate'), 'Bearer'));
  expect(await post('basic scheme', 'x', newKey(), SF, {Authorization: 'Basic dXNlcjpwYXNz'}), 401);
  expect(await post('unknown token', 'rr_' + 'a'.repeat(43), newKey(), SF), 401);
  expect(await send(origin, 'no token, list', 'GET', '/rides'), 401);

  // The key in flight: 409 at once, or the first request's answer after Prefer: wait.
  await configureProvider(stack, {latency_ms: 2000});
  const slowKey = newKey();
  let calls = await providerRequests(stack);
  const first = post('first of a key in flight', rider, slowKey, SF);
  await waitForProviderCalls(stack, calls, 1);
  expect(await post('same key in flight', rider, slowKey, SF), 409, (e) => {
    assert.ok(Number(header(e, 'Retry-After')) >= 1);
    assert.equal(json(e).error.type, 'idempotency_error');
  });
  const waited = await post('same key in flight, Prefer: wait=10', rider, slowKey, SF, {Prefer: 'wait=10'});
  const firstAnswer = await first;
  expect(firstAnswer, 201);
  expect(waited, 201, (e) => {
    assert.equal(header(e, 'Preference-Applied'), 'wait=10');
    assert.equal(header(e, 'Idempotent-Replayed'), 'true');
    assert.ok(e.body.equals(firstAnswer.body));
  });

  // The per-user bound (API_MAX_IN_FLIGHT_PER_USER=2 here): a third request while two run.
  expect(await send(origin, 'warm the busy rider\'s token', 'GET', '/rides', {headers: auth(busy)}), 200);
  calls = await providerRequests(stack);
  const running = [post('busy rider, first', busy, newKey(), SF), post('busy rider, second', busy, newKey(), SF)];
  await waitForProviderCalls(stack, calls, 2);
  const boundKey = newKey();
  expect(await post('busy rider, third: over the bound', busy, boundKey, SF), 429, (e) => {
    assert.ok(Number(header(e, 'Retry-After')) >= 1);
    assert.equal(header(e, 'Idempotency-Key'), boundKey);
  });
  for (const answer of await Promise.all(running)) expect(answer, 201);
  await configureProvider(stack, {latency_ms: 0});
  expect(await post('busy rider, third again: nothing was written', busy, boundKey, SF), 201,
      (e) => assert.equal(header(e, 'Idempotent-Replayed'), undefined));

  // A declined card: stored and replayed like a success.
  const declineKey = newKey();
  const decline = await post('card declined', declined, declineKey, SF);
  expect(decline, 402, (e) => assert.equal(json(e).error.type, 'card_error'));
  expect(await post('card declined, replayed', declined, declineKey, SF), 402, (e) => {
    assert.equal(header(e, 'Idempotent-Replayed'), 'true');
    assert.ok(e.body.equals(decline.body));
  });

  // A provider outage: 503, not stored; the retry with the same key resumes and charges once.
  await configureProvider(stack, {fail_next: 1});
  const outageKey = newKey();
  expect(await post('provider outage', rider, outageKey, SF), 503, (e) => {
    assert.ok(Number(header(e, 'Retry-After')) >= 1);
    assert.equal(header(e, 'Idempotency-Key'), outageKey);
  });
  expect(await post('provider back, same key', rider, outageKey, SF), 201,
      (e) => assert.equal(header(e, 'Idempotent-Replayed'), undefined));

  // The reads.
  expect(await send(origin, 'list', 'GET', '/rides', {headers: auth(rider)}), 200);
  const page = await send(origin, 'list, one per page', 'GET', '/rides?limit=1', {headers: auth(rider)});
  expect(page, 200, (e) => assert.match(json(e).next_cursor, /^[0-9]+$/));
  expect(await send(origin, 'list, next page', 'GET', `/rides?limit=1&cursor=${json(page).next_cursor}`, {headers: auth(rider)}), 200);
  expect(await send(origin, 'list, limit 0', 'GET', '/rides?limit=0', {headers: auth(rider)}), 400);
  expect(await send(origin, 'list, limit twice', 'GET', '/rides?limit=1&limit=2', {headers: auth(rider)}), 400);
  expect(await send(origin, 'one ride', 'GET', `/rides/${rideId}`, {headers: auth(rider)}), 200,
      (e) => assert.equal(json(e).ride.id, rideId));
  expect(await send(origin, 'another rider\'s ride', 'GET', `/rides/${rideId}`, {headers: auth(busy)}), 404);
  expect(await send(origin, 'a ride id that is no number', 'GET', '/rides/abc', {headers: auth(rider)}), 404);

  // Cancel: the refund, its replay, a ride that is not the caller's, an outage and the resumed refund.
  const cancel = (label, token, id, key, body) => send(origin, label, 'POST', `/rides/${id}/cancel`,
      {headers: {...auth(token), ...FORM, 'Idempotency-Key': key}, body});
  const cancelKey = newKey();
  const cancelled = await cancel('cancel', rider, rideId, cancelKey, form({reason: 'plans changed'}));
  expect(cancelled, 200, (e) => assert.match(json(e).ride.stripe_refund_id, /^re_/));
  expect(await cancel('cancel, replayed', rider, rideId, cancelKey, form({reason: 'plans changed'})), 200, (e) => {
    assert.equal(header(e, 'Idempotent-Replayed'), 'true');
    assert.ok(e.body.equals(cancelled.body));
  });
  expect(await cancel('cancel, already cancelled (new key)', rider, rideId, newKey()), 200);
  const notYoursKey = newKey();
  const notYours = await cancel('cancel another rider\'s ride', busy, rideId, notYoursKey);
  expect(notYours, 404);
  expect(await cancel('cancel another rider\'s ride, replayed', busy, rideId, notYoursKey), 404, (e) => {
    assert.equal(header(e, 'Idempotent-Replayed'), 'true');
    assert.ok(e.body.equals(notYours.body));
  });
  expect(await cancel('cancel, reason too long', rider, rideId, newKey(), form({reason: 'x'.repeat(501)})), 422);
  expect(await cancel('cancel, no key', rider, rideId, '', undefined), 400);
  const second = json(firstAnswer).ride.id;
  await configureProvider(stack, {fail_next: 1});
  const refundKey = newKey();
  expect(await cancel('cancel, provider outage', rider, second, refundKey), 503);
  expect(await cancel('cancel, provider back, same key', rider, second, refundKey), 200,
      (e) => assert.match(json(e).ride.stripe_refund_id, /^re_/));

  // Routing refusals and a framing refused before routing.
  expect(await send(origin, 'cancel path, GET', 'GET', `/rides/${rideId}/cancel`, {headers: auth(rider)}), 405);
  expect(await send(origin, 'rides, PUT', 'PUT', '/rides', {headers: auth(rider)}), 405);
  expect(await send(origin, 'metrics are not on the API port', 'GET', '/metrics'), 404);
  expect(await sendRaw(stack.port, 'two Host headers', 'GET', '/healthz',
      'GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'), 400);
}

async function main() {
  const stack = await startStack({API_MAX_IN_FLIGHT_PER_USER: '2', IDEMPOTENCY_MAX_WAIT: '10'});
  let sanitizerFindings = [];
  try {
    await drive(stack);
  } finally {
    sanitizerFindings = await stack.stop();
  }
  findings.push(...sanitizerFindings);
  if (process.env.OPENAPI_RECORD) {
    fs.writeFileSync(process.env.OPENAPI_RECORD, JSON.stringify(exchanges.map((e) => ({
      label: e.label, method: e.method, path: e.path, status: e.status, headers: e.headers,
      body: e.body.toString('utf8')})), null, 1));
  }
  console.log(`${exchanges.length} exchanges, ${findings.length} findings`);
  if (findings.length) {
    console.log('FAIL: the API and docs/openapi.yaml disagree (or the API misbehaved):');
    for (const finding of findings) console.log('  ' + finding);
    console.log(`logs: ${stack.logDir}`);
    process.exit(1);
  }
  fs.rmSync(stack.logDir, {recursive: true, force: true});
}

main().catch((e) => {
  console.error(e.harness ? `FAIL: the suite could not set itself up: ${e.message}` : e);
  process.exit(1);
});
