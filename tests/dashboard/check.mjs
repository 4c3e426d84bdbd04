// The dashboard in headless Chromium (Debian's, driven by puppeteer-core),
// as a user debugging a failure uses it: sign in with the token; the
// landing page lists the failing job with its failed share; the job page
// shows each failed task's error; a running job is cancelled, a process's
// output read and the process terminated, a pool resized, each through its
// confirmation; a job made meanwhile appears by the event stream alone, and
// a running one counts up in place; jobs filtered by state and paged,
// ended pools hidden until asked for; a process that exited 0 is not shown
// failed; managers have their own columns; a page's late answer never
// draws over the page navigated to; at 420 px
// nothing scrolls sideways. Screenshots at 1400 and 420 px go to
// $SCREENSHOTS. No console error is allowed.
// Environment: STRAND_URL, STRAND_TOKEN_FILE, SCREENSHOTS, CHROMIUM.
import puppeteer from "puppeteer-core";
import { mkdirSync, readFileSync } from "node:fs";

const base = process.env.STRAND_URL;
const token = readFileSync(process.env.STRAND_TOKEN_FILE, "utf8").trim();
const shots = process.env.SCREENSHOTS;
let checks = 0, failed = 0;

function check(ok, what) {
  checks++;
  if (!ok) {
    failed++;
    console.log("FAIL " + what);
  } else {
    console.log("ok   " + what);
  }
}

