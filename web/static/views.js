// The dashboard's pages. Each view reads what it shows from the REST API
// and returns its content; `live` says which events make it read again,
// and job rows are updated in place from progress events.
import { Refused, change, get } from "./api.js";
import { ask, bar, chart, code, duration, h, link, rate, state, table, when } from "./ui.js";

// Jobs on screen, by id: a progress event updates their rows in place.
export const shownJobs = new Map();

// What runs a worker or process: its pid, container or pod, or Slurm job;
// or a worker that joined from a host of its own.
function runsAs(x) {
  return x.pid || x.container || (x.slurm_job ? "slurm job " + x.slurm_job : "") || (x.joined ? "joined" : "");
}

function jobRate(job) {
  const start = Date.parse(job.created_at);
  const end = job.ended_at ? Date.parse(job.ended_at) : Date.now();
  return job.done / Math.max((end - start) / 1000, 1);
}

const jobColumns = [
  { title: "job" }, { title: "pool", cls: "wide" }, { title: "function", cls: "wide" }, { title: "state" },
  { title: "progress" }, { title: "done" }, { title: "failed" }, { title: "rate" }, { title: "ETA" },
  { title: "created", cls: "wide" },
];

export function jobCells(j) {
  const speed = jobRate(j);
  const running = j.state === "running" || j.state === "submitting";
  return [
    link("#/jobs/" + j.id, code(j.id)),
    link((j.pool.startsWith("m-") ? "#/managers/" : "#/pools/") + j.pool, code(j.pool)),
    j.name ? h("span", {}, h("b", {}, j.name), " ", code(j.function)) : code(j.function),
    state(j.state), bar(j), j.done + " / " + j.total,
    h("span", { class: j.failed ? "reason" : "" }, j.failed), rate(speed),
    running ? duration((j.total - j.done) / speed) : "", when(j.created_at),
  ];
}

// A client's many small applies (runs of FOLD_MIN or more one-task jobs
// of one pool, function and name, one after another) show as one row: how
// many, and their progress together. Each job shown in a fold maps to it.
const FOLD_MIN = 3;
export const foldedJobs = new Map();

function foldable(a, b) {
  return a.total === 1 && b.total === 1 && a.pool === b.pool && a.function === b.function &&
    (a.name || "") === (b.name || "");
}

function foldCells(jobs) {
  const sum = { total: jobs.length, done: 0, failed: 0 };
  for (const j of jobs) {
    sum.done += j.done;
    sum.failed += j.failed;
  }
  const j = jobs[0]; /* the newest */
  const running = jobs.some((x) => x.state === "running" || x.state === "submitting");
  return [
    h("span", { title: jobs.map((x) => x.id).join(" ") }, jobs.length + " applies"),
    link((j.pool.startsWith("m-") ? "#/managers/" : "#/pools/") + j.pool, code(j.pool)),
    j.name ? h("span", {}, h("b", {}, j.name), " ", code(j.function)) : code(j.function),
    state(running ? "running" : "done"), bar(sum), sum.done + " / " + sum.total,
    h("span", { class: sum.failed ? "reason" : "" }, sum.failed), "", "", when(j.created_at),
  ];
}

function jobTable(jobs, empty) {
  const rows = [];
  for (let i = 0; i < jobs.length;) {
    let k = i;
    while (k + 1 < jobs.length && foldable(jobs[i], jobs[k + 1])) k++;
    const run = jobs.slice(i, k + 1);
    for (const j of run) shownJobs.set(j.id, j);
    if (run.length >= FOLD_MIN) {
      for (const j of run) foldedJobs.set(j.id, run);
      rows.push({ cells: foldCells(run), attrs: { "data-fold": run[0].id } });
    } else {
      for (const j of run) rows.push({ cells: jobCells(j), attrs: { "data-job": j.id } });
    }
    i = k + 1;
  }
  return table(jobColumns, rows, empty);
}

// Replaces the rows of job (a progress event's counts merged in).
export function updateJob(update) {
  const j = shownJobs.get(update.job);
  if (!j) return false;
  Object.assign(j, { done: update.done, failed: update.failed, total: update.total, state: update.state });
  for (const tr of document.querySelectorAll(`tr[data-job="${CSS.escape(j.id)}"]`))
    tr.replaceChildren(...jobCells(j).map((c, i) => h("td", { class: jobColumns[i].cls }, c)));
  const fold = foldedJobs.get(j.id);
  for (const tr of fold ? document.querySelectorAll(`tr[data-fold="${CSS.escape(fold[0].id)}"]`) : [])
    tr.replaceChildren(...foldCells(fold).map((c, i) => h("td", { class: jobColumns[i].cls }, c)));
  return true;
}

