// The operator's console: starts, stops and resumes crawls, requeues dead letters, and
// polls the JSON API every 2 s to redraw. Plain DOM and SVG, no library, no build step.
// The token comes from the page's #token=... fragment (browsers never send it to the
// server), is kept for this tab in sessionStorage, and goes in an Authorization header.
"use strict";

const POLL_MS = 2000;
const COUNTS = ["fetched", "stored", "queued", "failed", "dead_letters", "hosts_active"];
const SVG = "http://www.w3.org/2000/svg";
const fragmentToken = new URLSearchParams(location.hash.slice(1)).get("token");
if (fragmentToken) {
  sessionStorage.setItem("serve-token", fragmentToken);
  history.replaceState(null, "", location.pathname + location.search);
}
const token = sessionStorage.getItem("serve-token");
let selected = new URLSearchParams(location.search).get("crawl");

async function api(path, body) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const init = { headers, cache: "no-store" };
  if (body !== undefined) {
    init.method = "POST";
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(data.error || path + ": HTTP " + response.status);
  return data;
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function row(cells, numeric) {
  const tr = element("tr");
  cells.forEach((cell, i) => {
    const td = cell instanceof Node ? element("td") : element("td", String(cell), numeric.includes(i) ? "n" : "");
    if (cell instanceof Node) td.append(cell);
    tr.append(td);
  });
  return tr;
}

function fill(selector, rows, empty) {
  const body = document.querySelector(selector + " tbody");
  body.replaceChildren(...rows);
  if (!rows.length) {
    const cols = document.querySelectorAll(selector + " thead th").length;
    const td = element("td", empty, "empty");
    td.colSpan = cols;
    body.append(element("tr")).append(td);
  }
}

function bytes(n) {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : String(n)) + " " + units[i];
}

function duration(seconds) {
  if (seconds === null || seconds === undefined) return "-";
  const s = Math.round(seconds), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return (h ? h + "h " : "") + (h || m ? m + "m " : "") + (s % 60) + "s";
}

function renderCrawls(crawls) {
  fill("#crawls", crawls.map(crawl => {
    const state = element("span", crawl.state, "state " + crawl.state);
    const tr = row([crawl.crawl_id, state, crawl.fetched, crawl.stored], [2, 3]);
    tr.dataset.crawl = crawl.crawl_id;
    if (crawl.crawl_id === selected) tr.className = "selected";
    tr.addEventListener("click", () => { selected = crawl.crawl_id; refresh(); });
    return tr;
  }), "no crawls yet");
}

function renderCrawl(crawl, stats) {
  document.getElementById("crawl-id").textContent = crawl.crawl_id + " (" + crawl.state + ")";
  document.getElementById("crawl-seeds").textContent = "seeds: " + crawl.seeds.join(", ");
  const active = crawl.state === "running" || crawl.state === "queued";
  document.getElementById("stop").disabled = !active;
  document.getElementById("resume").disabled = active;
  const cells = COUNTS.map(name => [name.replace("_", " "), crawl[name]]);
  cells.push(["elapsed", duration(crawl.elapsed)], ["downloaded", bytes(stats.bytes)],
             ["duplicates", stats.duplicates], ["retries", stats.retries]);
  document.getElementById("counts").replaceChildren(...cells.map(([label, value]) => {
    const cell = element("div");
    cell.dataset.count = label;
    cell.append(element("b", String(value)), element("span", label));
    return cell;
  }));
}

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// Pages per second between successive samples, over seconds since the first, with axes.
function renderChart(samples) {
  const chart = document.getElementById("chart");
  const [left, right, top, bottom] = [52, 628, 12, 200];
  chart.replaceChildren();
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = samples[i].at - samples[i - 1].at;
    if (dt > 0) rates.push([samples[i].at - samples[0].at, (samples[i].fetched - samples[i - 1].fetched) / dt]);
  }
  const span = Math.max(rates.length ? rates[rates.length - 1][0] : 0, 1);
  const peak = Math.max(...rates.map(r => r[1]), 1);
  const x = t => left + (t / span) * (right - left), y = r => bottom - (r / peak) * (bottom - top);
  for (let i = 0; i <= 4; i++) {
    const value = (peak * i) / 4, time = (span * i) / 4;
    chart.append(svg("line", { x1: left, x2: right, y1: y(value), y2: y(value), class: "grid" }),
                 svg("text", { x: left - 6, y: y(value) + 4, "text-anchor": "end" }, value.toFixed(1)),
                 svg("text", { x: x(time), y: bottom + 16, "text-anchor": "middle" }, Math.round(time)));
  }
  chart.append(svg("line", { x1: left, x2: left, y1: top, y2: bottom }),
               svg("line", { x1: left, x2: right, y1: bottom, y2: bottom }),
               svg("text", { x: (left + right) / 2, y: bottom + 34, "text-anchor": "middle", class: "axis-label" },
                   "time since the first sample (s)"),
               svg("text", { x: 14, y: (top + bottom) / 2, "text-anchor": "middle", class: "axis-label",
                             transform: `rotate(-90 14 ${(top + bottom) / 2})` }, "pages/s"));
  if (!rates.length) {
    chart.append(svg("text", { x: (left + right) / 2, y: (top + bottom) / 2, "text-anchor": "middle" },
                     "no fetches sampled yet"));
    return;
  }
  const points = [[0, 0], ...rates].map(([t, r]) => x(t).toFixed(1) + "," + y(r).toFixed(1));
  chart.append(svg("polyline", { points: points.join(" ") }));
}

