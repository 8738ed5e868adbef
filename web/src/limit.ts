// The breaking point (`squall bench --find-limit`): the limit found, the steps that found it, achieved
// against offered load (and latency) per step; in compare mode, each run's limit and an overlay.
import type uPlot from "uplot";
import type { Limit, LimitStep, Result, Run } from "./types";
import { Chart, COLORS, INT_INCRS, PALETTE, join, theme } from "./charts";
import { fin, fmtInt, fmtMs, fmtPct, fmtRate, h, num } from "./util";

const str = (v: unknown): string => (typeof v === "string" ? v : "");
function stepOf(v: unknown): LimitStep | null {
  if (!v || typeof v !== "object") return null;
  const s = v as LimitStep;
  return fin(s.load) ? s : null;
}

/** The result's `limit`, checked (null: not a --find-limit result). */
export function limitOf(r: Result | undefined): Limit | null {
  const l = r && r.limit;
  if (!l || typeof l !== "object" || !Array.isArray(l.steps)) return null;
  return {
    ...l,
    load: fin(l.load) ? l.load : null,
    failed_at: fin(l.failed_at) ? l.failed_at : null,
    probe: stepOf(l.probe),
    steps: l.steps.map(stepOf).filter((s): s is LimitStep => !!s),
  };
}

export const unitOf = (l: Limit): string => str(l.unit) || "req/s";

/** A load as the search reports it: whole numbers from 10 on ("91", "1,859"), else up to 2 decimals. */
export function fmtLoad(v: number | null | undefined): string {
  if (!fin(v)) return "–";
  return Math.abs(v) >= 10 ? fmtInt(v) : fmtRate(v).replace(/\.?0+$/, "");
}

/** "91 req/s" */
const withUnit = (v: number, unit: string) => fmtLoad(v) + " " + (unit === "users" && v === 1 ? "user" : unit);

type StepState = "pass" | "fail" | "generator" | "rerun";
const stateOf = (s: LimitStep): StepState => (s.generator_bound ? "generator" : s.retry ? "rerun" : s.passed ? "pass" : "fail");
const STATE_TEXT: Record<StepState, string> = { pass: "PASS", fail: "FAIL", generator: "GENERATOR", rerun: "RERUN" };

/** Why a step passed (its passing checks but the connections', which have a column) or failed. */
function why(s: LimitStep): string {
  if (!s.passed) return str(s.reason);
  const checks = Array.isArray(s.checks) ? s.checks : [];
  return checks
    .filter((c) => c && c.passed === true && c.check !== "connections")
    .map((c) => str(c.detail))
    .join(", ");
}

/** What a step's throughput is counted in: req/s for a search by users. */
const rateUnit = (unit: string): string => (unit === "users" ? "req/s" : unit);

/** The steps drawn: the probe and the steps run again with more connections left out, sorted by
 * offered load (ties in the order run). */
function drawn(l: Limit): LimitStep[] {
  return l.steps
    .map((s, i) => ({ s, i }))
    .filter(({ s }) => s.load > 0 && !s.retry)
    .sort((a, b) => a.s.load - b.s.load || a.i - b.i)
    .map(({ s }) => s);
}

/** The step that set the limit (the last one run at that load that passed). */
function limitStep(l: Limit): LimitStep | null {
  if (l.load === null) return null;
  let found: LimitStep | null = null;
  for (const s of l.steps) if (s.passed && s.load === l.load) found = s;
  return found;
}

/** The header badge: "limit 91 req/s" (a link to the section). */
export function limitBadge(l: Limit): HTMLElement {
  const unit = unitOf(l);
  return h(
    "a",
    { class: "badge lim " + (l.load === null ? "bad" : "good"), href: "#sec-limit", testid: "limit-badge" },
    l.load === null ? "no limit established" : "limit " + withUnit(l.load, unit),
  );
}

/** The reason without its "at 94: " prefix when the failed load is shown anyway. */
function bareReason(l: Limit): string {
  const r = str(l.reason);
  return fin(l.failed_at) ? r.replace(/^at [0-9.,]+\s*[a-zA-Z/]*:\s*/, "") : r;
}

