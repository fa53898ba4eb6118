// The usage dashboard: reads the admin API's GET /v1/usage (daily rollups, attempt outcomes,
// refusals and requests from the usage ledger) with the admin key or a tenant's usage read key,
// and plots them with uPlot. Plain browser JavaScript, no build.
"use strict";
(function () {
  const apiBase = document.querySelector('meta[name="admin-api-base"]').content;
  const $ = (id) => document.getElementById(id);
  const KEY = "byok-dashboard-admin-key";
  const COLORS = ["#3867d6", "#eb3b5a", "#20bf6b", "#f7b731", "#8854d0", "#0fb9b1", "#fa8231", "#4b6584", "#a5b1c2", "#2d98da"];
  const DAY = 86400;
  const charts = {};
  let tenantsLoaded = false;

  const isoDay = (d) => d.toISOString().slice(0, 10);
  const tokensOf = (r) => r.inputTokens + r.outputTokens + r.cacheReadTokens + r.cacheWriteTokens;
  const usd = (micro) => micro / 1e6;

  function query(extra) {
    const p = new URLSearchParams({ from: $("from").value, to: $("to").value, ...extra });
    if ($("tenant").value) p.set("tenant", $("tenant").value);
    return p.toString();
  }

  async function api(path) {
    const res = await fetch(apiBase + path, { headers: { authorization: "Bearer " + sessionStorage.getItem(KEY) } });
    if (res.status === 401) {
      sessionStorage.removeItem(KEY);
      showLogin();
      throw new Error("The key was refused.");
    }
    if (!res.ok) throw new Error((await res.json().catch(() => ({}))).error || "HTTP " + res.status);
    return res;
  }

  /** Every day from `from` to `to` (inclusive), as UTC midnights in seconds. */
  function dayAxis(from, to) {
    const out = [];
    for (let t = Date.parse(from + "T00:00:00Z") / 1000; t <= Date.parse(to + "T00:00:00Z") / 1000; t += DAY) out.push(t);
    return out;
  }

  /** Sums `value(row)` per day per group; returns uPlot series labels and data. */
  function grouped(rows, days, groupOf, value) {
    const index = new Map(days.map((d, i) => [isoDay(new Date(d * 1000)), i]));
    const groups = new Map();
    for (const r of rows) {
      const i = index.get(r.day);
      if (i === undefined) continue;
      const g = groupOf(r);
      if (!groups.has(g)) groups.set(g, days.map(() => 0));
      groups.get(g)[i] += value(r);
    }
    const labels = [...groups.keys()].sort();
    return { labels, data: [days, ...labels.map((l) => groups.get(l))] };
  }

  function plot(name, title, series, valueLabel) {
    const el = $("chart-" + name);
    charts[name]?.destroy();
    el.textContent = "";
    const opts = {
      width: Math.max(520, el.clientWidth || 560),
      height: 240,
      title,
      scales: { x: { time: true } },
      series: [{}, ...series.labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true } }))],
      axes: [{}, { label: valueLabel, size: 70 }],
    };
    charts[name] = new uPlot(opts, series.data, el);
  }

  function render(body) {
    const from = $("from").value;
    const to = $("to").value;
    const days = dayAxis(from, to);
    const allTenants = !$("tenant").value;
    const group = $("group").value;
    const groupOf = (r) =>
      group === "tenant" ? r.tenantId : group === "model" ? r.model : allTenants ? r.tenantId + "/" + (r.userId ?? "(no user)") : r.userId ?? "(no user)";
    const tokens = grouped(body.usage, days, groupOf, tokensOf);
    const cost = grouped(body.usage, days, groupOf, (r) => usd(r.costMicroUsd));
    const attempts = grouped(body.outcomes, days, () => "attempts", (r) => r.attempts).data[1] ?? days.map(() => 0);
    const failed = grouped(body.outcomes, days, () => "failed", (r) => r.failed).data[1] ?? days.map(() => 0);
    const retried = grouped(body.outcomes, days, () => "retried", (r) => r.retried).data[1] ?? days.map(() => 0);
    const pct = (xs) => xs.map((x, i) => (attempts[i] ? (100 * x) / attempts[i] : null));
    const errors = { labels: ["failed %", "retried %"], data: [days, pct(failed), pct(retried)] };
    // TTFT: attempt-weighted mean of the tenants' daily means; p95 is the highest tenant p95.
    const ttftSum = grouped(body.outcomes.filter((r) => r.ttftAvgMs !== undefined), days, () => "s", (r) => r.ttftAvgMs * r.attempts).data[1];
    const ttftN = grouped(body.outcomes.filter((r) => r.ttftAvgMs !== undefined), days, () => "n", (r) => r.attempts).data[1];
    const p95 = days.map(() => null);
    const dayIndex = new Map(days.map((d, i) => [isoDay(new Date(d * 1000)), i]));
    for (const r of body.outcomes) {
      const i = dayIndex.get(r.day);
      if (i !== undefined && r.ttftP95Ms !== undefined) p95[i] = Math.max(p95[i] ?? 0, r.ttftP95Ms);
    }
    const ttft = { labels: ["mean", "p95"], data: [days, days.map((_, i) => (ttftN && ttftN[i] ? Math.round(ttftSum[i] / ttftN[i]) : null)), p95] };

    // The gateway's own TTFT overhead (µs in the API, ms here): the mean weighted by the attempts
    // that measured it; the p95 is the highest tenant's.
    const measured = body.outcomes.filter((r) => r.overheadAttempts > 0);
    const overheadSum = grouped(measured, days, () => "s", (r) => r.overheadAvgUs * r.overheadAttempts).data[1];
    const overheadN = grouped(measured, days, () => "n", (r) => r.overheadAttempts).data[1];
    const overheadP95 = days.map(() => null);
    for (const r of measured) {
      const i = dayIndex.get(r.day);
      if (i !== undefined && r.overheadP95Us !== undefined) overheadP95[i] = Math.max(overheadP95[i] ?? 0, r.overheadP95Us / 1000);
    }
    const overhead = { labels: ["mean", "p95"], data: [days, days.map((_, i) => (overheadN && overheadN[i] ? overheadSum[i] / overheadN[i] / 1000 : null)), overheadP95] };

    // Refusals (before any provider attempt, so not in the ledger): per day, by reason.
    const refusalRows = body.refusals ?? [];
    const byReason = (key) => grouped(refusalRows, days, () => key, (r) => r[key]).data[1] ?? days.map(() => 0);
    const refusals = { labels: ["rate limit", "budget", "unknown model"], data: [days, byReason("rateLimited"), byReason("budgetExhausted"), byReason("unknownModel")] };
    // Refusal rate: refused requests / requests (distinct request ids with a ledger or refusal row that day).
    const requestRows = body.requests ?? [];
    const requests = grouped(requestRows, days, () => "requests", (r) => r.requests).data[1] ?? days.map(() => 0);
    const refusedRequests = grouped(requestRows, days, () => "refused", (r) => r.refused).data[1] ?? days.map(() => 0);
    const refusalRate = { labels: ["refused %"], data: [days, refusedRequests.map((x, i) => (requests[i] ? (100 * x) / requests[i] : null))] };

    plot("tokens", "", tokens, "tokens");
    plot("refusals", "", refusals, "requests");
    plot("cost", "", cost, "USD");
    plot("errors", "", errors, "%");
    plot("refusal-rate", "", refusalRate, "%");
    plot("ttft", "", ttft, "ms");
    plot("overhead", "", overhead, "ms");

    const totalTokens = body.usage.reduce((n, r) => n + tokensOf(r), 0);
    const totalCost = body.usage.reduce((n, r) => n + r.costMicroUsd, 0);
    const totalAttempts = body.outcomes.reduce((n, r) => n + r.attempts, 0);
    const totalFailed = body.outcomes.reduce((n, r) => n + r.failed, 0);
    $("total-tokens").textContent = totalTokens.toLocaleString("en-US");
    $("total-cost").textContent = usd(totalCost).toFixed(6);
    $("total-attempts").textContent = totalAttempts.toLocaleString("en-US");
    $("total-errors").textContent = totalAttempts ? ((100 * totalFailed) / totalAttempts).toFixed(1) + " %" : "–";
    const totalRefused = refusalRows.reduce((n, r) => n + r.rateLimited + r.budgetExhausted + r.unknownModel, 0);
    $("total-refused").textContent = totalRefused.toLocaleString("en-US");
    const totalRequests = requests.reduce((n, x) => n + x, 0);
    const totalRefusedRequests = refusedRequests.reduce((n, x) => n + x, 0);
    $("total-refusal-rate").textContent = totalRequests ? ((100 * totalRefusedRequests) / totalRequests).toFixed(1) + " %" : "–";

    const users = new Map();
    for (const r of body.usage) {
      const k = r.tenantId + "\u0000" + (r.userId ?? "");
      const u = users.get(k) ?? { tenantId: r.tenantId, userId: r.userId ?? "(no user)", tokens: 0, costMicroUsd: 0, attempts: 0 };
      u.tokens += tokensOf(r);
      u.costMicroUsd += r.costMicroUsd;
      u.attempts += r.attempts;
      users.set(k, u);
    }
    const top = [...users.values()].sort((a, b) => b.tokens - a.tokens).slice(0, 10);
    const tbody = $("top-users").tBodies[0];
    tbody.textContent = "";
    for (const u of top) {
      const tr = tbody.insertRow();
      for (const [v, num] of [[u.tenantId], [u.userId], [u.tokens.toLocaleString("en-US"), true], [usd(u.costMicroUsd).toFixed(6), true], [String(u.attempts), true]]) {
        const td = tr.insertCell();
        td.textContent = v;
        if (num) td.className = "num";
      }
    }
    // What the page shows, for tests and for anyone reading it from the console.
    window.__dashboard = { from, to, tenant: $("tenant").value, totals: { tokens: totalTokens, costMicroUsd: totalCost, attempts: totalAttempts, failed: totalFailed, refused: totalRefused, requests: totalRequests, refusedRequests: totalRefusedRequests }, tokens, cost, errors, refusalRate, ttft, overhead, refusals, topUsers: top, access: body.access };
    document.body.dataset.loaded = String(Date.now());
  }

  async function load() {
    $("status").textContent = "";
    try {
      const body = await (await api("/v1/usage?" + query({}))).json();
      if (!tenantsLoaded && !$("tenant").value) {
        // A tenant's usage read key sees its own tenant only: no "all tenants" choice then.
        if (body.access === "tenant") $("tenant").remove(0);
        for (const t of body.tenants) $("tenant").add(new Option(t.tenantId, t.tenantId));
        tenantsLoaded = true;
      }
      render(body);
    } catch (err) {
      $("status").textContent = err.message;
    }
  }

  async function exportCsv() {
    try {
      const blob = await (await api("/v1/usage?" + query({ format: "csv" }))).blob();
      const a = document.createElement("a");
      a.href = URL.createObjectURL(blob);
      a.download = "usage-" + ($("tenant").value || "all") + "-" + $("from").value + "-" + $("to").value + ".csv";
      a.click();
      URL.revokeObjectURL(a.href);
    } catch (err) {
      $("status").textContent = err.message;
    }
  }

  function showLogin() {
    $("login").hidden = false;
    $("main").hidden = true;
  }

  function showMain() {
    $("login").hidden = true;
    $("main").hidden = false;
    void load();
  }

  const today = new Date();
  $("to").value = isoDay(today);
  $("from").value = isoDay(new Date(today.getTime() - 29 * DAY * 1000));
  $("login").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(KEY, $("key").value);
    $("key").value = "";
    showMain();
  });
  $("filters").addEventListener("submit", (e) => {
    e.preventDefault();
    void load();
  });
  $("tenant").addEventListener("change", () => void load());
  $("group").addEventListener("change", () => void load());
  $("csv").addEventListener("click", () => void exportCsv());
  if (sessionStorage.getItem(KEY)) showMain();
})();
