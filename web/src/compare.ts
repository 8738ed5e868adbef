// Compare mode: runs A, B, ... side by side, each change against the first run.
import type { Endpoint, Meta, Result, Run } from "./types";
import { Chart, PALETTE, join, spectrumTable } from "./charts";
import { commandOf, countedS, key, latencyRow, perSecond, STOP_REASONS } from "./model";
import { tally, tallyClass, thresholdRows } from "./thresholds";
import { compareLimitCell, compareLimitChart, limitOf } from "./limit";
import { compareMonitorCell, compareMonitorChart, monitorExtent, monitorOf } from "./monitor";
import { compareGeneratorMark } from "./generator";
import { fmtDuration, fmtInt, fmtMs, fmtPct, fmtRate, fmtUnix, h, num, pct } from "./util";

interface Metric {
  key: string;
  label: string;
  /** higher is better (throughput) */
  higher: boolean;
  /** error rate: the change is in percentage points */
  points?: boolean;
  get: (e: Endpoint, r: Result) => number | null;
  fmt: (v: number) => string;
}

const METRICS: Metric[] = [
  {
    key: "rps",
    label: "Req/s",
    higher: true,
    get: (e, r) => {
      const d = countedS(num(r.duration_s), r.reset_s);
      return d ? num(e.requests) / d : null;
    },
    fmt: fmtRate,
  },
  {
    key: "errors",
    label: "Errors",
    higher: false,
    points: true,
    get: (e) => (num(e.requests) ? (100 * num(e.failures)) / num(e.requests) : null),
    fmt: fmtPct,
  },
  { key: "p50", label: "p50 (ms)", higher: false, get: (e) => (e.requests ? pct(e.percentiles_us, "50") : null), fmt: fmtMs },
  { key: "p95", label: "p95 (ms)", higher: false, get: (e) => (e.requests ? pct(e.percentiles_us, "95") : null), fmt: fmtMs },
  { key: "p99", label: "p99 (ms)", higher: false, get: (e) => (e.requests ? pct(e.percentiles_us, "99") : null), fmt: fmtMs },
  { key: "max", label: "Max (ms)", higher: false, get: (e) => (e.requests ? num(e.max_us) : null), fmt: fmtMs },
];

/** The change of `v` against the baseline `b`: text, number and whether it is better, worse or about even. */
function change(m: Metric, b: number | null, v: number | null): { text: string; value: number | null; cls: string } {
  if (b === null || v === null) return { text: "", value: null, cls: "" };
  let d: number;
  let text: string;
  if (m.points) {
    d = v - b;
    text = (d > 0 ? "+" : d < 0 ? "−" : "±") + Math.abs(d).toFixed(2) + " pp";
    if (Math.abs(d) < 0.005) return { text: "±0 pp", value: 0, cls: "same" };
  } else {
    if (b === 0) return v === 0 ? { text: "±0%", value: 0, cls: "same" } : { text: "new", value: null, cls: m.higher ? "better" : "worse" };
    d = (100 * (v - b)) / b;
    const a = Math.abs(d);
    text = (d > 0 ? "+" : d < 0 ? "−" : "±") + (a >= 100 ? a.toFixed(0) : a.toFixed(1)) + "%";
    if (a < 1) return { text, value: +d.toFixed(2), cls: "same" };
  }
  const better = m.higher ? d > 0 : d < 0;
  return { text, value: +d.toFixed(2), cls: better ? "better" : "worse" };
}

