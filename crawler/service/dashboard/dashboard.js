// The crawl service's dashboard: polls the JSON API every 2 s and redraws, no reload.
// Plain DOM and SVG, no library, no build step. A token (when the service has one) is
// taken from the page's #token=... fragment, which browsers never send to the server.
"use strict";

const POLL_MS = 2000;
const COUNTS = ["fetched", "queued", "failed", "stored", "dead_letters", "hosts_active"];
const token = new URLSearchParams(location.hash.slice(1)).get("token");
let selected = new URLSearchParams(location.search).get("crawl");

async function api(path) {
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const response = await fetch(path, { headers, cache: "no-store" });
  if (!response.ok) throw new Error(path + ": HTTP " + response.status);
  return response.json();
}

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function renderCrawls(crawls) {
  const body = document.querySelector("#crawls tbody");
  body.replaceChildren();
  for (const crawl of crawls) {
    const row = element("tr");
    row.dataset.crawl = crawl.crawl_id;
    if (crawl.crawl_id === selected) row.className = "selected";
    row.append(element("td", crawl.crawl_id));
    const state = element("td");
    state.append(element("span", crawl.state, "state " + crawl.state));
    row.append(state, element("td", String(crawl.fetched), "n"), element("td", String(crawl.stored), "n"));
    row.addEventListener("click", () => { selected = crawl.crawl_id; refresh(); });
    body.append(row);
  }
}

function renderCounts(crawl) {
  document.getElementById("crawl-id").textContent = crawl.crawl_id + " (" + crawl.state + ")";
  document.getElementById("crawl-seeds").textContent = "seeds: " + crawl.seeds.join(", ");
  const box = document.getElementById("counts");
  box.replaceChildren();
  for (const name of COUNTS) {
    const cell = element("div");
    cell.append(element("b", String(crawl[name])), element("span", name.replace("_", " ")));
    box.append(cell);
  }
}

// Pages per second between successive samples, drawn as a polyline with its peak marked.
function renderChart(samples) {
  const svg = document.getElementById("chart");
  const ns = "http://www.w3.org/2000/svg";
  svg.replaceChildren();
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = samples[i].at - samples[i - 1].at;
    if (dt > 0) rates.push([samples[i].at, (samples[i].fetched - samples[i - 1].fetched) / dt]);
  }
  if (rates.length === 0) {
    const text = document.createElementNS(ns, "text");
    text.setAttribute("x", "10"); text.setAttribute("y", "20");
    text.textContent = "no fetches sampled yet";
    svg.append(text);
    return;
  }
  const t0 = samples[0].at, t1 = samples[samples.length - 1].at;
  const peak = Math.max(...rates.map(r => r[1]), 1e-9);
  const points = [[t0, 0], ...rates].map(([t, r]) =>
    [((t - t0) / Math.max(t1 - t0, 1e-9)) * 590 + 5, 190 - (r / peak) * 170]);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.map(p => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" "));
  const label = document.createElementNS(ns, "text");
  label.setAttribute("x", "8"); label.setAttribute("y", "14");
  label.textContent = "peak " + peak.toFixed(1) + " pages/s over " + Math.round(t1 - t0) + " s";
  svg.append(line, label);
}

function renderActivity(activity) {
  renderChart(activity.samples);
  document.getElementById("bound").textContent = activity.bound
    ? "bound by " + activity.bound.bound + ": " + activity.bound.detail : "bound: no verdict yet";
  const hosts = document.querySelector("#hosts tbody");
  hosts.replaceChildren();
  for (const host of activity.hosts) {
    const row = element("tr");
    row.append(element("td", host.host), element("td", String(host.queued), "n"));
    hosts.append(row);
  }
  const errors = document.getElementById("errors");
  errors.replaceChildren(...(activity.errors.length ? activity.errors : ["none"]).map(e => element("li", e)));
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
      renderCounts(crawl);
      renderActivity(await api("/crawls/" + encodeURIComponent(crawl.crawl_id) + "/activity"));
    }
    status.textContent = crawls.length + " crawl(s), updated " + new Date().toLocaleTimeString();
  } catch (error) {
    status.textContent = "cannot reach the service: " + error.message;
  }
}

refresh();
setInterval(refresh, POLL_MS);
