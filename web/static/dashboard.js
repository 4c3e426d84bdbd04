// The strand dashboard: polls the REST API once a second and redraws the
// pools, the selected pool's workers and its jobs with their progress.
"use strict";

// The selected pool lives in the URL hash, so a pool view can be linked to.
let selected = location.hash.slice(1) || null;

function cell(text, cls) {
  const td = document.createElement("td");
  if (text instanceof Node) td.appendChild(text); else td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function code(text) {
  const c = document.createElement("code");
  c.textContent = text;
  return c;
}

function progress(job) {
  const bar = document.createElement("div");
  bar.className = "bar";
  const fill = document.createElement("div");
  fill.style.width = (job.total ? (100 * job.done) / job.total : 100) + "%";
  if (job.failed) fill.className = "failed";
  bar.appendChild(fill);
  return bar;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows);
}

class SignedOut extends Error {}

async function get(path) {
  const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  if (r.status === 401) throw new SignedOut();
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

// Signed out: the form asks for the token once; the gateway answers with an
// HttpOnly, SameSite=Strict cookie, so this script never holds it after.
function showSignIn(signedOut) {
  document.getElementById("sign-in").hidden = !signedOut;
  document.getElementById("main").hidden = signedOut;
  document.getElementById("sign-out").hidden = signedOut;
}

async function session(method, body) {
  return fetch("/v1/session", {
    method, credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
}

document.getElementById("sign-in").onsubmit = async (ev) => {
  ev.preventDefault();
  const input = document.getElementById("token");
  const r = await session("POST", { token: input.value.trim() });
  input.value = "";
  document.getElementById("sign-in-error").textContent = r.ok ? "" : "that is not this gateway's token";
  if (r.ok) refresh();
};

document.getElementById("sign-out").onclick = async () => {
  await session("DELETE");
  refresh();
};

async function refresh() {
  try {
    const { pools } = await get("/v1/pools");
    showSignIn(false);
    const body = document.querySelector("#pools tbody");
    fill(body, pools.map((p) => {
      const tr = document.createElement("tr");
      tr.className = "pool" + (p.id === selected ? " selected" : "");
      const connected = p.workers.filter((w) => w.state === "connected").length;
      tr.append(cell(code(p.id)), cell(p.state, "state-" + p.state), cell(p.backend),
        cell(connected + " / " + p.processes), cell(p.counters.tasks_queued), cell(p.counters.tasks_pending),
        cell(p.counters.tasks_done), cell(p.counters.tasks_failed), cell(p.counters.workers_lost),
        cell(p.created_at));
      tr.onclick = () => { selected = p.id; location.hash = p.id; refresh(); };
      return tr;
    }));
    const pool = pools.find((p) => p.id === selected);
    document.getElementById("detail").hidden = !pool;
    if (pool) {
      document.getElementById("detail-id").textContent = pool.id;
      document.getElementById("detail-reason").textContent = pool.reason || "";
      fill(document.querySelector("#workers tbody"), pool.workers.map((w) => {
        const tr = document.createElement("tr");
        tr.append(cell(code(w.id)), cell(w.state, "state-" + w.state), cell(w.pid), cell(w.pending),
          cell(w.state === "exited" ? w.exit_code : ""));
        return tr;
      }));
      const { jobs } = await get("/v1/pools/" + pool.id + "/jobs");
      fill(document.querySelector("#jobs tbody"), jobs.map((j) => {
        const tr = document.createElement("tr");
        tr.append(cell(code(j.id)), cell(code(j.function)), cell(j.state, "state-" + j.state),
          cell(progress(j)), cell(j.done + " / " + j.total), cell(j.failed), cell(j.created_at));
        return tr;
      }));
    }
    document.getElementById("status").textContent = "live · " + new Date().toLocaleTimeString();
  } catch (e) {
    if (e instanceof SignedOut) {
      showSignIn(true);
      document.getElementById("status").textContent = "signed out";
      return;
    }
    document.getElementById("status").textContent = "gateway unreachable: " + e.message;
  }
}

refresh();
setInterval(refresh, 1000);
