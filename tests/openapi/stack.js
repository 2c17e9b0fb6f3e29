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
const readline = require('node:readline');

const STRIPE_KEY = 'sk_test_openapi_suite';
const TOOLS = path.join(__dirname, '..', '..', 'tools');

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
// The package's process stays in the foreground while the stack is up and stops it on SIGTERM or
// when its stdin closes, which it does when this process ends however it ends.
async function startStack(apiEnv = {}) {
  const binDir = process.env.ROCKET_RIDES_BIN_DIR;
  if (!binDir) fail('ROCKET_RIDES_BIN_DIR is not set (CTest sets the build\'s bin directory)');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rocket-rides-openapi-'));
  const argv = ['-m', 'rrsuite', 'up', '--shape', 'plain', '--json', '--bin-dir', binDir, '--log-dir', logDir,
    '--stripe-key', STRIPE_KEY, '--label', 'openapi'];
  for (const [name, value] of Object.entries(apiEnv)) argv.push('--api-env', `${name}=${value}`);
  const up = childProcess.spawn('python3', argv, {
    env: {...process.env, PYTHONPATH: TOOLS, PYTHONDONTWRITEBYTECODE: '1'}, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => up.on('exit', (code) => resolve(code)));
  const lines = readline.createInterface({input: up.stdout})[Symbol.asyncIterator]();
  const next = async () => {
    const {value, done} = await lines.next();
    return done ? null : JSON.parse(value);
  };
  const described = await next();
  if (!described) fail(`python3 -m rrsuite up exited ${await exited} before the stack was up (its error is above)`);
  const stack = {logDir, origin: described.origin, port: described.api_port, providerPort: described.provider_port};
  stack.createRider = (email, customer) => {
    const printed = run([described.api_binary, 'user', 'create', '--email', email, '--stripe-customer', customer],
        described.api_env).trim().split('\n');
    const token = printed[printed.length - 1].trim();
    if (!token.startsWith('rr_')) fail(`user create printed no token: ${printed}`);
    return token;
  };
  // The problems the run left behind (a process that did not exit 0, a sanitizer report).
  stack.stop = async () => {
    up.stdin.end();
    const stopped = await next();
    await exited;
    if (!stopped) fail('python3 -m rrsuite up ended without saying how the stack stopped');
    return stopped.problems;
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
