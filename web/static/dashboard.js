// The strand dashboard: a page per thing (#/, #/pools/ID, #/jobs/ID,
// #/processes, ...), read from the REST API and kept current by the event
// stream (GET /v1/events): an event a page shows reads that page again
// (at most every 300 ms), a job's progress updates its rows in place.
import { Refused, SignedOut, follow, signIn, signOut, signedIn } from "./api.js";
import { foldedJobs, shownJobs, updateJob, views } from "./views.js";

const main = document.getElementById("main");
const status = document.getElementById("status");
let shown = null; // what the page on screen is about: {live, pool, job, process, running}
let stream = null;
let pending = null;
let logTimer = null;
let renders = 0; // renders started; only the latest one may draw

// "#/pools/p-1" -> views.pool("p-1"); "#/pools/p-1/workers/w-2" ->
// views.worker("p-1/w-2"); "#/queues" -> views.queues().
function route() {
  const [, page, id, sub, subId] = (location.hash || "#/").split("/");
  if (page === "pools" && id && sub === "workers" && subId)
    return [views.worker, decodeURIComponent(id) + "/" + decodeURIComponent(subId), "jobs"];
  const single = { pools: "pool", jobs: "job", processes: "process", managers: "manager" };
  if (id && Object.hasOwn(single, page)) return [views[single[page]], decodeURIComponent(id), page];
  if (!page || page === "pools" || !Object.hasOwn(views, page)) return [views.home, null, "jobs"];
  return [views[page], null, page];
}

async function render() {
  const [view, id, nav] = route();
  const mine = ++renders;
  clearTimeout(logTimer);
  // Emptied before the view fills them, not after: progress events update
  // the rows the page shows.
  shownJobs.clear();
  foldedJobs.clear();
  try {
    const page = await view(id, render);
    // A render begun before this one may answer after it: an event's re-read
    // of the page just left must not draw over the page navigated to.
    if (mine !== renders) return;
    main.replaceChildren(page.node);
    shown = page;
    showSignIn(false);
    for (const a of document.querySelectorAll("nav a")) a.classList.toggle("here", a.dataset.page === nav);
    if (!stream) stream = follow(onEvent, render, (up) => { status.textContent = up ? "live" : "reconnecting…"; });
    // A running process's output has no events: its page reads it again now and then.
    if (page.running) logTimer = setTimeout(render, 3000);
  } catch (e) {
    if (mine !== renders) return;
    if (e instanceof SignedOut) {
      showSignIn(true);
      if (stream) stream.close();
      stream = null;
      return;
    }
    main.replaceChildren(Object.assign(document.createElement("p"), {
      className: "reason", textContent: e instanceof Refused ? e.message : "the gateway did not answer: " + e.message,
    }));
  }
}

// Reads the page again soon, once however many events come meanwhile.
function soon() {
  if (!pending) pending = setTimeout(() => { pending = null; render(); }, 300);
}

function onEvent(type, data) {
  if (!shown) return;
  if (type === "progress") {
    updateJob(data);
    return;
  }
  if (!shown.live.includes(type)) return;
  // A page about one thing reads again only for events of that thing.
  const of = type === "worker" || type === "job" ? data.pool : data.id;
  if (shown.pool && of !== shown.pool) return;
  if (shown.job && data.id !== shown.job) return;
  if (shown.process && data.id !== shown.process) return;
  soon();
}

function showSignIn(signedOut) {
  document.getElementById("sign-in").hidden = !signedOut;
  main.hidden = signedOut;
  document.querySelector("nav").hidden = signedOut;
  document.getElementById("sign-out").hidden = signedOut;
  if (signedOut) status.textContent = "signed out";
}

document.getElementById("sign-in").onsubmit = async (ev) => {
  ev.preventDefault();
  const input = document.getElementById("token");
  const ok = await signIn(input.value.trim());
  input.value = "";
  document.getElementById("sign-in-error").textContent = ok ? "" : "that is not this gateway's token";
  if (ok) render();
};

document.getElementById("sign-out").onclick = async () => {
  await signOut();
  if (stream) stream.close();
  stream = null;
  showSignIn(true);
};

window.addEventListener("hashchange", render);
signedIn().then((yes) => (yes ? render() : showSignIn(true)));
