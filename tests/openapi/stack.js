// The real services the OpenAPI tests talk to: a database of their own in the cluster DATABASE_URL
// names (created with psql, migrated by `rocket-rides-api migrate`, dropped at the end), the
// stand-in payment provider and rocket-rides-api itself, each on a free loopback port, with riders
// made by `rocket-rides-api user create`. Plain Node (18 and later), no dependencies.
'use strict';

const childProcess = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const os = require('node:os');
const path = require('node:path');

const {freePort} = require('../support/free_port.js');

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

function psql(url, sql) {
  return run(['psql', url, '-X', '-q', '-t', '-A', '-v', 'ON_ERROR_STOP=1', '-c', sql], process.env);
}

function withDatabase(url, name) {
  const parsed = new URL(url);
  parsed.pathname = '/' + name;
  return parsed.toString();
}

// Every child still running, killed when this process ends however it ends (an exception, a
// signal from CTest's timeout): no API is left holding a port or a database.
const running = new Set();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => process.exit(1));

// One binary of the build, its output in logDir/name.log.
class Child {
  constructor(name, argv, env, logDir) {
    this.name = name;
    this.logPath = path.join(logDir, name + '.log');
    const log = fs.openSync(this.logPath, 'a');
    this.process = childProcess.spawn(argv[0], argv.slice(1), {env, stdio: ['ignore', log, log]});
    fs.closeSync(log);
    running.add(this.process);
    this.exited = new Promise((resolve) => this.process.on('exit', (code, signal) => {
      running.delete(this.process);
      resolve({code, signal});
    }));
  }

  alive() {
    return this.process.exitCode === null && this.process.signalCode === null;
  }

  log() {
    try {
      return fs.readFileSync(this.logPath, 'utf8');
    } catch (e) {
      return '';
    }
  }

  async waitHttp(port, urlPath) {
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
      if (!this.alive()) fail(`${this.name} exited at start; its log ${this.logPath}:\n${this.log().slice(-3000)}`);
      const status = await new Promise((resolve) => {
        const request = http.get({host: '127.0.0.1', port, path: urlPath, timeout: 2000}, (response) => {
          response.resume();
          resolve(response.statusCode);
        });
        request.on('error', () => resolve(0));
        request.on('timeout', () => request.destroy());
      });
      if (status === 200) return;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    fail(`${this.name} did not answer GET ${urlPath} on port ${port} within 30 s`);
  }

  // SIGTERM, then SIGKILL after 15 s; the exit code.
  async stop() {
    if (this.alive()) {
      this.process.kill('SIGTERM');
      const timer = setTimeout(() => this.process.kill('SIGKILL'), 15000);
      await this.exited;
      clearTimeout(timer);
    }
    return (await this.exited).code;
  }

  // Lines a sanitized binary writes when it found a bug.
  sanitizerFindings() {
    return this.log().split('\n').filter((line) =>
      ['ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:'].some((marker) => line.includes(marker)));
  }
}

// Starts everything; `apiEnv` adds settings for the API. Always call stop(), even after a failure.
async function startStack(apiEnv = {}) {
  const binDir = process.env.ROCKET_RIDES_BIN_DIR;
  const adminUrl = process.env.DATABASE_URL;
  if (!binDir) fail('ROCKET_RIDES_BIN_DIR is not set (CTest sets the build\'s bin directory)');
  if (!adminUrl) fail('DATABASE_URL is not set: run the tests through scripts/test.sh (or export what scripts/local-servers.sh start prints)');
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rocket-rides-openapi-'));
  const stack = {logDir, children: [], database: null};
  stack.stop = async () => {
    const findings = [];
    for (const child of stack.children.reverse()) {
      await child.stop();
      findings.push(...child.sanitizerFindings().map((line) => `${child.name}: ${line}`));
    }
    if (stack.database) {
      try {
        psql(adminUrl, `DROP DATABASE IF EXISTS ${stack.database} WITH (FORCE)`);
      } catch (e) {
        // a leftover database in a throwaway cluster harms nothing
      }
    }
    return findings;
  };
  try {
    const name = 'rr_openapi_' + crypto.randomBytes(6).toString('hex');
    psql(adminUrl, 'CREATE DATABASE ' + name);
    stack.database = name;
    const databaseUrl = withDatabase(adminUrl, name);

    const providerPort = await freePort();
    stack.provider = new Child('stripe-mock', [path.join(binDir, 'rocket-rides-stripe-mock')],
        {...process.env, PORT: String(providerPort), STRIPE_API_KEY: STRIPE_KEY}, logDir);
    stack.children.push(stack.provider);
    await stack.provider.waitHttp(providerPort, '/_mock/stats');
    stack.providerPort = providerPort;

    const api = path.join(binDir, 'rocket-rides-api');
    const env = {
      ...process.env, DATABASE_URL: databaseUrl, STRIPE_API_BASE: `http://127.0.0.1:${providerPort}`,
      STRIPE_API_KEY: STRIPE_KEY, STRIPE_TIMEOUT: '5', SHUTDOWN_TIMEOUT: '5', SHUTDOWN_DRAIN: '0', ...apiEnv,
    };
    run([api, 'migrate'], env);
    stack.createRider = (email, customer) => {
      const lines = run([api, 'user', 'create', '--email', email, '--stripe-customer', customer], env).trim().split('\n');
      const token = lines[lines.length - 1].trim();
      if (!token.startsWith('rr_')) fail(`user create printed no token: ${lines}`);
      return token;
    };
    stack.port = await freePort();
    stack.api = new Child('api', [api], {...env, PORT: String(stack.port)}, logDir);
    stack.children.push(stack.api);
    await stack.api.waitHttp(stack.port, '/healthz');
    stack.origin = `http://127.0.0.1:${stack.port}`;
    return stack;
  } catch (e) {
    await stack.stop();
    throw e;
  }
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
