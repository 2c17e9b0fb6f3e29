// A TCP port free on 127.0.0.1 right now (the kernel picks it), for the Node.js tests that start
// servers of their own (tests/tools/stripe_node, tests/openapi).
'use strict';

const net = require('node:net');

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

module.exports = {freePort};
