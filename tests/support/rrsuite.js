// The suites' one process package (tools/rrsuite) for the Node.js tests: `python3 -m rrsuite up`
// started as a child, the shape's description read from its first line, and a stop that closes
// its stdin (so a Node process that dies, however it dies, takes the shape with it) and returns
// the problems it reports on its last line (a process that did not exit 0, a sanitizer report).
'use strict';

const childProcess = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const readline = require('node:readline');

const TOOLS = path.join(__dirname, '..', '..', 'tools');
// Debian's interpreter, not whatever "python3" PATH finds first (a pyenv shim costs 0.3 s a call).
const PYTHON3 = fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

// shape: 'plain' or 'provider'; args: more of `up`'s options. Resolves to the description (the
// JSON line) with stop() added; rejects, the package's error on stderr, if the shape did not start.
async function up(shape, args) {
  const child = childProcess.spawn(PYTHON3, ['-m', 'rrsuite', 'up', '--shape', shape, '--json', ...args], {
    env: {...process.env, PYTHONPATH: TOOLS, PYTHONDONTWRITEBYTECODE: '1'}, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise((resolve) => child.on('exit', (code) => resolve(code)));
  const lines = readline.createInterface({input: child.stdout})[Symbol.asyncIterator]();
  const next = async () => {
    const {value, done} = await lines.next();
    return done ? null : JSON.parse(value);
  };
  const described = await next();
  if (!described) {
    const error = new Error(`python3 -m rrsuite up --shape ${shape} exited ${await exited} before it was up ` +
        '(its error is above)');
    error.harness = true;
    throw error;
  }
  described.stop = async () => {
    child.stdin.end();
    const stopped = await next();
    await exited;
    if (!stopped) throw new Error('python3 -m rrsuite up ended without saying how the shape stopped');
    return stopped.problems;
  };
  return described;
}

module.exports = {up};
