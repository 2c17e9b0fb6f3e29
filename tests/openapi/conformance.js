// Checks recorded HTTP exchanges against docs/openapi.yaml: an answer conforms when the document
// lists its status for the operation, every header the document requires is there, every header
// present is one the document describes (beyond HTTP's own framing fields) and has a value its
// schema accepts, and the body has the documented media type and validates against its JSON
// Schema (OpenAPI 3.1 schemas are JSON Schema 2020-12: ajv's 2020 dialect). A request that matches
// no path must have been answered 404, a method a path does not list 405 with `Allow` naming the
// methods the document lists, as the document's description says. The checker reads the document
// and nothing else, so an answer the document does not describe is a failure.
'use strict';

const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;
const YAML = require('yaml');

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
// Fields every HTTP/1.1 answer may carry whatever the operation: framing and the server's name.
const FRAMING_HEADERS = new Set(['content-type', 'content-length', 'connection', 'server', 'date', 'keep-alive',
  'transfer-encoding']);

class Contract {
  constructor(text) {
    this.doc = YAML.parse(text);
    this.ajv = new Ajv2020({allErrors: true, strict: true, strictRequired: false});
    addFormats(this.ajv);
    this.ajv.addFormat('int64', {type: 'number', validate: Number.isSafeInteger});
    // The schemas under one id, their references pointed at it, so any fragment compiles alone.
    this.ajv.addSchema({$id: 'openapi', $defs: this.rewriteRefs(this.doc.components.schemas)});
    this.compiled = new Map();
  }