export function renderCompare(meta: Meta, runs: Run[]): { el: HTMLElement; nav: HTMLElement; title: string; draw: () => void } {
  const nav = h("nav", { class: "tabs", "aria-label": "sections" });
  const el = h("div", { class: "run compare" });
  const sec = (id: string, title: string, ...body: HTMLElement[]) => {
    nav.appendChild(h("a", { href: "#sec-" + id }, title));
    el.appendChild(h("section", { id: "sec-" + id, class: "sec", testid: "section-" + id }, h("h2", null, title), ...body));
  };

  // the runs (a thresholds column when any run has verdicts)
  const withLimit = runs.some((run) => !!limitOf(run.result));
  const withThr = runs.some((run) => Array.isArray(run.result.thresholds) && run.result.thresholds.length > 0);
  const withMon = runs.some((run) => {
    const m = monitorOf(run.result.monitor);
    return !!m && m.targets.length > 0;
  });
  const thrCell = (r: Result): HTMLElement => {
    const rows = thresholdRows({}, r, false);
    if (!rows.length) return h("td", { class: "thr-none" }, "–");
    const t = tally(rows);
    return h(
      "td",
      { testid: "compare-thresholds", "data-passed": String(t.passed), "data-failed": String(t.failed) },
      h("span", { class: "badge thr " + tallyClass(t) }, `${t.passed} passed, ${t.failed} failed`),
      r.stop_reason === "threshold" ? h("div", { class: "note" }, STOP_REASONS.threshold) : null,
    );
  };
  const runRows = runs.map((run, i) => {
    const r = run.result;
    const l = r.load || {};
    const cmd = commandOf(undefined, r);
    const load =
      l.model === "open" && r.schedule
        ? `open, ${fmtRate(r.schedule.rate)}/s`
        : l.model === "users" || cmd === "run"
          ? `${fmtInt(num(l.users) || num(l.connections))} users`
          : `${l.model || "closed"}, ${fmtInt(num(l.connections))} ${cmd === "mqtt" ? "clients" : "connections"}`;
    return h(
      "tr",
      { testid: "compare-run", "data-run": run.label },
      h("td", null, h("span", { class: "swatch", style: "background:" + PALETTE[i % PALETTE.length] }), h("b", null, run.label), compareGeneratorMark(r)),
      withLimit ? compareLimitCell(r) : null,
      withThr ? thrCell(r) : null,
      withMon ? compareMonitorCell(r) : null,
      h("td", { class: "mono" }, r.url || ""),
      h("td", null, cmd),
      h("td", null, load),
      h("td", null, fmtUnix(r.start_unix)),
      h("td", { class: "n" }, fmtDuration(r.duration_s)),
      h("td", { class: "n" }, fmtInt(r.aggregate ? r.aggregate.requests : 0)),
      h("td", null, r.squall_version || ""),
    );
  });
  sec(
    "runs",
    "Runs",
    h(
      "div",
      { class: "scroll" },
      h(
        "table",
        { class: "grid", testid: "compare-runs" },
        h(
          "thead",
          null,
          h(
            "tr",
            null,
            ["Run", withLimit ? "Breaking point" : "", withThr ? "Thresholds" : "", withMon ? "Target resources (peak / mean)" : "", "Target", "Command", "Load", "Started", "Duration", "Requests", "squall"]
              .filter(Boolean)
              .map((t) => h("th", { class: t === "Duration" || t === "Requests" ? "n" : null }, t)),
          ),
        ),
        h("tbody", null, runRows),
      ),
    ),
  );

  // the breaking points: achieved against offered load, one line per run
  const charts: Chart[] = [];
  if (withLimit) {
    const box = h("div", { class: "charts" });
    const lc = compareLimitChart(box, runs);
    if (lc) {
      sec("limit", "Breaking point", h("p", { class: "note" }, "Each run's --find-limit steps: filled points passed, rings failed; the vertical lines are the limits."), box);
      charts.push(lc);
    }
  }

  // per endpoint and total, each metric for each run with its change against the first
  const order: { k: string; method: string; name: string; agg: boolean }[] = [{ k: "\u0001agg", method: "", name: "Aggregated", agg: true }];
  const seen = new Set<string>();
  for (const run of runs)
    for (const e of run.result.endpoints || []) {
      const k = key(e);
      if (!seen.has(k)) {
        seen.add(k);
        order.push({ k, method: e.method || "", name: e.name || "", agg: false });
      }
    }
  const find = (r: Result, o: (typeof order)[0]): Endpoint | null =>
    o.agg ? r.aggregate || null : (r.endpoints || []).find((e) => key(e) === o.k) || null;
  const head = h(
    "tr",
    null,
    h("th", null, "Type"),
    h("th", null, "Name"),
    h("th", null, "Run"),
    h("th", { class: "n" }, "# Requests"),
    METRICS.map((m) => h("th", { class: "n", "data-metric": m.key }, m.label)),
  );
  const body: HTMLElement[] = [];
  for (const o of order) {
    const base = find(runs[0].result, o);
    runs.forEach((run, i) => {
      const e = find(run.result, o);
      const tr = h("tr", {
        testid: o.agg ? "compare-total" : "compare-row",
        "data-name": o.name,
        "data-method": o.method,
        "data-run": run.label,
        class: (i === 0 ? "first" : "") + (o.agg ? " total" : ""),
      });
      if (i === 0) {
        tr.appendChild(h("td", { rowspan: runs.length, class: "ep" }, o.method));
        tr.appendChild(h("td", { rowspan: runs.length, class: "ep" }, o.name));
      }
      tr.appendChild(h("td", null, h("span", { class: "swatch", style: "background:" + PALETTE[i % PALETTE.length] }), run.label));
      tr.appendChild(h("td", { class: "n" }, e ? fmtInt(e.requests) : "–"));
      for (const m of METRICS) {
        const v = e ? m.get(e, run.result) : null;
        const b = base ? m.get(base, runs[0].result) : null;
        const td = h("td", { class: "n", "data-metric": m.key, "data-value": v === null ? null : String(+v.toFixed(6)) }, v === null ? "–" : m.fmt(v));
        if (i > 0) {
          const c = change(m, b, v);
          if (c.text)
            td.appendChild(h("span", { class: "chg " + c.cls, testid: "compare-change", "data-change": c.value === null ? null : String(c.value), "data-metric": m.key }, c.text));
        }
        tr.appendChild(td);
      }
      body.push(tr);
    });
  }
  sec(
    "compare",
    "Comparison",
    h("p", { class: "note" }, `Changes against run ${runs[0].label}: green is better (more throughput, fewer errors, lower latency), red is worse; errors change in percentage points.`),
    h("div", { class: "scroll" }, h("table", { class: "grid compare-table", testid: "compare-table" }, h("thead", null, head), h("tbody", null, body))),
  );

  // overlaid charts
  const grid = h("div", { class: "charts", testid: "charts" });
  sec("charts", "Charts", grid);
  const runSeries = runs.map((r, i) => ({ label: r.label, color: PALETTE[i % PALETTE.length] }));
  const slot = () => grid.appendChild(h("div", { class: "slot" }));
  const ts = (f: (r: Result) => (p: NonNullable<Result["timeseries"]>[0]) => number | null) =>
    join(
      runs.map((run) => {
        const pts = run.result.timeseries || [];
        return [pts.map((p) => p.t), pts.map(f(run.result))];
      }),
    );
  // the time charts share one x range: every run's seconds and samples
  let lo = Infinity;
  let hi = -Infinity;
  for (const run of runs) {
    const pts = run.result.timeseries || [];
    const m = monitorExtent(run.result);
    for (const [a, b] of [pts.length ? [pts[0].t, pts[pts.length - 1].t] : null, m].filter((x): x is number[] => !!x)) {
      lo = Math.min(lo, a);
      hi = Math.max(hi, b);
    }
  }
  const xExtent = (): [number, number] | null => (lo <= hi ? [lo, hi] : null);
  const rps = new Chart(slot(), { testid: "chart-rps", title: "Requests per second", yFmt: fmtRate, series: runSeries, spanGaps: false, xExtent });
  rps.set(ts((r) => (p) => perSecond(num(p.requests), p.t, num(r.duration_s))));
  charts.push(rps);
  const p95 = new Chart(slot(), { testid: "chart-latency", title: "p95 response time", unit: "ms", yFmt: fmtMs, series: runSeries, logToggle: true, xExtent });
  p95.set(ts(() => (p) => latencyRow(p)[1]));
  charts.push(p95);
  const mc = compareMonitorChart(slot(), runs, xExtent);
  if (mc) charts.push(mc);
  const withSpec = runs.map((r, i) => ({ r, i })).filter(({ r }) => r.result.aggregate && (r.result.aggregate.spectrum || []).length);
  if (withSpec.length) {
    const spec = new Chart(slot(), {
      testid: "chart-spectrum",
      title: "Latency by percentile",
      unit: "ms",
      x: "pctl",
      yFmt: fmtMs,
      logToggle: true,
      spanGaps: true,
      series: withSpec.map(({ r, i }) => ({ label: r.label, color: PALETTE[i % PALETTE.length] })),
    });
    spec.set(join(withSpec.map(({ r }) => spectrumTable(r.result.aggregate!.spectrum!))));
    charts.push(spec);
  }
  const draw = () => charts.forEach((c) => c.draw());
  const title = meta.title || "squall compare: " + runs.map((r) => r.label).join(" vs ");
  return { el, nav, title, draw };
}
