#!/usr/bin/env node
// Answer one cogstats-cycgraph-vectors/1 request by calling @cycgraph/memory's exports.
//
//   node harness.mjs --cycgraph PATH [--request FILE]      (request on stdin by default)
//
// PATH is a checkout of wmcmahan/cycgraph whose packages/memory has been built
// (`npm ci && npm run build --workspace=packages/memory`; see README.md).  The harness
// imports the built package (its package.json's exports, else main) and only *calls* its
// exported functions: InMemoryMemoryStore, InMemoryOutcomeLedger, RetentionPolicySchema,
// evaluateRetention, retrieveGatedLessons, welchLift, studentTCdf, benjaminiHochberg,
// requiredTrials.  Inputs arrive in the vectors file's snake_case; cycgraph (>= 0.6.0)
// takes camelCase options, so keys are converted on the way in, and every key of what
// cycgraph returns is converted to snake_case on the way out.  JSON cannot carry the
// non-finite numbers, so they are written as the strings "Infinity", "-Infinity", "NaN".
// The response goes to stdout as one JSON document; errors go to stderr with exit 1.

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const PROTOCOL = 'cogstats-cycgraph-vectors/1';
const REQUIRED_EXPORTS = [
  'InMemoryMemoryStore',
  'InMemoryOutcomeLedger',
  'RetentionPolicySchema',
  'evaluateRetention',
  'retrieveGatedLessons',
  'welchLift',
  'studentTCdf',
  'benjaminiHochberg',
  'requiredTrials',
];
// The lessons the harness stores all carry this scope tag; retrieval asks for it.
const SCOPE_TAG = 'lesson';
// Gate candidates get distinct, increasing creation times in the order given (the
// in-memory store lists facts in insertion order; the times only keep them distinct).
const GATE_EPOCH = Date.parse('2024-01-01T00:00:00Z');

function parseArgs(argv) {
  const args = { cycgraph: undefined, request: '-' };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === '--cycgraph' || flag === '--request') {
      if (i + 1 >= argv.length) throw new Error(`${flag} needs a value`);
      args[flag.slice(2)] = argv[++i];
    } else if (flag === '--help' || flag === '-h') {
      process.stdout.write('usage: node harness.mjs --cycgraph PATH [--request FILE|-]\n');
      process.exit(0);
    } else {
      throw new Error(`unknown argument ${flag}`);
    }
  }
  if (!args.cycgraph) throw new Error('--cycgraph PATH is required');
  return args;
}