// ------------------------------------------------------------------------------- one run

/** The section's body; `draw` draws its chart once the page is laid out. */
export function limitSection(l: Limit, result: Result): { el: HTMLElement; draw: () => void } {
  const unit = unitOf(l);
  const slo = (l.slo || []).filter((t) => typeof t === "string" && t);
  const load = l.load;
  const headline =
    load !== null
      ? h(
          "p",
          { class: "lim-main", testid: "limit-headline" },
          "Limit: ",
          h("b", { testid: "limit-load", "data-value": String(load) }, fmtLoad(load)),
          " " + unit,
          slo.length ? [" within ", h("span", { class: "mono", testid: "limit-slo" }, slo.join(", "))] : null,
        )
      : h(
          "p",
          { class: "lim-main none", testid: "limit-headline" },
          "No limit established",
          h("span", { testid: "limit-load", hidden: true }),
          str(l.reason) ? ": " + str(l.reason) : "",
        );
  const reason = bareReason(l);
  const next =
    load === null || !reason
      ? null
      : h(
          "p",
          { class: "lim-next", testid: "limit-reason", "data-failed-at": !fin(l.failed_at) ? null : String(l.failed_at) },
          fin(l.failed_at) ? [h("b", null, "Next step failed"), ` at ${withUnit(l.failed_at, unit)}: `] : "Search ended: ",
          reason,
        );
  const probe = l.probe;
  const shown = limitStep(l);
  const about: string[] = [];
  // (a users search's probe is a number of users, its throughput requests a second: "reached 6.5 users" read wrong)
  const probed = !probe
    ? ""
    : unit === "users"
      ? ` after a probe of ${withUnit(num(probe.load), unit)} at ${fmtRate(num(probe.achieved))} req/s`
      : ` after a closed-model probe that reached ${withUnit(num(probe.achieved), unit)}`;
  about.push(`${l.steps.length} step${l.steps.length === 1 ? "" : "s"}` + probed);
  if (shown && load !== null) about.push(`the numbers on the rest of this page are the ${withUnit(load, unit)} step's own`);
  else if (load === null && result.schedule && result.schedule.rate) about.push(`the rest of this page shows the ${withUnit(result.schedule.rate, unit)} step`);
  const note = h("p", { class: "note lim-about" }, about.join("; ") + ".");

  const grid = h("div", { class: "charts lim-charts" });
  const chart = limitChart(grid, l);
  const el = h("div", { class: "lim" }, headline, next, note, grid, h("div", { class: "scroll" }, stepsTable(l)));
  return { el, draw: () => chart.draw() };
}