async function api(method, path, body) {
  const r = await fetch(base + path, {
    method, headers: { Authorization: "Bearer " + token, ...(body ? { "Content-Type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${await r.text()}`);
  return r.json();
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms = 20000) {
  for (const end = Date.now() + ms; Date.now() < end; await sleep(100)) if (await fn()) return true;
  throw new Error("timed out waiting for " + what);
}

// What the test shows: two pools, a job whose tasks failed, a long job to
// cancel, a process that talks, a queue with items.
const pool = (await api("POST", "/v1/pools", { processes: 1 })).id;
const busy = (await api("POST", "/v1/pools", { processes: 1 })).id;
await until("workers", async () => (await api("GET", `/v1/pools/${pool}`)).workers[0].state === "connected");
const failing = (await api("POST", `/v1/pools/${pool}/map`, { function: "fail", args: ["disk full on /data", "no such user 'bob'", "x"] })).id;
const ok = (await api("POST", `/v1/pools/${pool}/map`, { function: "echo", args: [1, 2], name: "two echoes" })).id;
await until("the failing job", async () => (await api("GET", `/v1/jobs/${failing}`)).state === "done");
await until("the other job", async () => (await api("GET", `/v1/jobs/${ok}`)).state === "done");
const long = (await api("POST", `/v1/pools/${busy}/map`, { function: "sleep", args: [60000, 60000, 60000] })).id;
// A client's many small applies: one row, folded.
const applies = [];
for (let i = 0; i < 4; i++) applies.push((await api("POST", `/v1/pools/${busy}/apply`, { function: "noop", arg: i })).id);
const proc = (await api("POST", "/v1/processes", { command: ["sh", "-c", "echo hello from strand; exec sleep 60"] })).id;
const queue = (await api("POST", "/v1/queues")).id;
await api("POST", `/v1/queues/${queue}/items`, { items: [1, 2, 3] });
// A manager (its type in its row), and two processes that ended: with code 0
// (not a failure) and 3.
const manager = (await api("POST", "/v1/managers", { type: "dict" })).id;
// A pool that ended: hidden from the landing page until asked for.
const gone = (await api("POST", "/v1/pools", { processes: 1 })).id;
await api("DELETE", `/v1/pools/${gone}`);
const clean = (await api("POST", "/v1/processes", { command: ["true"] })).id;
const broken = (await api("POST", "/v1/processes", { command: ["sh", "-c", "exit 3"] })).id;
await until("the processes' ends", async () => (await api("GET", `/v1/processes/${clean}`)).state === "exited" &&
  (await api("GET", `/v1/processes/${broken}`)).state === "exited");
// What a pool's task printed (a command's stderr).
await api("POST", `/v1/pools/${pool}/apply?wait=30`, { command: ["sh", "-c", "echo printed by a task >&2; echo 1"], arg: null });

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM, headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
});
const errors = [];
try {
  const page = await browser.newPage();
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("requestfailed", (r) => { if (!r.url().includes("/v1/events")) errors.push("request failed: " + r.url()); });
  await page.setViewport({ width: 1400, height: 900 });
  mkdirSync(shots, { recursive: true });
  const text = (sel) => page.$eval(sel, (e) => e.textContent);
  const waitText = (sel, want) => page.waitForFunction((s, w) => [...document.querySelectorAll(s)]
    .some((e) => e.textContent.includes(w)), { timeout: 20000 }, sel, want);
  // Clicks what sel finds once it is there. The query and the click are
  // one step in the page: views redraw as events come, and a node found
  // by one step may be gone by the next ("not clickable").
  const press = async (sel) => {
    await page.waitForSelector(sel);
    await page.$eval(sel, (e) => e.click());
  };
  const confirm = () => press("#ask-yes");

  // Signed out: the form, and nothing else.
  await page.goto(base + "/", { waitUntil: "networkidle0" });
  check(await page.$eval("#sign-in", (e) => !e.hidden), "signed out: the sign-in form");
  check(await page.$eval("#main", (e) => e.hidden), "signed out: no data");
  check(await page.$eval("nav", (e) => e.hidden), "signed out: no navigation");
  await page.type("#token", token);
  await press("#sign-in button[type=submit]");
  await waitText("#main h2", "Recent jobs");
  check(true, "signed in: the landing page");
  // The last hour's charts: workers connected (the test's pools have some),
  // each a line of the gateway's samples.
  const workersNow = await text("#chart-workers figcaption b");
  const linePoints = await page.$$eval(".chart polyline", (ls) => ls.map((l) => l.getAttribute("points").split(" ").length));
  check(Number(workersNow) >= 2 && linePoints.length === 3 && linePoints.every((n) => n >= 1),
    `the charts: ${workersNow} workers connected, lines of ${linePoints.join(", ")} points`);

  // The landing page: the failing job, its counts and a bar all failed.
  const row = `tr[data-job="${failing}"]`;
  await page.waitForSelector(row);
  const cells = await page.$$eval(`${row} td`, (tds) => tds.map((t) => t.textContent));
  check(cells.includes("3 / 3") && cells.includes("3") && cells.includes("done"), "the failing job: done, 3 of 3, 3 failed");
  const widths = await page.$eval(`${row} .bar`, (b) => [b.querySelector(".ok").style.width, b.querySelector(".failed").style.width]);
  check(widths[0] === "0%" && widths[1] === "100%", "its bar is all failed (" + widths + ")");
  check((await text(`tr[data-job="${ok}"]`)).includes("two echoes"), "a job's name is in its row");
  const okWidths = await page.$eval(`tr[data-job="${ok}"] .bar`, (b) => [b.querySelector(".ok").style.width, b.querySelector(".failed").style.width]);
  check(okWidths[0] === "100%" && okWidths[1] === "0%", "a job without failures: all done (" + okWidths + ")");
  check((await page.$$eval(`tr[data-job="${long}"] td`, (t) => t.map((x) => x.textContent))).includes("running"), "the long job runs");
  const fold = `tr[data-fold="${applies[3]}"]`;
  check((await page.$(fold)) !== null && (await text(fold)).includes("4 applies") && (await text(fold)).includes("0 / 4"),
    "four applies: one row, 0 / 4 done");
  check((await page.$(`tr[data-job="${applies[0]}"]`)) === null, "an apply of the four has no row of its own");
  await page.screenshot({ path: `${shots}/landing-1400.png`, fullPage: true });

  // A job made now appears through the event stream, with no reload.
  const fresh = (await api("POST", `/v1/pools/${pool}/map`, { function: "echo", args: [7] })).id;
  await page.waitForSelector(`tr[data-job="${fresh}"]`, { timeout: 20000 });
  check(true, "a new job appears by its event");

  // A running job's row counts up in place: the same row, its count changed
  // by the job's progress events, no reload.
  const slow = (await api("POST", `/v1/pools/${pool}/map`, { function: "sleep", args: Array(12).fill(250) })).id;
  const slowRow = `tr[data-job="${slow}"]`;
  await page.waitForFunction((r) => [...(document.querySelector(r)?.children || [])].some((td) => /^\d+ \/ 12$/.test(td.textContent)),
    { timeout: 20000 }, slowRow);
  await page.evaluate((r) => { window.stillHere = true; document.querySelector(r).dataset.seen = "1"; }, slowRow);
  const counted = async () => page.$eval(slowRow, (tr) => Number([...tr.children].map((td) => td.textContent)
    .find((t) => /^\d+ \/ 12$/.test(t)).split(" ")[0]));
  const first = await counted();
  await page.waitForFunction((r, n) => {
    const tr = document.querySelector(r + '[data-seen="1"]');
    const cell = tr && [...tr.children].map((td) => td.textContent).find((t) => /^\d+ \/ 12$/.test(t));
    return cell && Number(cell.split(" ")[0]) > n;
  }, { timeout: 20000 }, slowRow, first);
  check(await page.evaluate(() => window.stillHere === true), "a running job's row counts up in place, with no reload");
  await until("the slow job", async () => (await api("GET", `/v1/jobs/${slow}`)).state === "done");

  // The jobs of one state; older pages; ended pools hidden until asked.
  const gone_row = `a[href="#/pools/${gone}"]`;
  check((await page.$(gone_row)) === null, "an ended pool is not listed at first");
  await press("#pools-ended");
  await page.waitForSelector(gone_row);
  check((await text("#pools-ended")).startsWith("hide the"), "... shown when asked");
  await press("#pools-ended");
  await page.waitForFunction((s) => !document.querySelector(s), { timeout: 20000 }, gone_row);
  await page.select("#job-state", "done");
  await page.waitForFunction((r) => !document.querySelector(r), { timeout: 20000 }, `tr[data-job="${long}"]`);
  check((await page.$(row)) !== null, "jobs done: the failing job listed, the running one not");
  await page.select("#job-state", "");
  await page.waitForSelector(`tr[data-job="${long}"]`);
  const paged = (await api("POST", "/v1/pools", { processes: 1 })).id;
  const many = [];
  for (let i = 0; i < 50; i++) many.push((await api("POST", `/v1/pools/${paged}/map`, { function: "echo", args: [i], name: "page " + i })).id);
  await until("the 50 jobs", async () => (await api("GET", `/v1/jobs/${many[49]}`)).state === "done");
  await page.reload();
  await waitText("#main h2", "Recent jobs");
  await page.waitForSelector(`tr[data-job="${many[49]}"]`);
  check((await page.$(row)) === null, "the failing job is past the newest 50");
  await press("#jobs-older");
  await page.waitForSelector(row);
  check((await page.$(`tr[data-job="${many[49]}"]`)) === null, "older: the next page, the failing job on it");
  await press("#jobs-newest");
  await page.waitForSelector(`tr[data-job="${many[49]}"]`);
  for (const j of many) await api("DELETE", `/v1/jobs/${j}`); // the rest of the test reads the first page
  await api("DELETE", `/v1/pools/${paged}`);
  // Pools a page at a time too (these start no worker: autoscaled from 0).
  const idle = [];
  for (let i = 0; i < 51; i++) idle.push((await api("POST", "/v1/pools", { autoscale: { min: 0, max: 1 } })).id);
  await page.reload();
  await page.waitForSelector(`a[href="#/pools/${idle[50]}"]`);
  check((await page.$(`a[href="#/pools/${idle[0]}"]`)) === null, "pools: the oldest past the newest 50");
  await press("#pools-older");
  await page.waitForSelector(`a[href="#/pools/${idle[0]}"]`);
  check((await page.$(`a[href="#/pools/${idle[50]}"]`)) === null, "pools, older: the next page, the oldest on it");
  await press("#pools-newest");
  await page.waitForSelector(`a[href="#/pools/${idle[50]}"]`);
  for (const p of idle) await api("DELETE", `/v1/pools/${p}`);
  await page.reload();
  await waitText("#main h2", "Recent jobs");

  // The job page: every failed task with its error and attempts.
  await press(`${row} a[href="#/jobs/${failing}"]`);
  await waitText("pre.error", "disk full on /data");
  const errorsShown = await page.$$eval("pre.error", (p) => p.map((x) => x.textContent));
  check(errorsShown.join("|") === "disk full on /data|no such user 'bob'|x", "the job page lists each task's error: " + errorsShown.join("|"));
  const inputs = await page.$$eval(".failure-group td:nth-child(2) code", (c) => c.map((x) => x.textContent));
  check(inputs.join("|") === '"disk full on /data"|"no such user \'bob\'"|"x"', "... each with its input: " + inputs.join("|"));
  check((await page.$$(`.failure-group a[href^="#/pools/${pool}/workers/w-"]`)).length === 3, "... and the worker it ran on");
  // Failures grouped by error: one heading for each, its tasks beneath.
  const twice = (await api("POST", `/v1/pools/${pool}/map`, { function: "fail", args: ["same", "other", "same"] })).id;
  await until("the job failing twice the same", async () => (await api("GET", `/v1/jobs/${twice}`)).state === "done");
  await page.goto(`${base}/#/jobs/${twice}`);
  await waitText("pre.error", "same");
  const grouped = await page.$$eval(".failure-group", (gs) => gs.map((g) => g.querySelector("pre").textContent + ":" +
    [...g.querySelectorAll("tbody tr")].map((tr) => tr.children[0].textContent).join(",")));
  check(grouped.join(" ") === "same:0,2 other:1", "failures grouped by error, with their indexes: " + grouped.join(" "));
  await page.screenshot({ path: `${shots}/job-failures-1400.png`, fullPage: true });
  for (const [name, hash] of [["processes", "#/processes"], ["queues", "#/queues"], ["managers", "#/managers"],
    ["manager", `#/managers/${manager}`], ["rings", "#/rings"], ["pool", `#/pools/${pool}`]]) {
    await page.goto(`${base}/${hash}`);
    await page.waitForSelector("#main h2");
    await page.screenshot({ path: `${shots}/${name}-1400.png`, fullPage: true });
  }
  await page.goto(`${base}/#/jobs/${failing}`);
  await waitText("pre.error", "disk full on /data");
  await page.screenshot({ path: `${shots}/job-1400.png`, fullPage: true });

  // Cancel the long job, after the confirmation.
  await page.goto(`${base}/#/jobs/${long}`);
  await press('[data-action="cancel"]');
  await press("#ask-no"); // asked first: no means nothing happens
  check((await api("GET", `/v1/jobs/${long}`)).state === "running", "a cancel declined changes nothing");
  await press('[data-action="cancel"]');
  await confirm();
  await waitText("h2 .state", "cancelled");
  check((await api("GET", `/v1/jobs/${long}`)).state === "cancelled", "the job is cancelled");

  // The process: its output, then terminated.
  await page.goto(`${base}/#/processes`);
  await press(`a[href="#/processes/${proc}"]`);
  await waitText("#logs", "hello from strand");
  check(true, "the process page shows its output");
  await press('[data-action="terminate"]');
  await confirm();
  await waitText("h2 .state", "exited");
  check((await api("GET", `/v1/processes/${proc}`)).state === "exited", "the process is terminated");

  // A page left while it was still being read stays left: the process
  // page's read is held, the queues page is opened, then the read answers.
  let release;
  const held = new Promise((r) => { release = r; });
  await page.setRequestInterception(true);
  const hold = async (r) => {
    if (r.isInterceptResolutionHandled()) return;
    if (r.url().endsWith(`/v1/processes/${proc}`)) await held;
    r.continue();
  };
  page.on("request", hold);
  await page.evaluate(() => window.dispatchEvent(new HashChangeEvent("hashchange"))); // reads the process page again
  await sleep(200);
  await page.goto(`${base}/#/queues`);
  await waitText("h2", "Queues"); // the new page, not the last one's table
  release();
  await sleep(1000);
  check((await text("#main h2")).startsWith("Queues"), "a late answer for a page left does not draw over the page shown");
  page.off("request", hold);
  await page.setRequestInterception(false);

  // The queue: its items.
  await waitText("tr", queue);
  const queueRow = await page.$$eval("tr", (trs, q) => trs.filter((t) => t.textContent.includes(q))
    .map((t) => [...t.children].map((c) => c.textContent)), queue);
  check(queueRow.length === 1 && queueRow[0][1] === "3", "the queue with its 3 items");

  // Ended processes: code 0 is no failure (not red), code 3 is.
  await page.goto(`${base}/#/processes`);
  const endState = (p) => page.$eval(`a[href="#/processes/${p}"]`, (a) => {
    const s = a.closest("tr").querySelector(".state");
    return s.className + " " + getComputedStyle(s).color;
  });
  await page.waitForSelector(`a[href="#/processes/${clean}"]`);
  const red = "rgb(180, 35, 24)";
  const cleanState = await endState(clean), brokenState = await endState(broken);
  check(!cleanState.includes(red) && cleanState.includes("state-ended"), "a process that exited 0 is not red: " + cleanState);
  check(brokenState.includes(red), "one that exited 3 is: " + brokenState);

  // Managers: their own columns, the type in each row.
  await page.goto(`${base}/#/managers`);
  await waitText("tr", manager);
  const heads = await page.$$eval("th", (t) => t.map((x) => x.textContent));
  const managerRow = await page.$$eval("tr", (trs, m) => trs.filter((t) => t.textContent.includes(m))
    .map((t) => [...t.children].map((c) => c.textContent)), manager);
  check(heads[0] === "manager" && heads[2] === "type" && managerRow[0][2] === "dict",
    "the managers table: a manager column, its type: " + heads.join("|") + " / " + managerRow[0].join("|"));

  // The pool's output, each line after its worker; the worker's page, its own.
  await page.goto(`${base}/#/pools/${pool}`);
  await waitText("#output .stderr", "printed by a task");
  const printed = await text("#output .stderr");
  check(/^\(w-[0-9a-f]{16}\) printed by a task$/.test(printed.trim()), "the pool shows what its task printed: " + printed);
  await press('a[href^="#/pools/' + pool + '/workers/"]');
  await waitText("#main h2", "Worker");
  await waitText("#output", "printed by a task");
  check(true, "the worker's page shows its output");

  // Resize a pool to 2 workers.
  await page.goto(`${base}/#/pools/${pool}`);
  await press('[data-action="resize"]');
  await page.waitForSelector("#ask-input");
  await page.$eval("#ask-input", (i) => { i.value = ""; });
  await page.type("#ask-input", "2");
  await confirm();
  await until("the resize", async () => (await api("GET", `/v1/pools/${pool}`)).processes === 2);
  await page.waitForFunction(() => [...document.querySelectorAll("dl.facts dd")].some((d) => / live of 2$/.test(d.textContent)),
    { timeout: 20000 });
  check(true, "the pool is resized to 2 and shows it");

  // 420 px: nothing wider than the screen, on every page.
  await page.setViewport({ width: 420, height: 800 });
  for (const [name, hash] of [["landing", "#/"], ["job", `#/jobs/${failing}`], ["pool", `#/pools/${pool}`],
    ["worker", `#/pools/${pool}/workers/${(await api("GET", `/v1/pools/${pool}`)).workers[0].id}`],
    ["processes", "#/processes"], ["process", `#/processes/${proc}`], ["queues", "#/queues"],
    ["managers", "#/managers"], ["manager", `#/managers/${manager}`], ["rings", "#/rings"],
    ["job-failures", `#/jobs/${twice}`]]) {
    await page.goto(`${base}/${hash}`);
    await page.waitForSelector("#main h2");
    await sleep(300);
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    check(width <= 420, `${name} at 420 px: ${width} px wide`);
    await page.screenshot({ path: `${shots}/${name}-420.png`, fullPage: true });
  }
  // A job's counts stay whole at 420 px: its row shows them.
  await page.goto(`${base}/#/`);
  await page.waitForSelector(row);
  const narrow = await page.$$eval(`${row} td`, (tds) => tds.filter((t) => getComputedStyle(t).display !== "none").map((t) => t.textContent));
  check(narrow.includes("3 / 3") && narrow.includes("3"), "at 420 px the counts show: " + narrow.join(" | "));
} catch (e) {
  check(false, "the scenario ran: " + e.message);
} finally {
  await browser.close();
}
check(errors.length === 0, "no console errors" + (errors.length ? ": " + errors.join("; ") : ""));
console.log(`${checks - failed} of ${checks} checks passed`);
process.exit(failed ? 1 : 0);
