// The gateway, as the dashboard talks to it: JSON requests carried by the
// session cookie (same origin only), the sign-in, and the event stream.

export class SignedOut extends Error {}

// An HTTP error with the gateway's problem+json detail.
export class Refused extends Error {}

async function answer(r, path) {
  if (r.status === 401) throw new SignedOut();
  const type = r.headers.get("content-type") || "";
  if (!r.ok) {
    const problem = type.includes("json") ? await r.json() : null;
    throw new Refused((problem && problem.detail) || path + ": HTTP " + r.status);
  }
  return type.includes("json") ? r.json() : r.text();
}

export async function get(path) {
  return answer(await fetch(path, { cache: "no-store", credentials: "same-origin" }), path);
}

// A change (POST, PATCH, DELETE): the browser adds this origin's Origin,
// which the gateway requires of a request carried by the cookie.
export async function change(method, path, body) {
  return answer(await fetch(path, {
    method, credentials: "same-origin", cache: "no-store",
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  }), path);
}

// The token goes once to POST /v1/session; the gateway answers with an
// HttpOnly, SameSite=Strict cookie, so no script here holds it afterwards.
export async function signIn(token) {
  const r = await fetch("/v1/session", {
    method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token }),
  });
  return r.ok;
}

// Whether this browser is signed in: asked before anything is read, so a
// signed-out page logs no refused request.
export async function signedIn() {
  const r = await fetch("/v1/session", { cache: "no-store", credentials: "same-origin" });
  return r.ok && (await r.json()).signed_in;
}

export async function signOut() {
  await fetch("/v1/session", { method: "DELETE", credentials: "same-origin" });
}

// GET /v1/events: onEvent(type, data) for each event. The browser
// reconnects by itself (with Last-Event-ID); a reset or a dropped stream
// means events were missed, so onGap() reads everything again.
export function follow(onEvent, onGap, onState) {
  const source = new EventSource("/v1/events");
  for (const type of ["pool", "manager", "worker", "job", "progress", "process"])
    source.addEventListener(type, (e) => onEvent(type, JSON.parse(e.data)));
  source.addEventListener("reset", onGap);
  source.addEventListener("dropped", onGap);
  source.onopen = () => onState(true);
  source.onerror = () => onState(false);
  return source;
}