function stepsTable(l: Limit): HTMLElement {
  const unit = unitOf(l);
  const lim = limitStep(l);
  const failed = fin(l.failed_at) ? l.steps.find((s) => !s.passed && s.load === l.failed_at) || null : null;
  const conns = l.steps.some((s) => fin(s.connections));
  const row = (s: LimitStep, n: number | null) => {
    const st = stateOf(s);
    const probe = n === null;
    const er = s.error_rate;
    return h(
      "tr",
      {
        testid: "limit-step",
        class: "st-" + st + (s === lim ? " lim-row" : "") + (probe ? " probe" : ""),
        "data-passed": String(!!s.passed),
        "data-verdict": st,
        "data-load": String(s.load),
        "data-probe": probe ? "true" : null,
        "data-limit": s === lim ? "true" : null,
        "data-failed-at": s === failed ? "true" : null,
      },
      h("td", { class: "n", "data-col": "n" }, probe ? "" : String(n)),
      h(
        "td",
        { class: probe ? "probe-l" : "n", "data-col": "offered", "data-label": "offered " + unit },
        probe ? (unit === "users" ? `probe (${fmtLoad(s.load)} users)` : "probe (closed model)") : fmtLoad(s.load),
      ),
      h("td", { class: "n", "data-col": "achieved", "data-label": "achieved " + rateUnit(unit) }, fmtRate(s.achieved)),
      h("td", { class: "n", "data-col": "p50", "data-label": "p50 ms" }, fmtMs(s.p50_us)),
      h("td", { class: "n", "data-col": "p95", "data-label": "p95 ms" }, fmtMs(s.p95_us)),
      h("td", { class: "n", "data-col": "p99", "data-label": "p99 ms" }, fmtMs(s.p99_us)),
      h("td", { class: "n", "data-col": "errors", "data-label": "errors" }, fin(er) ? fmtPct(100 * er) : "–"),
      conns ? h("td", { class: "n", "data-col": "connections", "data-label": "connections" }, fin(s.connections) ? fmtInt(s.connections) : "–") : null,
      h(
        "td",
        { "data-col": "verdict" },
        h(
          "span",
          {
            class: "verdict " + st,
            "data-verdict": st,
            title:
              st === "generator"
                ? "the load generator could not offer this load: the step says nothing about the target"
                : st === "rerun"
                  ? "squall's connections, not the target, limited this step: it ran again with more"
                  : null,
          },
          STATE_TEXT[st],
        ),
        s === lim ? h("span", { class: "tag lim-tag" }, "limit") : null,
      ),
      h("td", { class: "msg" + (s.passed ? "" : " why"), "data-col": "reason" }, why(s)),
    );
  };
  const rows: HTMLElement[] = [];
  if (l.probe) rows.push(row(l.probe, null));
  l.steps.forEach((s, i) => rows.push(row(s, i + 1)));
  const th = (t: string, n = true) => h("th", { class: n ? "n" : null }, t);
  return h(
    "table",
    { class: "grid lim-steps", testid: "limit-table" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        th("#"),
        th(`Offered (${unit})`),
        th(`Achieved (${rateUnit(unit)})`),
        th("p50 (ms)"),
        th("p95 (ms)"),
        th("p99 (ms)"),
        th("Errors"),
        conns ? th("Connections") : null,
        th("Verdict", false),
        th("Why", false),
      ),
    ),
    h("tbody", null, rows),
  );
}

// ------------------------------------------------------------------------------- drawing

interface Marker {
  x: number;
  label: string;
  color: string;
  /** the label goes left of the line (the limit) or right of it (the failure) */
  left: boolean;
  /** the label's line from the top (several runs) */
  row?: number;
}

/** y = slope * x across the plot, dashed: what a target that keeps up achieves (a rate: y = x; users:
 * each user's rate in the probe times the users). */
function drawIdeal(u: uPlot, slope = 1): void {
  const x = u.scales.x;
  if (x.min === undefined || x.max === undefined) return;
  const c = u.ctx;
  const r = uPlotRatio();
  c.save();
  c.beginPath();
  c.rect(u.bbox.left, u.bbox.top, u.bbox.width, u.bbox.height);
  c.clip();
  c.strokeStyle = COLORS.intended;
  c.lineWidth = 1.5 * r;
  c.setLineDash([6 * r, 4 * r]);
  c.beginPath();
  const lo = Math.max(x.min, u.scales.y.distr === 3 ? 1e-9 : 0);
  c.moveTo(u.valToPos(lo, "x", true), u.valToPos(lo * slope, "y", true));
  c.lineTo(u.valToPos(x.max, "x", true), u.valToPos(x.max * slope, "y", true));
  c.stroke();
  c.restore();
}

/** Each step's point: filled when it passed, a ring when it failed, grey when the generator could not keep up. */
function drawSteps(u: uPlot, si: number, states: (StepState | null)[], color: string): void {
  const c = u.ctx;
  const r = uPlotRatio();
  const xs = u.data[0];
  const ys = u.data[si];
  c.save();
  c.lineWidth = 2 * r;
  for (let i = 0; i < xs.length; i++) {
    const y = ys[i];
    const st = states[i];
    if (y === null || y === undefined || !st) continue;
    if (u.scales.y.distr === 3 && y <= 0) continue;
    const px = u.valToPos(xs[i], "x", true);
    const py = u.valToPos(y, "y", true);
    c.beginPath();
    c.arc(px, py, (st === "pass" ? 4.5 : 4) * r, 0, 2 * Math.PI);
    if (st === "pass") {
      c.fillStyle = color;
      c.fill();
    } else {
      c.fillStyle = theme.card;
      c.fill();
      c.strokeStyle = st === "generator" ? COLORS.intended : color;
      c.stroke();
    }
  }
  c.restore();
}