function renderActivity(activity, crawlId) {
  const stats = activity.stats;
  renderChart(activity.samples);
  document.getElementById("bound").textContent = activity.bound
    ? "bound by " + activity.bound.bound + ": " + activity.bound.detail : "bound: no verdict (not running)";
  fill("#statuses", Object.entries(stats.status_codes).map(([code, n]) => row([code, n], [1])), "none yet");
  const refused = [["robots.txt refusals", stats.robots_refused], ["address guard refusals", stats.guard_refused],
                   ...Object.entries(stats.dropped).map(([why, n]) => ["dropped: " + why.replace(/_/g, " "), n]),
                   ...Object.entries(stats.dropped_types).map(([type, n]) => ["dropped type: " + type, n])];
  fill("#refusals", refused.map(([what, n]) => row([what, n], [1])), "none");
  const time = t => t ? new Date(t * 1000).toLocaleTimeString() : "now";
  const dash = v => v === null || v === undefined ? "-" : v;
  fill("#hosts", activity.hosts.map(h =>
    row([h.host, h.queued, dash(h.in_flight), h.next_allowed === null ? "-" : time(h.next_allowed),
         dash(h.backoff), dash(h.errors)], [1, 2, 4, 5])), "no hosts yet");
  fill("#dead-letters", activity.dead_letters.map(letter => {
    const button = element("button", "Requeue");
    button.type = "button";
    button.addEventListener("click", () => act(button, "/crawls/" + encodeURIComponent(crawlId) +
                                               "/dead_letters/requeue", { urls: [letter.url] }));
    return row([letter.url, letter.reason, letter.attempts, button], [2]);
  }), "none");
  const log = document.getElementById("log");
  const atEnd = log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
  log.textContent = activity.log.join("\n");
  if (atEnd) log.scrollTop = log.scrollHeight;
}

async function act(button, path, body) {
  const error = document.getElementById("action-error");
  button.disabled = true;
  try {
    await api(path, body);
    error.textContent = "";
  } catch (failure) {
    error.textContent = failure.message;
  }
  button.disabled = false;
  await refresh();
}

async function refresh() {
  const status = document.getElementById("status");
  try {
    const crawls = (await api("/crawls")).crawls;
    if (!selected && crawls.length) selected = crawls[0].crawl_id;
    renderCrawls(crawls);
    const crawl = crawls.find(c => c.crawl_id === selected);
    document.getElementById("detail").hidden = !crawl;
    if (crawl) {
      const activity = await api("/crawls/" + encodeURIComponent(crawl.crawl_id) + "/activity");
      renderCrawl(crawl, activity.stats);
      renderActivity(activity, crawl.crawl_id);
    }
    status.textContent = crawls.length + " crawl(s), updated " + new Date().toLocaleTimeString();
  } catch (error) {
    status.textContent = "cannot reach the service: " + error.message;
  }
}

function crawlRequest(form) {
  const body = { seeds: form.seeds.value.split("\n").map(s => s.trim()).filter(Boolean) };
  if (form.scope.value) body.scope = form.scope.value;
  if (form.max_pages.value) body.max_pages = Number(form.max_pages.value);
  const settings = form.settings.value.trim() ? JSON.parse(form.settings.value) : {};
  for (const name of ["POLITENESS_MIN_DELAY", "CONCURRENT_REQUESTS", "DEPTH_LIMIT"]) {
    if (form[name].value) settings[name] = Number(form[name].value);
  }
  if (Object.keys(settings).length) body.settings = settings;
  return body;
}

document.getElementById("start-form").addEventListener("submit", async event => {
  event.preventDefault();
  const form = event.target, error = document.getElementById("start-error");
  try {
    const created = await api("/crawls", crawlRequest(form));
    selected = created.crawl_id;
    error.textContent = "";
    form.seeds.value = "";
  } catch (failure) {
    error.textContent = failure.message;
  }
  await refresh();
});
document.getElementById("stop").addEventListener("click", event =>
  act(event.target, "/crawls/" + encodeURIComponent(selected) + "/stop", {}));
document.getElementById("resume").addEventListener("click", event =>
  act(event.target, "/crawls/" + encodeURIComponent(selected) + "/resume", {}));

refresh();
setInterval(refresh, POLL_MS);
