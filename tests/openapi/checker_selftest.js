// The live-traffic checker (conformance.js) must be able to fail: answers the document does not
// describe, fed to it against the real docs/openapi.yaml without any server, must each give a
// finding, and answers it does describe none. Run by tests/openapi/run.sh checker (about 1 s).
'use strict';

const fs = require('node:fs');

const {Contract} = require('./conformance');

const contract = new Contract(fs.readFileSync(process.env.OPENAPI_DOCUMENT, 'utf8'));
const ride = {id: 1, origin_lat: 37.7749, origin_lon: -122.4194, target_lat: 37.8044, target_lon: -122.2712,
  stripe_charge_id: 'ch_1', created_at: '2026-11-26T22:39:29.742442Z', cancelled_at: null, stripe_refund_id: null};
const requestId = ['X-Request-Id', 'req-1'];
const json = ['Content-Type', 'application/json'];
const key = ['Idempotency-Key', '8e4dd1b5-7f9c-4b1e-9a8a-2f6c3d1e5a70'];
const exchange = (method, path, status, headers, body) =>
  ({method, path, status, headers, body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body))});
const created = (overrides = {}, headers = [requestId, json, key]) =>
  exchange('POST', '/rides', 201, headers, {message: 'Ride created and charged.', ride: {...ride, ...overrides}});
const error = (type, message = 'm') => ({error: {type, message}});

const conforming = [
  ['a created ride', created()],
  ['a replay', created({}, [requestId, json, key, ['Idempotent-Replayed', 'true']])],
  ['a 409 with Retry-After', exchange('POST', '/rides', 409, [requestId, json, key, ['Retry-After', '1']], error('idempotency_error'))],
  ['a 404 of an unknown path', exchange('GET', '/nowhere', 404, [requestId, json], error('invalid_request_error'))],
  ['a 405 naming the documented methods', exchange('PUT', '/rides', 405, [requestId, json, ['Allow', 'GET, POST']], error('invalid_request_error'))],
];
const departing = [
  ['a status the operation does not list', exchange('POST', '/rides', 200, [requestId, json], {message: 'Ride created and charged.', ride})],
  ['an undocumented header', created({}, [requestId, json, key, ['X-Powered-By', 'C++']])],
  ['a required header missing (X-Request-Id)', created({}, [json, key])],
  ['a header value its schema refuses', created({}, [requestId, json, key, ['Idempotent-Replayed', 'yes']])],
  ['a 409 without Retry-After', exchange('POST', '/rides', 409, [requestId, json, key], error('idempotency_error'))],
  ['another media type', created({}, [requestId, ['Content-Type', 'text/plain'], key])],
  ['a body field the schema lacks', created({surge: 2})],
  ['a timestamp in another form', created({created_at: '2026-11-26 22:39:29+00'})],
  ['an error type the status does not allow', exchange('POST', '/rides', 401, [requestId, json, ['WWW-Authenticate', 'Bearer']], error('api_error'))],
  ['a body that is not JSON', exchange('GET', '/healthz', 200, [requestId, json], 'ok')],
  ['an answer other than 404 on an unknown path', exchange('GET', '/nowhere', 200, [requestId, json], {})],
  ['a 405 whose Allow differs from the document', exchange('PUT', '/rides', 405, [requestId, json, ['Allow', 'POST']], error('invalid_request_error'))],
  ['/metrics answered on the API port', exchange('GET', '/metrics', 200, [['Content-Type', 'text/plain; version=0.0.4']], '# metrics')],
];

let failures = 0;
for (const [label, ex] of conforming) {
  const problems = contract.check(ex);
  console.log(`${problems.length ? 'FAIL' : 'ok  '} conforms: ${label}`);
  for (const problem of problems) console.log(`       ${problem}`);
  if (problems.length) ++failures;
}
for (const [label, ex] of departing) {
  const problems = contract.check(ex);
  console.log(`${problems.length ? 'ok  ' : 'FAIL'} found: ${label}${problems.length ? ` (${problems[0]})` : ': the checker saw nothing'}`);
  if (!problems.length) ++failures;
}
// The document's key rule: the forms the API accepts, and the ones it refuses.
const keySchema = contract.headerParameterSchema('createRide', 'Idempotency-Key');
for (const [value, accepted] of [['k'.repeat(20), true], ['k'.repeat(255), true], [`"${'k'.repeat(20)}"`, true],
  ['"\\"' + 'k'.repeat(19) + '"', true], ['k'.repeat(19), false], ['k'.repeat(256), false], ['a,' + 'k'.repeat(20), false],
  ['"' + ' '.repeat(20) + '"', false], ['"' + 'k'.repeat(20) + '\\n"', false], ['k'.repeat(20) + '\u00e9', false]]) {
  const ok = contract.schemaProblems(keySchema, value).length === 0;
  console.log(`${ok === accepted ? 'ok  ' : 'FAIL'} key ${JSON.stringify(value.length > 30 ? value.slice(0, 27) + '...' : value)} ${accepted ? 'accepted' : 'refused'}`);
  if (ok !== accepted) ++failures;
}
console.log(failures ? `FAIL: ${failures} checks of the checker failed` : 'the checker finds what it must');
process.exit(failures ? 1 : 0);