function drawMarkers(u: uPlot, ms: Marker[]): void {
  const c = u.ctx;
  const r = uPlotRatio();
  const { left, top, width, height } = u.bbox;
  c.save();
  c.font = `${11 * r}px system-ui, -apple-system, 'Segoe UI', sans-serif`;
  c.textBaseline = "top";
  for (const m of ms) {
    const x = u.valToPos(m.x, "x", true);
    if (!(x >= left - 1 && x <= left + width + 1)) continue;
    c.strokeStyle = m.color;
    c.lineWidth = 1.5 * r;
    c.setLineDash(m.left ? [] : [3 * r, 3 * r]);
    c.beginPath();
    c.moveTo(x, top);
    c.lineTo(x, top + height);
    c.stroke();
    const tw = c.measureText(m.label).width;
    // keep the label inside the plot: flip it to the other side when it would leave
    let toLeft = m.left;
    if (toLeft && x - tw - 5 * r < left) toLeft = false;
    else if (!toLeft && x + tw + 5 * r > left + width) toLeft = true;
    const tx = toLeft ? x - tw - 4 * r : x + 4 * r;
    const ty = top + (3 + 14 * (m.row || 0)) * r;
    c.fillStyle = theme.card;
    c.globalAlpha = 0.85;
    c.fillRect(tx - 2 * r, ty - 1 * r, tw + 4 * r, 14 * r);
    c.globalAlpha = 1;
    c.fillStyle = m.color;
    c.fillText(m.label, tx, ty);
  }
  c.restore();
}

function uPlotRatio(): number {
  return typeof devicePixelRatio === "number" && devicePixelRatio > 0 ? devicePixelRatio : 1;
}

/** Linear scales from 0 to a little over the largest value. */
const upTo = (u: uPlot, max: number | null): [number, number] => {
  void u;
  const m = max && max > 0 ? max : 1;
  const mag = Math.pow(10, Math.floor(Math.log10(m)));
  const step = m / mag <= 2 ? mag / 5 : m / mag <= 5 ? mag / 2 : mag;
  return [0, Math.ceil((m * 1.04) / step) * step];
};

/** A search by users: the requests a second each user made in the probe (what the ideal line scales by), else null. */
function perUser(l: Limit): number | null {
  if (unitOf(l) !== "users") return null;
  const p = l.probe;
  if (p && p.load > 0 && fin(p.achieved) && p.achieved > 0) return p.achieved / p.load;
  const first = drawn(l).find((s) => s.passed && fin(s.achieved) && s.achieved > 0);
  return first ? first.achieved! / first.load : null;
}

/** Axis values without a repeated label (fmtLoad rounds 12.5 and 13 alike from 10 on). */
const distinct = (splits: number[], fmt: (v: number) => string): string[] => {
  let prev = "";
  return splits.map((v) => {
    const t = v === null ? "" : fmt(v);
    const out = t === prev ? "" : t;
    prev = t;
    return out;
  });
};

