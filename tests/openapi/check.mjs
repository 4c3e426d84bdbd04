// Checks a running gateway against its own description (GET
// /v1/openapi.json): the document is valid OpenAPI 3.1; every documented
// route and method is routed by the server, every other method on it is
// 405, and nothing is answered below a documented path; and real
// responses, successes and problems, of a scenario that touches every
// route validate against the schema documented for their status and type.
// Environment: STRAND_URL, STRAND_TOKEN_FILE. Exit 0 when every check passed.
import SwaggerParser from "@apidevtools/swagger-parser";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { readFileSync } from "node:fs";

const base = process.env.STRAND_URL;
const token = readFileSync(process.env.STRAND_TOKEN_FILE, "utf8").trim();
const METHODS = ["get", "post", "put", "patch", "delete"];
let checks = 0, failed = 0;

function check(ok, what) {
  checks++;
  if (!ok) {
    failed++;
    console.log("FAIL " + what);
  }
  return ok;
}

async function call(method, path, body, { auth = true, headers = {} } = {}) {
  const h = { ...headers };
  if (auth) h.Authorization = "Bearer " + token;
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await fetch(base + path, {
    method, headers: h, body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await res.text();
  let json;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { method, path, status: res.status, type: (res.headers.get("content-type") || "").split(";")[0].trim(), text, json };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const esc = (s) => s.replaceAll("~", "~0").replaceAll("/", "~1");

// ---- the document ----------------------------------------------------------
const served = await call("GET", "/v1/openapi.json");
check(served.status === 200 && served.type === "application/json", "GET /v1/openapi.json answers JSON");
const doc = served.json;
try {
  await SwaggerParser.validate(structuredClone(doc));
  check(true, "valid");
} catch (e) {
  check(false, "the document is valid OpenAPI: " + e.message);
}
check(doc.openapi === "3.1.0", "OpenAPI 3.1.0");

const DOC = "urn:strand:openapi";
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(doc, DOC);

const templates = Object.keys(doc.paths).map((t) => ({
  t, re: new RegExp("^" + t.replace(/[.]/g, "\\.").replace(/\{[^}]+\}/g, "[^/]+") + "$"),
}));
const templateOf = (path) => templates.find((x) => x.re.test(path.split("?")[0]))?.t;

// ---- responses against their schemas ---------------------------------------
let validated = 0;
function validate(r) {
  const t = templateOf(r.path);
  if (!check(t, `${r.method} ${r.path} is a documented path`)) return r;
  const operation = doc.paths[t][r.method.toLowerCase()];
  if (!check(operation, `${r.method} ${t} is documented`)) return r;
  let response = operation.responses[String(r.status)];
  let at = `#/paths/${esc(t)}/${r.method.toLowerCase()}/responses/${r.status}`;
  if (!check(response, `${r.method} ${t} documents status ${r.status} (${r.text.slice(0, 200)})`)) return r;
  if (response.$ref) {
    at = response.$ref;
    response = response.$ref.split("/").slice(1).reduce((o, k) => o[k.replaceAll("~1", "/").replaceAll("~0", "~")], doc);
  }
  if (!check(response.content?.[r.type], `${r.method} ${t} ${r.status} documents type ${r.type}`)) return r;
  if (r.type.endsWith("json")) {
    const v = ajv.getSchema(`${DOC}${at}/content/${esc(r.type)}/schema`);
    if (!check(v(r.json), `${r.method} ${r.path} ${r.status} matches its schema: ${JSON.stringify(v.errors)} in ${r.text.slice(0, 300)}`))
      return r;
  }
  validated++;
  return r;
}
const v = async (...a) => validate(await call(...a));

// A scenario over every route: what a user does, successes and errors.
const pool = (await v("POST", "/v1/pools", { processes: 1 })).json.id;
for (let i = 0; i < 100 && (await call("GET", `/v1/pools/${pool}`)).json.workers[0].state !== "connected"; i++) await sleep(100);
await v("GET", "/v1/pools");
await v("GET", `/v1/pools/${pool}`);
const job = (await v("POST", `/v1/pools/${pool}/map`, { function: "fail", args: ["a", 1] })).json.id;
for (let i = 0; i < 100 && (await call("GET", `/v1/jobs/${job}`)).json.state !== "done"; i++) await sleep(50);
await v("GET", `/v1/jobs/${job}`);
await v("GET", `/v1/jobs/${job}/results?limit=1`);
await v("GET", `/v1/jobs/${job}/results?order=completion`);
await v("GET", `/v1/jobs/${job}/results?order=completion&shape=columns`);
await v("GET", `/v1/jobs/${job}/failures`);
await v("GET", "/v1/jobs?limit=2");
await v("GET", `/v1/jobs?pool=${pool}&state=done`);
await v("POST", `/v1/pools/${pool}/apply?wait=10`, { function: "echo", arg: { x: 1 } });
await v("POST", `/v1/pools/${pool}/apply`, { function: "sleep", arg: 50 });
await v("GET", `/v1/pools/${pool}/jobs`);
const sub = (await v("POST", `/v1/pools/${pool}/map`, { function: "echo", args: [1], total: 2 })).json.id;
await v("POST", `/v1/jobs/${sub}/args`, { offset: 1, args: [2] });
await v("POST", `/v1/jobs/${sub}/args`, { offset: 5, args: [2] }); // 409
await v("PATCH", `/v1/pools/${pool}`, { processes: 2 });
await v("PATCH", `/v1/pools/${pool}`, { autoscale: { min: 1, max: 2 } });
await v("GET", `/v1/pools/${pool}`);
await v("PATCH", `/v1/pools/${pool}`, { autoscale: null });
const slow = (await v("POST", `/v1/pools/${pool}/map`, { function: "sleep", args: [2000, 2000, 2000] })).json.id;
await v("DELETE", `/v1/jobs/${slow}`); // cancels
await v("DELETE", `/v1/jobs/${sub}`); // removes
const q = (await v("POST", "/v1/queues")).json.id;
await v("POST", `/v1/queues/${q}/items`, { items: [1, "two"] });
await v("POST", `/v1/queues/${q}/items`, { item: { three: 3 } });
await v("POST", `/v1/queues/${q}/take?max=2`);
await v("GET", `/v1/queues/${q}`);
await v("GET", "/v1/queues");
await v("DELETE", `/v1/queues/${q}`);
const pipe = (await v("POST", "/v1/pipes", { duplex: false })).json.id;
await v("POST", `/v1/pipes/${pipe}/ends/1/send`, { item: 3 });
await v("POST", `/v1/pipes/${pipe}/ends/0/recv?wait=1`);
await v("POST", `/v1/pipes/${pipe}/ends/0/send`, { item: 3 }); // 409: a simplex pipe's receiving end
await v("GET", "/v1/pipes");
await v("GET", `/v1/pipes/${pipe}`);
await v("DELETE", `/v1/pipes/${pipe}`);
const manager = (await v("POST", "/v1/managers", { type: "dict" })).json.id;
const handle = (await v("POST", `/v1/managers/${manager}/calls`, { method: "set", args: ["a", 1] })).json;
await v("GET", `/v1/managers/${manager}/calls/${handle.id}?wait=10`);
await v("GET", "/v1/managers");
await v("GET", `/v1/managers/${manager}`);
await v("DELETE", `/v1/managers/${manager}`);
const proc = (await v("POST", "/v1/processes", { command: ["sh", "-c", "echo hi; exit 4"], env: { A: "b" } })).json.id;
await v("GET", `/v1/processes/${proc}?wait=10`);
await v("GET", `/v1/processes/${proc}/logs`);
await v("GET", "/v1/processes");
await v("DELETE", `/v1/processes/${proc}`);
const ring = (await v("POST", "/v1/rings", { size: 2, command: ["true"] })).json.id;
await v("GET", `/v1/rings/${ring}?wait=10`);
await v("GET", "/v1/rings");
await v("DELETE", `/v1/rings/${ring}`);
await v("POST", `/v1/pools/${pool}/close`);
await v("POST", `/v1/pools/${pool}/map`, { function: "echo", args: [1] }); // 409: closed
await v("DELETE", `/v1/pools/${pool}`);
await v("GET", "/healthz");
await v("GET", "/metrics");
await v("GET", "/v1/openapi.json");
await v("GET", "/v1/session");
await v("GET", "/v1/session", undefined, { auth: false });
await v("POST", "/v1/session", { token });
await v("POST", "/v1/session", { token: "wrong" }); // 401
await v("DELETE", "/v1/session");
await v("GET", "/");
await v("GET", "/web/style.css");
await v("GET", "/web/missing.js"); // 404
// Problems.
await v("POST", "/v1/pools", "{not json"); // 400
await v("POST", "/v1/pools", { processes: 1, backend: "nowhere" }); // 422
await v("GET", "/v1/pools", undefined, { auth: false }); // 401
await v("GET", "/v1/openapi.json", undefined, { auth: false }); // 401
await v("GET", "/metrics", undefined, { auth: false }); // 401
await v("GET", "/v1/events", undefined, { auth: false }); // 401
await v("GET", "/v1/jobs/j-0000000000000000"); // 404
await v("GET", "/v1/jobs?state=sideways"); // 400
await v("GET", "/v1/events?pool="); // 400
// The event stream answers its headers, then frames: read its start only.
{
  const ac = new AbortController();
  const res = await fetch(base + "/v1/events", { headers: { Authorization: "Bearer " + token }, signal: ac.signal });
  check(res.status === 200 && res.headers.get("content-type") === "text/event-stream", "GET /v1/events streams");
  check(!!doc.paths["/v1/events"].get.responses["200"].content["text/event-stream"], "the stream's type is documented");
  ac.abort();
}

// ---- the routes both ways --------------------------------------------------
const dummy = { id: "x-0000000000000000", end: "0", call: "j-0000000000000000", file: "none.js" };
for (const { t } of templates) {
  const path = t.replace(/\{([^}]+)\}/g, (_, name) => dummy[name] ?? "x");
  for (const m of METHODS) {
    if (t === "/v1/events" && m === "get") continue; // a stream: checked above
    const r = await call(m.toUpperCase(), path, ["post", "put", "patch"].includes(m) ? {} : undefined);
    if (doc.paths[t][m])
      check(r.status !== 405 && !(r.status === 404 && r.json?.detail === "no such resource"),
        `${m.toUpperCase()} ${t} is routed (got ${r.status} ${r.text.slice(0, 120)})`);
    else
      check(r.status === 405, `${m.toUpperCase()} ${t} is not documented and answers 405 (got ${r.status})`);
  }
  const below = await call("GET", path + "/below");
  check(below.status === 404 || below.status === 405, `nothing is answered below ${t} (got ${below.status})`);
}

console.log(`${checks - failed} of ${checks} checks passed; ${validated} responses validated`);
process.exit(failed ? 1 : 0);