  rewriteRefs(node) {
    if (Array.isArray(node)) return node.map((item) => this.rewriteRefs(item));
    if (node === null || typeof node !== 'object') return node;
    const out = {};
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/schemas/')) {
        out[key] = 'openapi#/$defs/' + value.slice('#/components/schemas/'.length);
      } else {
        out[key] = this.rewriteRefs(value);
      }
    }
    return out;
  }

  resolve(node) {
    while (node && node.$ref) {
      node = node.$ref.slice(2).split('/').reduce((at, part) => at[part.replace(/~1/g, '/').replace(/~0/g, '~')],
          this.doc);
    }
    return node;
  }

  validator(schema) {
    const key = JSON.stringify(schema);
    if (!this.compiled.has(key)) this.compiled.set(key, this.ajv.compile(this.rewriteRefs(schema)));
    return this.compiled.get(key);
  }

  // Problems of `value` under `schema`, as text; [] when it validates.
  schemaProblems(schema, value) {
    const validate = this.validator(schema);
    if (validate(value)) return [];
    return validate.errors.map((e) => `${e.instancePath || '(root)'} ${e.message}`);
  }

  // The path template of the document that `path` (no query) matches, with its path item.
  findPath(path) {
    const given = path.split('/');
    for (const [template, item] of Object.entries(this.doc.paths)) {
      const wanted = template.split('/');
      if (wanted.length !== given.length) continue;
      if (wanted.every((part, i) => (part.startsWith('{') && part.endsWith('}') ? given[i] !== '' : part === given[i]))) {
        return {template, item};
      }
    }
    return null;
  }

  operation(operationId) {
    for (const [template, item] of Object.entries(this.doc.paths)) {
      for (const method of METHODS) {
        if (item[method] && item[method].operationId === operationId) return {template, method, op: item[method]};
      }
    }
    throw new Error(`no operation ${operationId} in the document`);
  }

  // The schema of the operation's header parameter `name` (e.g. Idempotency-Key), or null.
  headerParameterSchema(operationId, name) {
    const {op} = this.operation(operationId);
    for (const parameter of op.parameters || []) {
      const resolved = this.resolve(parameter);
      if (resolved.in === 'header' && resolved.name.toLowerCase() === name.toLowerCase()) return resolved.schema;
    }
    return null;
  }

  // Every way the exchange's answer departs from the document, as text; [] when it conforms.
  // exchange: {method, path, status, headers: [[name, value], ...], body: Buffer}
  check(exchange) {
    const problems = [];
    const method = exchange.method.toLowerCase();
    const found = this.findPath(exchange.path.split('?')[0]);
    const header = (name) => exchange.headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);
    if (!found) {
      if (exchange.status !== 404) problems.push(`${exchange.path} is no path of the document, yet the answer is ${exchange.status}, not 404`);
      return problems.concat(this.checkErrorBody(exchange, 'InvalidRequestError'));
    }
    const listed = METHODS.filter((m) => found.item[m]);
    const operationMethod = method === 'head' && !found.item.head ? 'get' : method;
    if (!found.item[operationMethod]) {
      if (exchange.status !== 405) problems.push(`${exchange.method} ${found.template} is not in the document, yet the answer is ${exchange.status}, not 405`);
      const allow = header('allow');
      const expected = listed.map((m) => m.toUpperCase()).sort().join(', ');
      if (allow.length !== 1 || allow[0] !== expected) problems.push(`405 with Allow ${JSON.stringify(allow)}, the document lists ${expected}`);
      return problems.concat(this.checkErrorBody(exchange, 'InvalidRequestError'));
    }
    const op = found.item[operationMethod];
    // An operation with servers of its own (/metrics on METRICS_PORT) is not on the API's port.
    if (op.servers || found.item.servers) {
      if (exchange.status !== 404) problems.push(`${exchange.method} ${found.template} is served elsewhere (${(op.servers || found.item.servers)[0].url}), yet the answer is ${exchange.status}, not 404`);
      return problems.concat(this.checkErrorBody(exchange, 'InvalidRequestError'));
    }
    const where = `${exchange.method} ${found.template} (${op.operationId}) ${exchange.status}`;
    const response = this.resolve((op.responses || {})[String(exchange.status)]);
    if (!response) {
      problems.push(`${where}: the document lists no ${exchange.status} for this operation (it lists ${Object.keys(op.responses).join(', ')})`);
      return problems;
    }

    const documented = new Map();
    for (const [name, spec] of Object.entries(response.headers || {})) documented.set(name.toLowerCase(), {name, ...this.resolve(spec)});
    for (const [lower, spec] of documented) {
      const name = spec.name;
      const values = header(lower);
      if (values.length === 0) {
        if (spec.required) problems.push(`${where}: required header ${name} is missing`);
        continue;
      }
      if (values.length > 1) problems.push(`${where}: header ${name} is sent ${values.length} times`);
      for (const problem of this.schemaProblems(spec.schema, values[0])) problems.push(`${where}: header ${name}: ${JSON.stringify(values[0])} ${problem}`);
    }
    for (const [name] of exchange.headers) {
      const lower = name.toLowerCase();
      if (!documented.has(lower) && !FRAMING_HEADERS.has(lower)) problems.push(`${where}: header ${name} is not in the document`);
    }

    const contentType = header('content-type')[0];
    const bodyText = exchange.method === 'HEAD' ? '' : exchange.body.toString('utf8');
    if (!response.content) {
      if (bodyText.length > 0 || contentType !== undefined) problems.push(`${where}: the document describes no body, yet there is one (${contentType})`);
      return problems;
    }
    const media = response.content[contentType];
    if (!media) {
      problems.push(`${where}: Content-Type ${contentType} is not one of the document's (${Object.keys(response.content).join(', ')})`);
      return problems;
    }
    if (exchange.method === 'HEAD') return problems;
    let value = bodyText;
    if (contentType === 'application/json') {
      try {
        value = JSON.parse(bodyText);
      } catch (e) {
        problems.push(`${where}: the body is not JSON: ${bodyText.slice(0, 200)}`);
        return problems;
      }
    }
    const bodyProblems = this.schemaProblems(media.schema, value);
    for (const problem of bodyProblems) problems.push(`${where}: body ${problem}`);
    if (bodyProblems.length) problems.push(`${where}: the body was ${bodyText.slice(0, 400)}`);
    return problems;
  }

  checkErrorBody(exchange, schemaName) {
    let value;
    try {
      value = JSON.parse(exchange.body.toString('utf8'));
    } catch (e) {
      return [`${exchange.method} ${exchange.path} ${exchange.status}: the body is not JSON`];
    }
    return this.schemaProblems({$ref: `#/components/schemas/${schemaName}`}, value)
        .map((p) => `${exchange.method} ${exchange.path} ${exchange.status}: body ${p}`);
  }
}

module.exports = {Contract};
