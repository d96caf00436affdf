// Replays cycgraph's recorded poisoning demo against `cogstats serve`, run by run, as a
// cycgraph agent would call the service: POST /lessons when a lesson is written,
// POST /select before each run, POST /runs after it (the recorded prompt and score).
// Plain JavaScript on Node 18+ (the global fetch); no dependency.
//
//   node replay_demo.mjs [RUNS_CSV] [LESSONS_CSV]
//   env: COGSTATS_URL (default http://127.0.0.1:8765), COGSTATS_TOKEN (if the service
//        was started with --token-file)
//
// Prints one line per run and, last, `SUMMARY {json}`; exits 1 when P1-P3 are not out of
// the prompt (suspended or evicted) after run 5, or a genuine lesson is convicted.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const data = join(here, "..", "..", "data");
const runsCsv = process.argv[2] ?? join(data, "cycgraph_poison_demo_runs.csv");
const lessonsCsv = process.argv[3] ?? join(data, "cycgraph_poison_demo_lessons.csv");
const base = (process.env.COGSTATS_URL ?? "http://127.0.0.1:8765").replace(/\/$/, "");
const token = process.env.COGSTATS_TOKEN;

/** Parse a small CSV file (a header row; quoted fields may hold commas). */
function readCsv(path) {
  const lines = readFileSync(path, "utf8").split(/\r?\n/).filter((l) => l.length > 0);
  const split = (line) => {
    const out = [];
    let cur = "";
    let quoted = false;
    for (let i = 0; i < line.length; i++) {
      const ch = line[i];
      if (quoted) {
        if (ch === '"' && line[i + 1] === '"') { cur += '"'; i++; }
        else if (ch === '"') quoted = false;
        else cur += ch;
      } else if (ch === '"') quoted = true;
      else if (ch === ",") { out.push(cur); cur = ""; }
      else cur += ch;
    }
    out.push(cur);
    return out;
  };
  const [head, ...rows] = lines.map(split);
  return rows.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i] ?? ""])));
}

class ServiceError extends Error {
  constructor(status, detail) {
    const first = detail?.[0] ?? {};
    super(`${status} ${first.field ?? ""}: ${first.msg ?? "error"}`);
    this.status = status;
    this.detail = detail;
  }
}

/** One call to the service: JSON in, JSON out, an error naming the field otherwise. */
async function call(method, path, body) {
  const headers = { "content-type": "application/json" };
  if (token) headers.authorization = `Bearer ${token}`;
  const res = await fetch(base + path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = await res.json();
  if (!res.ok) throw new ServiceError(res.status, answer.detail);
  return answer;
}

/** POST /runs, sent again (same id, same content) when the answer is lost: counted once. */
async function recordRun(run, attempts = 6) {
  for (let k = 0; ; k++) {
    try {
      return await call("POST", "/runs", run);
    } catch (err) {
      const transient = !(err instanceof ServiceError) || err.status >= 502;
      if (!transient || k + 1 >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 100 * 2 ** k));
    }
  }
}

const runs = readCsv(runsCsv);
const lessons = readCsv(lessonsCsv);
const poisons = ["P1", "P2", "P3"];
const genuine = new Set(lessons.filter((l) => l.kind === "genuine").map((l) => l.lesson));
const health = await call("GET", "/health");
console.log(`service ${base}: gate ${health.gate}, ${health.runs} runs, cogstats ${health.version}`);

const selections = {};
const afterRun = {};
const failures = [];
for (const row of runs) {
  const run = Number(row.run);
  for (const l of lessons.filter((x) => Number(x.first_run_available) === run)) {
    await call("POST", "/lessons", { id: l.lesson }); // written before this run
  }
  const sel = await call("POST", "/select", { context: {} }); // before the run
  selections[run] = sel.fact_ids;
  if (row.recorded !== "yes") {
    console.log(`run ${run}: not recorded`);
    continue;
  }
  const prompt = row.lessons_in_prompt.split(" ").filter(Boolean); // the recorded prompt
  const { changes } = await recordRun({
    run_id: String(run),
    score: Number(row.score),
    fact_ids: prompt, // cycgraph: getInjectedFactIds(finalState)
  });
  const moved = changes.map((c) => `${c.fact_id} ${c.from}->${c.to}`).join(", ");
  console.log(`run ${run}: score ${Number(row.score).toFixed(3)} prompt [${prompt.join(" ")}]` +
    (moved ? `; ${moved}` : ""));
  if (run >= 5) {
    const status = Object.fromEntries((await call("GET", "/lessons")).map((l) => [l.fact_id, l.status]));
    afterRun[run] = Object.fromEntries(poisons.map((p) => [p, status[p]]));
    const out = poisons.every((p) => status[p] === "suspended" || status[p] === "evicted");
    if (!out) failures.push(`after run ${run}: P1-P3 ${JSON.stringify(afterRun[run])}`);
  }
}
// the next prompt: P1-P3 only as the re-test of a suspect (at most one a run)
const next = await call("POST", "/select", { context: {} });
const events = await call("GET", "/events?after=0");
const convicted = events.filter((e) => e.reason === "eval-gate:harmful").map((e) => e.fact_id);
for (const f of convicted) if (genuine.has(f)) failures.push(`genuine lesson ${f} convicted`);
const summary = {
  runs: (await call("GET", "/health")).runs,
  after_run: afterRun,
  selections,
  next_prompt: next.fact_ids,
  events: events.map((e) => [e.event, e.run_id, e.fact_id, e.from, e.to]),
  convicted,
  failures,
};
console.log(`SUMMARY ${JSON.stringify(summary)}`);
process.exit(failures.length ? 1 : 0);