/** Achieved (left) and p95/p99 (right, ms) against offered load, one point per step. */
function limitChart(parent: HTMLElement, l: Limit): Chart {
  const unit = unitOf(l);
  const users = unit === "users";
  const slope = perUser(l) ?? 1;
  const steps = drawn(l);
  const states = steps.map(stateOf);
  const lim = limitStep(l);
  const rest = lim ? steps.indexOf(lim) : -1;
  const markers: Marker[] = [];
  if (l.load !== null) markers.push({ x: l.load, label: "limit " + fmtLoad(l.load), color: COLORS.rps, left: true });
  if (fin(l.failed_at) && l.failed_at !== l.load)
    markers.push({ x: l.failed_at, label: "failed " + fmtLoad(l.failed_at), color: COLORS.fail, left: false });
  const c = new Chart(parent, {
    testid: "chart-limit",
    title: "Achieved vs offered load, latency per step",
    x: "num",
    xFmt: (v) => fmtLoad(v),
    xLabel: "offered",
    yFmt: fmtLoad,
    logToggle: true,
    logScales: ["ms"],
    height: 280,
    restIdx: () => (rest >= 0 ? rest : null),
    series: [
      { label: users ? "achieved req/s" : "achieved", color: COLORS.rps, width: 2, points: false, fmt: fmtRate },
      {
        label: users ? `ideal (${fmtRate(slope)} req/s per user, as in the probe)` : "ideal (achieved = offered)",
        color: COLORS.intended,
        dash: [6, 4],
        noPath: true,
        points: false,
        fmt: users ? fmtRate : fmtLoad,
      },
      { label: "p95 (ms)", color: COLORS.p95, scale: "ms", points: true, fmt: fmtMs },
      { label: "p99 (ms)", color: COLORS.p99, scale: "ms", points: true, dash: [5, 3], fmt: fmtMs },
    ],
    extend: (o, log) => {
      const ms = (v: number) => fmtMs(v);
      const axisSize = (_u: uPlot, values: string[]) =>
        values && values.length ? Math.max(36, Math.max(...values.map((v) => (v || "").length)) * 7 + 16) : 40;
      const ax = o.axes!;
      const xValues = (_u: uPlot, sp: number[]) => {
        const out = distinct(sp, fmtLoad);
        c.box.setAttribute("data-x-ticks", out.filter(Boolean).join("|")); // (for tests: the labels drawn)
        return out;
      };
      ax[0] = { ...ax[0], label: `offered (${unit})`, labelSize: 20, labelGap: 0, values: xValues };
      if (users) ax[0].incrs = INT_INCRS; // whole users only
      ax[1] = { ...ax[1], label: `achieved (${rateUnit(unit)})`, labelSize: 20, labelGap: 0 };
      ax.push({
        ...ax[1],
        scale: "ms",
        side: 1,
        label: "p95 · p99 (ms)",
        grid: { show: false },
        size: axisSize,
        values: (_u, splits) => splits.map((v) => (v === null ? "" : ms(v))),
      });
      const xs = steps.map((s) => s.load);
      const top = Math.max(1, ...xs.map((x) => x * slope), ...steps.map((s) => num(s.achieved)));
      o.scales!.x = { time: false, range: (u) => upTo(u, Math.max(...xs, l.failed_at || 0, l.load || 0)) };
      o.scales!.y = { range: (u) => upTo(u, top) };
      o.scales!.ms = log ? { distr: 3, log: 10 } : { range: (u, _min, max) => upTo(u, max) };
      o.padding = [8, 6, 0, 0];
      o.hooks = {
        draw: [
          (u) => {
            drawIdeal(u, slope);
            drawSteps(u, 1, states, COLORS.rps);
            drawMarkers(u, markers);
          },
        ],
      };
    },
  });
  c.note(lim ? "filled: passed · ring: failed" : "ring: failed");
  c.set([steps.map((s) => s.load), steps.map((s) => (fin(s.achieved) ? s.achieved : null)), steps.map((s) => s.load * slope), ...latency(steps)]);
  return c;
}

function latency(steps: LimitStep[]): (number | null)[][] {
  const v = (x: unknown) => (fin(x) && x > 0 ? x : null);
  return [steps.map((s) => v(s.p95_us)), steps.map((s) => v(s.p99_us))];
}

/** 1, 2, 5 times the powers of 10 within the range (a log axis over less than a few decades). */
export function logSplits(_u: uPlot, _i: number, min: number, max: number): number[] {
  const out: number[] = [];
  if (!(min > 0) || !(max > min)) return out;
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++)
    for (const m of [1, 2, 5]) {
      const v = m * Math.pow(10, e);
      if (v >= min && v <= max) out.push(v);
    }
  return out;
}

// ------------------------------------------------------------------------------- compare

/** The runs table's cell: "limit 91 req/s", "no limit", or "–" for a run without a search. */
export function compareLimitCell(r: Result): HTMLElement {
  const l = limitOf(r);
  if (!l) return h("td", { class: "thr-none" }, "–");
  return h(
    "td",
    { testid: "compare-limit", "data-value": l.load === null ? null : String(l.load), class: l.load === null ? "lim-none" : null },
    l.load === null ? "no limit" : "limit " + withUnit(l.load, unitOf(l)),
  );
}