function facts(pairs) {
  return h("dl", { class: "facts" }, pairs.filter(([, v]) => v !== undefined && v !== null && v !== "")
    .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

// An action button: asks first, then does it; failures are shown beside it.
function action(label, question, doIt, rerender) {
  const note = h("span", { class: "reason" });
  const button = h("button", { type: "button", class: "danger", "data-action": label, onclick: async () => {
    const answer = await ask(question);
    if (!answer) return;
    try {
      await doIt(answer);
      rerender();
    } catch (e) {
      note.textContent = e.message;
    }
  } }, label);
  return h("span", { class: "action" }, button, note);
}

// Resize: asks for the new size, then PATCHes it.
function resizeAction(p, rerender) {
  const note = h("span", { class: "reason" });
  const button = h("button", { type: "button", "data-action": "resize", onclick: async () => {
    const n = await ask("Resize pool " + p.id + " to how many workers?", { label: "workers", value: p.processes });
    if (n === null) return;
    try {
      await change("PATCH", "/v1/pools/" + p.id, { processes: Number(n) });
      rerender();
    } catch (e) {
      note.textContent = e.message;
    }
  } }, "resize");
  return h("span", { class: "action" }, button, note);
}

// A worker's or process's state; one that exited with code 0 ended as
// asked, not failed.
const exitState = (x) => x.state === "exited" && x.exit_code === 0 ? state("exited", "ended") : state(x.state);
const workerState = (w) => w.queued ? state("queued") : exitState(w);

function poolRow(p, base) {
  const connected = p.workers.filter((w) => w.state === "connected").length;
  const kind = base === "#/managers/" ? [p.type, p.backend] : [p.backend];
  return [link(base + p.id, code(p.id)), state(p.state), ...kind, connected + " / " + p.processes,
    p.counters.tasks_queued, p.counters.tasks_pending, p.counters.tasks_done,
    h("span", { class: p.counters.tasks_failed ? "reason" : "" }, p.counters.tasks_failed),
    p.counters.workers_lost, when(p.created_at)];
}
const poolColumns = [{ title: "pool" }, { title: "state" }, { title: "backend", cls: "wide" }, { title: "workers" },
  { title: "queued" }, { title: "pending", cls: "wide" }, { title: "done" }, { title: "failed" },
  { title: "lost", cls: "wide" }, { title: "created", cls: "wide" }];
// A manager's row: its id, its type (dict, runtime, ...) and its backend.
const managerColumns = [{ title: "manager" }, { title: "state" }, { title: "type" }, { title: "backend", cls: "wide" },
  ...poolColumns.slice(3)];

// The newest lines a pool's tasks printed (of one worker: worker), each
// after its worker, stderr's marked. Output has no events: the panel reads
// them again every few seconds while it is on screen.
const OUTPUT_SHOWN = 200;
async function outputPanel(pool, worker) {
  const pre = h("pre", { class: "logs", id: "output" });
  const fill = async () => {
    const { lines } = await get(`/v1/pools/${pool}/logs?tail=${OUTPUT_SHOWN}` + (worker ? "&worker=" + worker : ""));
    pre.replaceChildren(...(lines.length ? lines.map((l) =>
      h("span", { class: "line " + l.stream }, worker ? "" : `(${l.worker}) `, l.text, "\n")) : ["(nothing printed)"]));
  };
  const again = () => setTimeout(async () => {
    if (!pre.isConnected) return;
    try { await fill(); } catch { /* the next look, or the next page, tells */ }
    again();
  }, 3000);
  await fill();
  again();
  return pre;
}

// The last hour's charts, from GET /v1/history's samples (over all pools):
// tasks done a second between two samples, tasks queued or in workers'
// hands, workers connected.
function charts(samples) {
  const at = samples.map((s) => Date.parse(s.at));
  const series = (f) => samples.map((s, i) => [at[i], f(s, i)]);
  const done = series((s, i) => i && at[i] > at[i - 1] ? (s.done - samples[i - 1].done) * 1000 / (at[i] - at[i - 1]) : 0)
    .slice(1);
  return h("div", { class: "charts" },
    chart("tasks done a second", done, "/s", "chart-done"),
    chart("tasks queued or in hand", series((s) => s.queued + s.pending), "", "chart-queued"),
    chart("workers connected", series((s) => s.workers), "", "chart-workers"));
}

// A list shown a page at a time, newest first: the cursors of the older
// pages read through, kept while the dashboard is open, by list.
const PAGE = 50;
const paged = {};
function pageOf(name, path) {
  const cursors = (paged[name] ??= []);
  return path + (path.includes("?") ? "&" : "?") + "limit=" + PAGE +
    (cursors.length ? "&cursor=" + encodeURIComponent(cursors.at(-1)) : "");
}
// The buttons to the newest page and the next older one (older: the
// page's next_cursor, null on the last).
function pager(name, older, rerender) {
  const cursors = (paged[name] ??= []);
  const go = (f) => () => { f(); rerender(); };
  return [cursors.length ? h("button", { id: name + "-newest", type: "button", onclick: go(() => cursors.splice(0)) },
    "newest") : null,
  older ? h("button", { id: name + "-older", type: "button", onclick: go(() => cursors.push(older)) }, "older") : null];
}

// The landing page's choices: the jobs' state shown (every one: ""), and
// whether ended pools are shown (not by default).
const LIVE_POOLS = "active,closed,terminating";
const landing = { state: "", ended: false };

export const views = {
  // Recent jobs of every pool, and the pools.
  async home(id, rerender) {
    const [{ jobs, next_cursor: olderJobs }, { pools, next_cursor: olderPools }, history] = await Promise.all([
      get(pageOf("jobs", "/v1/jobs" + (landing.state ? "?state=" + landing.state : ""))),
      get(pageOf("pools", "/v1/pools" + (landing.ended ? "" : "?state=" + LIVE_POOLS))), get("/v1/history")]);
    const again = (f) => () => { f(); rerender(); };
    const filter = h("select", { id: "job-state", "aria-label": "jobs in state", onchange: (ev) => again(() => {
      landing.state = ev.target.value;
      paged.jobs = [];
    })() }, ["", "running", "submitting", "done", "cancelled"].map((s) =>
      h("option", { value: s, selected: s === landing.state }, s || "every state")));
    const toggle = h("button", { id: "pools-ended", type: "button", onclick: again(() => {
      landing.ended = !landing.ended;
      paged.pools = [];
    }) }, landing.ended ? "hide the ended" : "show the ended");
    return { live: ["job", "pool", "worker"], node: h("div", {},
      h("h2", {}, "The last hour"), charts(history.samples),
      h("h2", {}, "Recent jobs"), h("div", { class: "actions" }, filter, pager("jobs", olderJobs, rerender)),
      jobTable(jobs, landing.state ? "no " + landing.state + " jobs" : "no jobs yet"),
      h("h2", {}, "Pools"), h("div", { class: "actions" }, toggle, pager("pools", olderPools, rerender)),
      table(poolColumns, pools.map((p) => poolRow(p, "#/pools/")), landing.ended ? "no pools" : "no live pools")) };
  },

  async pool(id, rerender) {
    const [p, { jobs }, output] = await Promise.all([get("/v1/pools/" + id), get("/v1/pools/" + id + "/jobs"),
      outputPanel(id)]);
    const ended = p.state === "terminated" || p.state === "failed" || p.state === "terminating";
    const r = p.resources;
    const actions = h("div", { class: "actions" }, !ended && !p.autoscale ? resizeAction(p, rerender) : null,
      !ended ? action("delete", "Terminate pool " + id + "? Its workers stop; unfinished tasks fail.",
        () => change("DELETE", "/v1/pools/" + id), rerender) : null);
    const workers = p.workers.map((w) => [link(`#/pools/${id}/workers/${w.id}`, code(w.id)),
      workerState(w), runsAs(w), w.pending,
      w.state === "exited" ? w.exit_code : "", w.last_words ? h("pre", { class: "error" }, w.last_words) : ""]);
    return { live: ["pool", "worker", "job"], pool: id, node: h("div", {},
      h("h2", {}, "Pool ", code(id), " ", state(p.state)), p.reason ? h("p", { class: "reason" }, p.reason) : null,
      actions,
      facts([["backend", p.backend], ["image", p.image], ["workers", p.live_workers + " live of " + p.processes],
        ["autoscale", p.autoscale && `${p.autoscale.min} to ${p.autoscale.max}: ${p.autoscale.reason}`],
        ["resources", `cpu ${r.cpu || "any"}, memory ${r.memory_mb ? r.memory_mb + " MB" : "any"}, gpu ${r.gpu}`],
        ["attempts", p.max_attempts], ["queued", p.counters.tasks_queued], ["pending", p.counters.tasks_pending],
        ["done", p.counters.tasks_done], ["failed", p.counters.tasks_failed],
        ["workers started", p.counters.workers_started], ["workers lost", p.counters.workers_lost],
        ["created", when(p.created_at)]]),
      h("h3", {}, "Workers"),
      table([{ title: "worker" }, { title: "state" }, { title: "pid, container or job" }, { title: "pending" },
        { title: "exit code" }, { title: "last words" }], workers, "no workers"),
      h("h3", {}, "Output"), output,
      h("h3", {}, "Jobs"), jobTable(jobs, "no jobs")) };
  },

  // One worker of a pool ("POOL/WORKER"): what it is and what it printed.
  async worker(ids) {
    const [pool, id] = ids.split("/");
    const [p, output] = await Promise.all([get("/v1/pools/" + pool), outputPanel(pool, id)]);
    const w = p.workers.find((x) => x.id === id);
    if (!w) throw new Refused("no such worker of pool " + pool + " (or it ended long ago)");
    return { live: ["pool", "worker"], pool, node: h("div", {},
      h("h2", {}, "Worker ", code(id), " ", workerState(w)),
      facts([["pool", link("#/pools/" + pool, code(pool))], ["pid, container or job", runsAs(w) || w.handle],
        ["pending", w.pending], ["exit code", w.state === "exited" ? w.exit_code : ""]]),
      w.last_words ? h("pre", { class: "error" }, w.last_words) : null,
      h("h3", {}, "Output"), output) };
  },

  async job(id, rerender) {
    const j = await get("/v1/jobs/" + id);
    const failures = h("div", {});
    const more = h("button", { type: "button", id: "more-failures" }, "more");
    const groups = new Map(); // error -> its heading and table, in the order first met
    let cursor = "";
    const page = async () => {
      const f = await get("/v1/jobs/" + id + "/failures?limit=50" + (cursor ? "&cursor=" + cursor : ""));
      for (const x of f.items) {
        let g = groups.get(x.error);
        if (!g) {
          g = { n: 0, count: h("span", {}), rows: [] };
          g.table = h("div", {});
          failures.append(h("div", { class: "failure-group" }, h("pre", { class: "error" }, x.error), g.count, g.table));
          groups.set(x.error, g);
        }
        g.n++;
        g.count.textContent = g.n === 1 ? "1 task" : g.n + " tasks";
        g.rows.push([x.index, failedInput(x), x.attempts, x.run_ms === undefined ? "" : ms(x.run_ms),
          x.worker ? link(`#/pools/${j.pool}/workers/${x.worker}`, code(x.worker)) : "gateway"]);
      }
      for (const g of groups.values())
        g.table.replaceChildren(table([{ title: "index" }, { title: "input" }, { title: "attempts" },
          { title: "ran" }, { title: "worker", cls: "wide" }], g.rows, ""));
      cursor = f.next_cursor;
      more.hidden = f.end;
    };
    more.onclick = page;
    if (j.failed) await page();
    else more.hidden = true;
    const running = j.state === "running" || j.state === "submitting";
    return { live: ["job"], job: id, node: h("div", {},
      h("h2", {}, "Job ", code(id), " ", state(j.state)),
      h("div", { class: "actions" }, running
        ? action("cancel", "Cancel job " + id + "? Its tasks without a result fail \"cancelled\".",
          () => change("DELETE", "/v1/jobs/" + id), rerender)
        : action("remove", "Remove job " + id + " and its results?",
          async () => { await change("DELETE", "/v1/jobs/" + id); location.hash = "#/"; }, rerender)),
      jobTable([j]),
      facts([["chunksize", j.chunksize], ["received", j.received], ["ended", when(j.ended_at)]]),
      h("h3", {}, "Failed tasks"), j.failed ? failures : h("p", {}, "none"), more) };
  },

  async processes(_, rerender) {
    const { processes, next_cursor: older } = await get(pageOf("processes", "/v1/processes"));
    return { live: ["process"], node: h("div", {}, h("h2", {}, "Processes"),
      h("div", { class: "actions" }, pager("processes", older, rerender)), processTable(processes)) };
  },

  async process(id, rerender) {
    const p = await get("/v1/processes/" + id);
    const logs = await get("/v1/processes/" + id + "/logs");
    return { live: ["process"], process: id, running: p.state === "running", node: h("div", {},
      h("h2", {}, "Process ", code(id), " ", exitState(p)), p.reason ? h("p", { class: "reason" }, p.reason) : null,
      p.state === "running" ? h("div", { class: "actions" }, action("terminate", "Terminate process " + id + "?",
        () => change("DELETE", "/v1/processes/" + id), rerender)) : null,
      facts([["what", what(p)], ["backend", p.backend], ["pid, container or job", runsAs(p) || p.handle],
        ["exit code", p.exit_code], ["ring", p.ring], ["created", when(p.created_at)], ["ended", when(p.ended_at)]]),
      h("h3", {}, "Output"), h("pre", { class: "logs", id: "logs" }, logs || "(nothing yet)")) };
  },

  async queues(_, rerender) {
    const [{ queues, next_cursor: olderQueues }, { pipes, next_cursor: olderPipes }] = await Promise.all([
      get(pageOf("queues", "/v1/queues")), get(pageOf("pipes", "/v1/pipes"))]);
    return { live: [], node: h("div", {},
      h("h2", {}, "Queues ", h("button", { type: "button", onclick: rerender }, "refresh")),
      h("div", { class: "actions" }, pager("queues", olderQueues, rerender)),
      table([{ title: "queue" }, { title: "items" }, { title: "waiting readers" }, { title: "created", cls: "wide" }],
        queues.map((q) => [code(q.id), q.size, q.waiting_readers, when(q.created_at)]), "no queues"),
      h("h2", {}, "Pipes"), h("div", { class: "actions" }, pager("pipes", olderPipes, rerender)),
      table([{ title: "pipe" }, { title: "kind" }, { title: "0 → 1 items" }, { title: "1 → 0 items" },
        { title: "waiting readers" }],
      pipes.map((p) => [code(p.id), p.duplex ? "duplex" : "simplex", p.directions[0].size,
        p.directions[1] ? p.directions[1].size : "", p.directions.reduce((n, d) => n + d.waiting_readers, 0)]),
      "no pipes")) };
  },

  async managers(_, rerender) {
    const { managers, next_cursor: older } = await get(pageOf("managers", "/v1/managers"));
    return { live: ["manager", "worker"], node: h("div", {}, h("h2", {}, "Managers"),
      h("div", { class: "actions" }, pager("managers", older, rerender)),
      table(managerColumns, managers.map((m) => poolRow(m, "#/managers/")), "no managers")) };
  },

  async manager(id, rerender) {
    const [m, { jobs }] = await Promise.all([get("/v1/managers/" + id), get("/v1/jobs?limit=100&pool=" + id)]);
    const live = m.state === "active";
    return { live: ["manager", "worker", "job"], pool: id, node: h("div", {},
      h("h2", {}, "Manager ", code(id), " ", state(m.state)), m.reason ? h("p", { class: "reason" }, m.reason) : null,
      live ? h("div", { class: "actions" }, action("shut down", "Shut manager " + id + " down?",
        () => change("DELETE", "/v1/managers/" + id), rerender)) : null,
      facts([["type", m.type], ["backend", m.backend], ["calls done", m.counters.tasks_done],
        ["calls failed", m.counters.tasks_failed], ["created", when(m.created_at)]]),
      h("h3", {}, "Calls"), jobTable(jobs, "no calls")) };
  },

  async rings(_, rerender) {
    const { rings, next_cursor: older } = await get(pageOf("rings", "/v1/rings"));
    return { live: ["process"], node: h("div", {}, h("h2", {}, "Rings"),
      h("div", { class: "actions" }, pager("rings", older, rerender)),
      table([{ title: "ring" }, { title: "state" }, { title: "size" }, { title: "master", cls: "wide" },
        { title: "members" }],
      rings.map((r) => [code(r.id), state(r.state), r.size, r.master_addr + ":" + r.master_port,
        h("span", {}, r.members.map((p) => [link("#/processes/" + p.id, code(p.id)), " ", exitState(p), " "]))]),
      "no rings")) };
  },
};

// A failed task's input as JSON (its head, and its size, when long);
// none for a task of several inputs.
function failedInput(x) {
  if (x.input !== undefined) return code(JSON.stringify(x.input));
  if (x.input_head !== undefined) return [code(x.input_head + "…"), " (" + x.input_bytes + " bytes)"];
  return "";
}

const ms = (t) => t < 1000 ? t.toFixed(t < 10 ? 2 : 0) + " ms" : (t / 1000).toFixed(1) + " s";

function what(p) {
  return p.spec.command ? code(p.spec.command.join(" ")) : code(p.spec.function || "");
}

function processTable(processes) {
  return table([{ title: "process" }, { title: "state" }, { title: "exit code" }, { title: "what" },
    { title: "backend", cls: "wide" }, { title: "created", cls: "wide" }],
  processes.map((p) => [link("#/processes/" + p.id, code(p.id)), exitState(p),
    p.exit_code ?? "", what(p), p.backend, when(p.created_at)]), "no processes");
}