async function readRequest(where) {
  if (where !== '-') return JSON.parse(readFileSync(where, 'utf8'));
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

async function loadMemory(checkout) {
  const dir = path.resolve(checkout, 'packages', 'memory');
  const manifest = path.join(dir, 'package.json');
  if (!existsSync(manifest)) throw new Error(`${manifest} not found: is ${checkout} a cycgraph checkout?`);
  const pkg = JSON.parse(readFileSync(manifest, 'utf8'));
  const root = pkg.exports && (typeof pkg.exports === 'string' ? pkg.exports : pkg.exports['.']);
  const entry = (typeof root === 'string' ? root : root && (root.import || root.default)) || pkg.main;
  if (!entry) throw new Error(`${manifest} names no entry point`);
  const file = path.join(dir, entry);
  if (!existsSync(file)) {
    throw new Error(
      `${file} not found: build the package first ` +
        `(cd ${checkout} && npm ci && npm run build --workspace=packages/memory)`,
    );
  }
  const memory = await import(pathToFileURL(file).href);
  const missing = REQUIRED_EXPORTS.filter((name) => memory[name] === undefined);
  if (missing.length > 0) {
    throw new Error(`${pkg.name}@${pkg.version} does not export ${missing.join(', ')}`);
  }
  return { memory, name: pkg.name, version: pkg.version };
}

const camel = (key) => key.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
const snake = (key) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

// What cycgraph returned, as protocol JSON: snake_case keys, dates as ISO strings,
// non-finite numbers as strings, undefined fields dropped (as JSON.stringify does).
function encode(value) {
  if (typeof value === 'number') return Number.isFinite(value) ? value : String(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map(encode);
  if (value !== null && typeof value === 'object') {
    const out = {};
    for (const [key, inner] of Object.entries(value)) {
      if (inner !== undefined) out[snake(key)] = encode(inner);
    }
    return out;
  }
  return value;
}

function lesson(id, tags, validFrom) {
  return {
    id,
    content: `lesson ${id}`,
    source_episode_ids: [],
    entity_ids: [],
    provenance: { source: 'system', created_at: validFrom },
    valid_from: validFrom,
    access_count: 0,
    tags,
  };
}

async function ledgerOf(memory, runs) {
  const ledger = new memory.InMemoryOutcomeLedger();
  for (const run of runs) {
    await ledger.recordOutcome({ run_id: run.run_id, score: run.score, fact_ids: run.fact_ids });
  }
  return ledger;
}

// The case's policy as cycgraph's option object; refuses a field the schema drops (a
// renamed option would otherwise fall back to its default without a word).
function policyOf(memory, policy, where) {
  const options = {};
  for (const [key, value] of Object.entries(policy || {})) {
    if (value !== null) options[camel(key)] = value;
  }
  const parsed = memory.RetentionPolicySchema.parse(options);
  for (const [key, value] of Object.entries(options)) {
    if (parsed[key] !== value) {
      throw new Error(`${where}: policy field ${key} = ${JSON.stringify(value)} not understood`);
    }
  }
  return options;
}

async function gateCase(memory, c, where) {
  const store = new memory.InMemoryMemoryStore();
  for (const [i, id] of c.candidates.entries()) {
    await store.putFact(lesson(id, [SCOPE_TAG, 'candidate'], new Date(GATE_EPOCH + i * 1000)));
  }
  const ledger = await ledgerOf(memory, c.runs);
  const report = await memory.evaluateRetention(store, ledger, policyOf(memory, c.policy, where));
  return encode(report);
}

const STATUS_TAGS = { candidate: [SCOPE_TAG, 'candidate'], verified: [SCOPE_TAG, 'verified'] };

async function retrievalCase(memory, retrieval, c, where) {
  const store = new memory.InMemoryMemoryStore();
  for (const fact of retrieval.store) {
    const tags = fact.status === null ? [SCOPE_TAG] : STATUS_TAGS[fact.status];
    if (!tags) throw new Error(`${where}: unknown lesson status ${fact.status}`);
    await store.putFact(lesson(fact.id, tags, new Date(fact.created_at)));
  }
  const options = { tags: [SCOPE_TAG] };
  for (const key of ['max_facts', 'candidate_slots', 'rest_after_trials']) {
    if (c[key] !== undefined && c[key] !== null) options[camel(key)] = c[key];
  }
  if (c.use_ledger) options.ledger = await ledgerOf(memory, retrieval.ledger);
  const chosen = await memory.retrieveGatedLessons(store, options);
  return chosen.map((fact) => fact.id);
}

async function answer(memory, request) {
  if (request.protocol !== PROTOCOL) {
    throw new Error(`expected a ${PROTOCOL} request, got ${JSON.stringify(request.protocol)}`);
  }
  const response = { protocol: PROTOCOL };
  response.policy_defaults = encode(memory.RetentionPolicySchema.parse({}));
  response.gate_cases = [];
  for (const [i, c] of request.gate_cases.entries()) {
    response.gate_cases.push(await gateCase(memory, c, `gate_cases[${i}] (${c.name})`));
  }
  response.welch_cases = request.welch_cases.map((c) =>
    encode(
      memory.welchLift({
        meanA: c.mean_a,
        varA: c.var_a,
        nA: c.n_a,
        meanB: c.mean_b,
        varB: c.var_b,
        nB: c.n_b,
        margin: c.margin,
      }),
    ),
  );
  response.t_cdf_cases = request.t_cdf_cases.map((c) => encode(memory.studentTCdf(c.t, c.df)));
  response.bh_cases = request.bh_cases.map((c) => memory.benjaminiHochberg(c.pvalues, c.q));
  response.required_trials_cases = request.required_trials_cases.map((c) =>
    encode(
      memory.requiredTrials({ effect: c.effect, sd: c.sd, confidence: c.confidence, power: c.power }),
    ),
  );
  response.retrieval_cases = [];
  for (const [i, c] of request.retrieval.cases.entries()) {
    const where = `retrieval_cases[${i}] (${c.name})`;
    response.retrieval_cases.push(await retrievalCase(memory, request.retrieval, c, where));
  }
  return response;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { memory, name, version } = await loadMemory(args.cycgraph);
  const request = await readRequest(args.request);
  const response = await answer(memory, request);
  response.backend = { harness: 'docs/scripts/cycgraph_vectors/harness.mjs', package: name, version };
  process.stdout.write(`${JSON.stringify(response)}\n`);
}

main().catch((error) => {
  process.stderr.write(`harness.mjs: ${error && error.stack ? error.stack : error}\n`);
  process.exitCode = 1;
});
