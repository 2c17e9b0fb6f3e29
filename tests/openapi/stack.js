// The real services the OpenAPI tests talk to, started by the suites' one process package
// (tools/rrsuite, `python3 -m rrsuite up --shape plain --json`): a database of their own in the
// cluster DATABASE_URL names (created, migrated by `rocket-rides-api migrate`, dropped at the end),
// the stand-in payment provider and rocket-rides-api itself, each on a free loopback port; riders
// made by `rocket-rides-api user create`. Plain Node (18 and later), no dependencies.
'use strict';

const childProcess = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {up} = require('../support/rrsuite.js');

const STRIPE_KEY = 'sk_test_openapi_suite';

function fail(message) {
  const error = new Error(message);
  error.harness = true;  // the suite could not set itself up: not a finding about the API
  throw error;
}

function run(argv, env) {
  const result = childProcess.spawnSync(argv[0], argv.slice(1), {env, encoding: 'utf8', timeout: 120000});
  if (result.status !== 0) {
    fail(`${argv.join(' ')} failed (exit ${result.status}): ${result.stderr || result.error}`);
  }
  return result.stdout;
}

// Starts everything; `apiEnv` adds settings for the API. Always call stop(), even after a failure.
async function startStack(apiEnv = {}) {
  const binDir = process.env.ROCKET_RIDES_BIN_DIR;
  if (!binDir) fail('ROCKET_RIDES_BIN_DIR is not set (CTest sets the build\'s bin directory)');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rocket-rides-openapi-'));
  const args = ['--bin-dir', binDir, '--log-dir', logDir, '--stripe-key', STRIPE_KEY, '--label', 'openapi'];
  for (const [name, value] of Object.entries(apiEnv)) args.push('--api-env', `${name}=${value}`);
  const shape = await up('plain', args);
  const stack = {logDir, origin: shape.origin, port: shape.api_port, providerPort: shape.provider_port, stop: shape.stop};
  stack.createRider = (email, customer) => {
    const printed = run([shape.api_binary, 'user', 'create', '--email', email, '--stripe-customer', customer],
        shape.api_env).trim().split('\n');
    const token = printed[printed.length - 1].trim();
    if (!token.startsWith('rr_')) fail(`user create printed no token: ${printed}`);
    return token;
  };
  return stack;
}

// The stand-in's fault knobs (fail_next=N, latency_ms=M).
function configureProvider(stack, faults) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(faults);
    const request = http.request({host: '127.0.0.1', port: stack.providerPort, method: 'POST', path: '/_mock/config',
      headers: {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body)}}, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve() : reject(new Error(`/_mock/config: ${text}`))));
    });
    request.on('error', reject);
    request.end(body);
  });
}

// How many provider API calls the stand-in has received (counted before its latency is slept).
function providerRequests(stack) {
  return new Promise((resolve, reject) => {
    http.get({host: '127.0.0.1', port: stack.providerPort, path: '/_mock/stats'}, (response) => {
      let text = '';
      response.on('data', (chunk) => (text += chunk));
      response.on('end', () => resolve(JSON.parse(text).requests));
    }).on('error', reject);
  });
}

// Returns once the stand-in has received `count` more calls than `before`: the requests that made
// them hold their keys (a charge is made only under a locked key). Fails after 20 s.
async function waitForProviderCalls(stack, before, count) {
  const deadline = Date.now() + 20000;
  while ((await providerRequests(stack)) < before + count) {
    if (Date.now() > deadline) fail(`the stand-in provider did not receive ${count} calls within 20 s`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

module.exports = {startStack, configureProvider, providerRequests, waitForProviderCalls, fail};
