// Runs the compiled typed client (client.mts, built by run.sh client) against the real API: starts
// the stack (stack.js), makes a rider, runs the client with its token, stops the stack. Exits 1 when
// the client fails or a binary reported a sanitizer finding.
'use strict';

const childProcess = require('node:child_process');
const fs = require('node:fs');

const {startStack} = require('./stack');

async function main() {
  const client = process.argv[2];
  const stack = await startStack();
  let status;
  try {
    const token = stack.createRider('openapi-client@example.com', 'cus_openapi_client');
    status = childProcess.spawnSync(process.execPath, [client], {
      env: {...process.env, ROCKET_RIDES_API: stack.origin, ROCKET_RIDES_TOKEN: token}, stdio: 'inherit', timeout: 60000,
    }).status;
  } finally {
    const findings = await stack.stop();
    for (const finding of findings) console.log(`FAIL ${finding}`);
    if (findings.length) status = 1;
  }
  if (status !== 0) {
    console.log(`FAIL: the typed client failed against the live API (logs: ${stack.logDir})`);
    process.exit(1);
  }
  fs.rmSync(stack.logDir, {recursive: true, force: true});
  console.log('the typed client passed');
}

main().catch((e) => {
  console.error(e.harness ? `FAIL: the suite could not set itself up: ${e.message}` : e);
  process.exit(1);
});