/** Achieved against offered load, one line per run; log axes (both) when the runs' loads are far apart. */
export function compareLimitChart(parent: HTMLElement, runs: Run[]): Chart | null {
  const withLimit = runs.map((run, i) => ({ run, i, l: limitOf(run.result) })).filter((x) => x.l && drawn(x.l).length);
  if (!withLimit.length) return null;
  const units = Array.from(new Set(withLimit.map((x) => unitOf(x.l!))));
  const tables = withLimit.map((x) => {
    const steps = drawn(x.l!);
    return [steps.map((s) => s.load), steps.map((s) => (fin(s.achieved) ? s.achieved : null))];
  });
  const joined = join(tables);
  const xs = joined[0] as number[];
  // each run's step states at the joined x
  const states = withLimit.map((x) => {
    const by = new Map<number, StepState>();
    for (const s of drawn(x.l!)) by.set(s.load, stateOf(s));
    return xs.map((v) => by.get(v) || null);
  });
  const tops = withLimit.map((x) => Math.max(...drawn(x.l!).map((s) => s.load)));
  const far = Math.max(...tops) / Math.max(1e-9, Math.min(...tops)) > 8;
  const markers: Marker[] = withLimit
    .filter((x) => x.l!.load !== null)
    .map((x, k) => ({ x: x.l!.load!, label: `${x.run.label}: limit ${fmtLoad(x.l!.load)}`, color: PALETTE[x.i % PALETTE.length], left: true, row: k }));
  const unit = units.length === 1 ? units[0] : "";
  const c = new Chart(parent, {
    testid: "chart-limit-compare",
    title: "Achieved vs offered load",
    x: "num",
    xFmt: (v) => fmtLoad(v),
    xLabel: "offered",
    yFmt: fmtLoad,
    logToggle: true,
    logScales: ["x", "y"],
    logDefault: far,
    spanGaps: true,
    height: 300,
    series: [
      ...withLimit.map((x) => ({ label: x.run.label + " achieved", color: PALETTE[x.i % PALETTE.length], width: 2, points: false, fmt: fmtRate })),
      { label: "ideal", color: COLORS.intended, dash: [6, 4], noPath: true, points: false, fmt: fmtLoad },
    ],
    extend: (o, log) => {
      o.axes![0] = { ...o.axes![0], label: "offered" + (unit ? ` (${unit})` : ""), labelSize: 20, labelGap: 0 };
      o.axes![1] = { ...o.axes![1], label: "achieved" + (unit ? ` (${unit})` : ""), labelSize: 20, labelGap: 0 };
      const top = Math.max(1, ...xs, ...joined.slice(1).flatMap((col) => col.map((v) => num(v))));
      if (!log) {
        o.scales!.x = { time: false, range: (u) => upTo(u, Math.max(...xs)) };
        o.scales!.y = { range: (u) => upTo(u, top) };
      } else {
        // the same range on both axes: the ideal line is the diagonal
        const vals = [...xs, ...joined.slice(1).flatMap((col) => col.filter((v): v is number => v !== null && v > 0))];
        const both = (): [number, number] => [Math.min(...vals) / 1.3, Math.max(...vals) * 1.3];
        o.scales!.x = { time: false, distr: 3, log: 10, range: both };
        o.scales!.y = { distr: 3, log: 10, range: both };
        for (const a of [o.axes![0], o.axes![1]]) {
          a.splits = logSplits;
          a.filter = (_u, splits) => splits;
        }
      }
      o.padding = [8, 16, 0, 0];
      // the legend shows each run at the x under the cursor (not its nearest step)
      o.cursor = { ...o.cursor, dataIdx: (_u, _si, idx) => idx };
      o.hooks = {
        draw: [
          (u) => {
            drawIdeal(u);
            withLimit.forEach((x, k) => drawSteps(u, k + 1, states[k], PALETTE[x.i % PALETTE.length]));
            drawMarkers(u, markers);
          },
        ],
      };
    },
  });
  c.note("filled: passed · ring: failed");
  c.set([...joined, xs.slice()]);
  return c;
}
