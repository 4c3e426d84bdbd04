// Small DOM helpers: elements, tables, progress bars, rates, and the
// confirmation dialog every action goes through.

// h("td", {class: "x"}, child, "text", ...): an element; attributes
// starting with "on" are listeners; null children are skipped.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export const link = (href, text) => h("a", { href }, text);
export const code = (text) => h("code", {}, text);
// A state, coloured as what it means (as: another state's colour).
export const state = (s, as = s) => h("span", { class: "state state-" + as }, s);

// A table in a box that scrolls sideways by itself, so the page never does.
// columns: [{title, cls}], rows: arrays of cells (text or nodes) or a
// {cells, attrs} object. cls "wide" columns hide on a narrow screen.
export function table(columns, rows, empty) {
  const head = h("tr", {}, columns.map((c) => h("th", { class: c.cls }, c.title)));
  const body = rows.map((r) => {
    const cells = Array.isArray(r) ? r : r.cells;
    return h("tr", Array.isArray(r) ? {} : r.attrs, cells.map((c, i) => h("td", { class: columns[i].cls }, c)));
  });
  if (!rows.length) body.push(h("tr", {}, h("td", { colspan: columns.length, class: "empty" }, empty || "none")));
  return h("div", { class: "scroll" }, h("table", {}, h("thead", {}, head), h("tbody", {}, body)));
}

// A job's bar: done in blue, failed in red, each in proportion to total.
export function bar(job) {
  const total = job.total || 0;
  const ok = total ? (100 * (job.done - job.failed)) / total : 0;
  const failed = total ? (100 * job.failed) / total : 0;
  const okPart = h("div", { class: "ok" });
  const failedPart = h("div", { class: "failed" });
  okPart.style.width = ok + "%";
  failedPart.style.width = failed + "%";
  return h("div", { class: "bar", title: job.done + " of " + total + " done, " + job.failed + " failed" },
    okPart, failedPart);
}

export function when(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toLocaleString();
}

export function duration(seconds) {
  if (!isFinite(seconds) || seconds < 0) return "";
  seconds = Math.round(seconds);
  if (seconds < 60) return seconds + " s";
  if (seconds < 3600) return Math.floor(seconds / 60) + " min " + (seconds % 60) + " s";
  return Math.floor(seconds / 3600) + " h " + Math.floor((seconds % 3600) / 60) + " min";
}

export function rate(perSecond) {
  if (!isFinite(perSecond) || perSecond <= 0) return "";
  return (perSecond >= 100 ? Math.round(perSecond).toLocaleString() : perSecond.toPrecision(3)) + "/s";
}

// Resolves true when the user confirms text, false otherwise. With input
// ({label, value}), resolves the value entered instead (null: cancelled).
export function ask(text, input) {
  return new Promise((resolve) => {
    const field = input ? h("input", { id: "ask-input", type: "number", min: 0, value: input.value,
      "aria-label": input.label }) : null;
    const close = (result) => { overlay.remove(); resolve(result); };
    const yes = h("button", { id: "ask-yes", type: "submit", class: "danger" }, "confirm");
    const no = h("button", { id: "ask-no", type: "button", onclick: () => close(input ? null : false) }, "cancel");
    const form = h("form", { class: "dialog", role: "dialog", "aria-modal": "true",
      onsubmit: (e) => { e.preventDefault(); close(input ? field.value : true); } },
    h("p", {}, text), field ? h("label", {}, input.label, " ", field) : null, h("div", { class: "buttons" }, no, yes));
    const overlay = h("div", { id: "ask", class: "overlay" }, form);
    document.body.append(overlay);
    (field || yes).focus();
  });
}

// A chart of one series over time, plain SVG: points are [ms, value], in
// time order; the caption says the last value (unit after it) and the
// highest.
const SVG = "http://www.w3.org/2000/svg";
export function chart(title, points, unit, id) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", "0 0 300 60");
  svg.setAttribute("preserveAspectRatio", "none");
  const line = document.createElementNS(SVG, "polyline");
  const t0 = points.length ? points[0][0] : 0, t1 = points.length ? points.at(-1)[0] : 1;
  const highest = Math.max(0, ...points.map((p) => p[1])), top = Math.max(1, highest);
  line.setAttribute("points", points.map(([t, v]) =>
    `${(300 * (t - t0) / Math.max(1, t1 - t0)).toFixed(1)},${(58 - 56 * v / top).toFixed(1)}`).join(" "));
  svg.append(line);
  const last = points.length ? points.at(-1)[1] : 0;
  const fmt = (v) => (Number.isInteger(v) ? String(v) : v.toFixed(1)) + (unit ? " " + unit : "");
  return h("figure", { class: "chart", id }, h("figcaption", {}, title, ": ", h("b", {}, fmt(last)),
    " (highest ", fmt(highest), ")"), svg);
}
