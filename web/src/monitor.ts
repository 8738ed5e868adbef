// Resources (`--monitor-pid/-name/-cgroup/-container`): the target's CPU, memory, threads, descriptors and
// processes and the host's, sampled every second on the load's time axis; in compare mode each run's.
import type uPlot from "uplot";
import type { HostSample, Monitor, MonitorHost, MonitorTarget, Result, Run, TargetSample } from "./types";
import { Chart, COLORS, PALETTE, join, type SeriesDef } from "./charts";
import { fill, fin, fmtBytes, fmtFixed, fmtInt, h } from "./util";
import { logSplits } from "./limit";

const str = (v: unknown): string => (typeof v === "string" ? v : "");
const HOST = COLORS.intended;

function samples<T extends { t: number }>(v: unknown): T[] {
  return Array.isArray(v) ? (v.filter((s) => s && typeof s === "object" && fin((s as T).t)) as T[]).sort((a, b) => a.t - b.t) : [];
}

/** The `monitor` section, checked (null: none, or not an object). */
export function monitorOf(v: unknown): Monitor | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const m = v as Partial<Monitor>;
  const targets = (Array.isArray(m.targets) ? m.targets : [])
    .filter((t) => t && typeof t === "object")
    .map((t, i): MonitorTarget => ({ ...t, label: str(t.label) || "target " + (i + 1), series: samples<TargetSample>(t.series) }));
  const host: MonitorHost | null = m.host && typeof m.host === "object" ? { ...m.host, series: samples<HostSample>(m.host.series) } : null;
  return { targets, host };
}

/** Monitoring with at least one sample. */
export function hasSamples(m: Monitor | null): boolean {
  return !!m && (m.targets.some((t) => t.series.length > 0) || (!!m.host && m.host.series.length > 0));
}

/** CPU percent (100 = one core): "75.4%", "172%". */
export function fmtCpu(v: number | null | undefined): string {
  if (!fin(v)) return "–";
  return (Math.abs(v) >= 100 ? fmtInt(v) : fmtFixed(v, 1).replace(/\.0$/, "")) + "%";
}

/** Bytes without trailing zeros ("500 MB", "2.5 GB", "23.9 MB"): axis labels and legends. */
export const fmtSize = (v: number | null | undefined): string => fmtBytes(v).replace(/\.0+ /, " ").replace(/(\.\d*?[1-9])0+ /, "$1 ");

/** A count (peak: whole; mean: one decimal unless whole). */
const fmtCount = (v: number | null | undefined): string => (!fin(v) ? "–" : Number.isInteger(v) ? fmtInt(v) : fmtFixed(v, 1));

/** The samples after a new answer: squall sends all so far; an answer from some second on replaces from there. */
function merge<T extends { t: number }>(old: T[], inc: T[]): T[] {
  if (!inc.length) return old;
  const from = inc[0].t;
  return [...old.filter((s) => s.t < from), ...inc];
}

const cores = (n: number) => `${n} core${n === 1 ? "" : "s"}`;
const hostLabel = (host: MonitorHost) => (fin(host.cpus) && host.cpus > 0 ? `host (${cores(host.cpus)})` : "host");

/** A little over `m`, on a round step (a linear axis from 0). */
function niceTop(m: number): number {
  if (!(m > 0)) return 1;
  const mag = Math.pow(10, Math.floor(Math.log10(m)));
  const step = m / mag <= 2 ? mag / 5 : m / mag <= 5 ? mag / 2 : mag;
  return Math.ceil((m * 1.05) / step) * step;
}

/** The seconds of every series: [first, last], or null. */
function extentOf(m: Monitor | null): [number, number] | null {
  if (!m) return null;
  let lo = Infinity;
  let hi = -Infinity;
  for (const s of [...m.targets.map((t) => t.series), m.host ? m.host.series : []])
    if (s.length) {
      lo = Math.min(lo, s[0].t);
      hi = Math.max(hi, s[s.length - 1].t);
    }
  return lo <= hi ? [lo, hi] : null;
}

/** One table of [x, ...columns] from [t, value] lists (null where a list has no such second). */
function columns(lists: [number, number | null | undefined][][]): (number | null)[][] {
  const xs = Array.from(new Set(lists.flatMap((l) => l.map((p) => p[0])))).sort((a, b) => a - b);
  const cols = lists.map((l) => {
    const by = new Map<number, number | null | undefined>(l);
    return xs.map((x) => {
      const v = by.get(x);
      return fin(v) ? v : null;
    });
  });
  return [xs, ...cols];
}

// ------------------------------------------------------------------------------- one run

/** The Resources section's body: two charts on the run's time axis and the peak/mean table. */
export class Resources {
  readonly el: HTMLElement;
  private m: Monitor | null = null;
  private grid: HTMLElement;
  private wait: HTMLElement;
  private tableBox: HTMLElement;
  private cpu: Chart | null = null;
  private mem: Chart | null = null;
  private sig = "";
  private tableKey = "";

  /** `xExtent`: the range all the page's time charts show; `waiting`: monitoring was asked, no sample yet */
  constructor(
    private xExtent: () => [number, number] | null,
    waiting: boolean,
  ) {
    this.wait = h("p", { class: "empty", testid: "monitor-waiting" }, waiting ? "Waiting for the first sample…" : "No samples.");
    this.grid = h("div", { class: "charts", testid: "monitor-charts" });
    this.tableBox = h("div", { class: "scroll" });
    this.el = h(
      "div",
      { class: "mon" },
      h("p", { class: "note" }, "The monitored processes and the host, sampled every second on the load's time axis. CPU: 100% is one core."),
      this.wait,
      this.grid,
      this.tableBox,
    );
  }

  /** Takes a `monitor` section (a result's, or the live one so far); false while there is nothing. */
  update(inc: Monitor | null): boolean {
    if (inc) {
      const old = this.m;
      const same = old && old.targets.length === inc.targets.length && old.targets.every((t, i) => t.label === inc.targets[i].label);
      this.m = {
        targets: inc.targets.map((t, i) => ({ ...t, series: same ? merge(old!.targets[i].series, t.series) : t.series })),
        host: inc.host ? { ...inc.host, series: old && old.host ? merge(old.host.series, inc.host.series) : inc.host.series } : null,
      };
    }
    return hasSamples(this.m);
  }

  /** The seconds sampled, [first, last] (null: none). */
  extent(): [number, number] | null {
    return extentOf(this.m);
  }

  /** A new run (the live cursor went back): the samples start over. */
  reset(): void {
    this.m = null;
    this.drop();
    this.tableKey = "";
  }

  private drop(): void {
    if (this.cpu) this.cpu.destroy();
    if (this.mem) this.mem.destroy();
    this.cpu = this.mem = null;
    fill(this.grid);
  }

  /** Draws what update() took (call once the section is shown: the charts need a width). */
  draw(): void {
    const m = this.m;
    const any = hasSamples(m);
    this.wait.hidden = any;
    if (!m || !any) return;
    const host = m.host && m.host.series.length ? m.host : null;
    const cpus = host && fin(host.cpus) && host.cpus > 0 ? host.cpus : 0;
    const sig = JSON.stringify([m.targets.map((t) => t.label), !!host, cpus]);
    if (sig !== this.sig) {
      this.drop();
      this.sig = sig;
    }
    const tSeries = m.targets.map((t) => t.series);
    const first = m.targets.length ? m.targets[0].series : host ? host.series : [];
    const count = () => first.length;
    if (!this.cpu) this.cpu = this.cpuChart(m.targets, host, cpus, count);
    if (!this.mem) this.mem = this.memChart(m.targets, host, count);
    // the data-points hook reads the first series of the latest data
    this.cpu.o.count = this.mem.o.count = count;

    const hs = host ? host.series : [];
    const cpuCols = columns([
      ...tSeries.map((s) => s.map((p): [number, number | null | undefined] => [p.t, p.cpu_percent])),
      ...(host ? [hs.map((p): [number, number | null | undefined] => [p.t, p.cpu_percent])] : []),
    ]);
    if (cpus) cpuCols.push(cpuCols[0].map(() => 100 * cpus));
    this.cpu.set(cpuCols);
    this.mem.set(
      columns([
        ...tSeries.map((s) => s.map((p): [number, number | null | undefined] => [p.t, p.rss_bytes])),
        ...(host ? [hs.map((p): [number, number | null | undefined] => [p.t, p.mem_used_bytes])] : []),
      ]),
    );
    const total = host ? (host.peak && host.peak.mem_total_bytes) || hs[hs.length - 1].mem_total_bytes : null;
    this.mem.note(fin(total) ? "host memory: " + fmtSize(total) : "");
    const hostPeak = host && host.peak ? host.peak.cpu_percent : null;
    this.cpu.note(cpus && fin(hostPeak) ? `host peak ${fmtCpu(hostPeak)} of ${fmtInt(100 * cpus)}%` : "");
    this.cpu.draw();
    this.mem.draw();

    // the table changes with the peaks and means, not every second's samples
    const key = JSON.stringify([m.targets.map((t) => [t.label, t.peak, t.mean, t.error, t.series.length > 0]), host && [host.peak, host.mean, host.cpus]]);
    if (key !== this.tableKey) {
      this.tableKey = key;
      fill(this.tableBox, monitorTable(m.targets, host));
    }
  }

  private cpuChart(targets: MonitorTarget[], host: MonitorHost | null, cpus: number, count: () => number): Chart {
    const series: SeriesDef[] = targets.map((t, i) => ({ label: t.label, color: PALETTE[i % PALETTE.length], width: 2 }));
    if (host) series.push({ label: hostLabel(host), color: HOST, width: 1.5 });
    if (cpus) series.push({ label: `host capacity (${cores(cpus)})`, color: HOST, width: 1, dash: [6, 4], points: false });
    const nData = series.length - (cpus ? 1 : 0);
    const slot = this.grid.appendChild(h("div", { class: "slot" }));
    return new Chart(slot, {
      testid: "chart-monitor-cpu",
      title: "CPU",
      unit: "%, 100% = one core",
      yFmt: fmtCpu,
      series,
      xExtent: this.xExtent,
      count,
      extend: (o) => {
        // the host's capacity line is in range unless it would flatten the rest (many cores)
        o.scales!.y = {
          range: (u: uPlot) => {
            let m = 0;
            for (let i = 1; i <= nData; i++) for (const v of u.data[i] || []) if (v !== null && v !== undefined && v > m) m = v;
            const cap = cpus * 100;
            return [0, niceTop(cap && (m === 0 || cap <= 4 * m) ? Math.max(m, cap) : m)];
          },
        };
      },
    });
  }

  private memChart(targets: MonitorTarget[], host: MonitorHost | null, count: () => number): Chart {
    const series: SeriesDef[] = targets.map((t, i) => ({ label: t.label + " RSS", color: PALETTE[i % PALETTE.length], width: 2 }));
    if (host) series.push({ label: "host memory used", color: HOST, width: 1.5 });
    // a host using 10 times a target's memory: log by default (else the target's line lies on the axis)
    const peakOf = (vals: (number | null | undefined)[]) => Math.max(0, ...vals.filter(fin));
    const tMax = peakOf(targets.map((t) => (t.peak ? t.peak.rss_bytes : null)));
    const hMax = host && host.peak ? peakOf([host.peak.mem_used_bytes]) : 0;
    const slot = this.grid.appendChild(h("div", { class: "slot" }));
    return new Chart(slot, {
      testid: "chart-monitor-memory",
      title: "Memory",
      unit: "RSS, host used",
      yFmt: fmtSize,
      series,
      logToggle: true,
      logDefault: tMax > 0 && hMax / tMax > 10,
      emptyMax: 1e6,
      xExtent: this.xExtent,
      count,
      extend: (o, log) => {
        // log: 1, 2, 5 times the powers of ten (20 MB, 50 MB, 100 MB...), not the powers alone
        if (log) o.axes![1] = { ...o.axes![1], splits: logSplits, filter: (_u, splits) => splits };
      },
    });
  }

  destroy(): void {
    this.drop();
  }
}

type Stat = Partial<Record<string, number | null>> | undefined;

/** Peak and mean of each target and of the host. */
function monitorTable(targets: MonitorTarget[], host: MonitorHost | null): HTMLElement {
  // data-label: the cell's name in the narrow layout (one block per row)
  const NAMES: Record<string, string> = { cpu: "CPU", rss: "RSS", threads: "threads", fds: "fds", processes: "procs" };
  const pair = (col: string, peak: Stat, mean: Stat, k: string, fmt: (v: number | null | undefined) => string, name = NAMES[col]) =>
    ["peak", "mean"].map((w) => {
      const v = (w === "peak" ? peak : mean) || {};
      const x = v[k];
      return h("td", { class: "n", "data-col": `${col}-${w}`, "data-label": `${name} ${w}`, "data-value": fin(x) ? String(x) : null }, fmt(x));
    });
  const rows: HTMLElement[] = targets.map((t) => {
    const none = !t.series.length;
    const err = str(t.error);
    return h(
      "tr",
      { testid: "monitor-row", "data-label": t.label, class: err ? "mon-failed" : null },
      h(
        "td",
        { class: "name", "data-col": "label" },
        t.label,
        none ? h("span", { class: "note" }, " · no samples") : null,
        err ? h("div", { class: "mon-err", testid: "monitor-error" }, "sampling failed: " + err) : null,
      ),
      pair("cpu", t.peak, t.mean, "cpu_percent", fmtCpu),
      pair("rss", t.peak, t.mean, "rss_bytes", fmtSize),
      pair("threads", t.peak, t.mean, "threads", fmtCount),
      pair("fds", t.peak, t.mean, "fds", fmtCount),
      pair("processes", t.peak, t.mean, "processes", fmtCount),
    );
  });
  if (host && host.series.length) {
    const cpus = fin(host.cpus) && host.cpus > 0 ? host.cpus : 0;
    const dash = (col: string) => ["peak", "mean"].map((w) => h("td", { class: "n muted", "data-col": `${col}-${w}`, "data-label": `${NAMES[col]} ${w}` }, "–"));
    rows.push(
      h(
        "tr",
        { testid: "monitor-row", "data-label": "host", class: "mon-host" },
        h(
          "td",
          { class: "name", "data-col": "label" },
          hostLabel(host),
          h("div", { class: "note" }, (cpus ? `CPU of ${fmtInt(100 * cpus)}%` : "") + (fin(host.peak && host.peak.mem_total_bytes) ? `${cpus ? " · " : ""}memory used of ${fmtSize(host.peak!.mem_total_bytes)}` : "")),
        ),
        pair("cpu", host.peak, host.mean, "cpu_percent", fmtCpu),
        pair("rss", host.peak, host.mean, "mem_used_bytes", fmtSize, "used"),
        dash("threads"),
        dash("fds"),
        dash("processes"),
      ),
    );
  }
  const group = (t: string) => h("th", { colspan: 2, class: "grp", scope: "colgroup" }, t);
  return h(
    "table",
    { class: "grid mon-table", testid: "monitor-table" },
    h(
      "thead",
      null,
      h("tr", null, h("th", { rowspan: 2, scope: "col" }, "Target"), group("CPU"), group("Memory (RSS)"), group("Threads"), group("Descriptors"), group("Processes")),
      h("tr", { class: "sub" }, Array.from({ length: 10 }, (_, i) => h("th", { class: "n" }, i % 2 ? "mean" : "peak"))),
    ),
    h("tbody", null, rows),
  );
}

// ------------------------------------------------------------------------------- compare

/** The runs table's cell: each target's CPU and RSS, peak / mean (`data-*` raw, of the first target). */
export function compareMonitorCell(r: Result): HTMLElement {
  const m = monitorOf(r.monitor);
  if (!m || !m.targets.length) return h("td", { class: "thr-none" }, "–");
  const t0 = m.targets[0];
  const raw = (s: Stat, k: string) => {
    const v = s && s[k];
    return fin(v) ? String(v) : null;
  };
  return h(
    "td",
    {
      testid: "compare-monitor",
      class: "mon-cell",
      "data-cpu-peak": raw(t0.peak, "cpu_percent"),
      "data-cpu-mean": raw(t0.mean, "cpu_percent"),
      "data-rss-peak": raw(t0.peak, "rss_bytes"),
      "data-rss-mean": raw(t0.mean, "rss_bytes"),
    },
    m.targets.map((t) => {
      const p = t.peak || {};
      const a = t.mean || {};
      return h(
        "div",
        { "data-label": t.label },
        h("span", { class: "note" }, t.label + ": "),
        `CPU ${fmtCpu(p.cpu_percent)} / ${fmtCpu(a.cpu_percent)} · RSS ${fmtSize(p.rss_bytes)} / ${fmtSize(a.rss_bytes)}`,
        str(t.error) ? h("span", { class: "mon-err" }, " (sampling failed)") : null,
      );
    }),
  );
}

/** The first target's CPU of each monitored run, one line per run (null: no run monitored). */
export function compareMonitorChart(parent: HTMLElement, runs: Run[], xExtent: () => [number, number] | null): Chart | null {
  const withMon = runs
    .map((run, i) => ({ run, i, m: monitorOf(run.result.monitor) }))
    .filter((x) => x.m && x.m.targets.length && x.m.targets[0].series.length);
  if (!withMon.length) return null;
  const tables = withMon.map((x) => {
    const s = x.m!.targets[0].series;
    return [s.map((p) => p.t), s.map((p) => (fin(p.cpu_percent) ? p.cpu_percent : null))];
  });
  const labels = new Set(withMon.map((x) => x.m!.targets[0].label));
  const first = withMon[0].m!.targets[0].series.length;
  const c = new Chart(parent, {
    testid: "chart-monitor-compare",
    title: "Target CPU" + (labels.size === 1 ? ": " + Array.from(labels)[0] : " (each run's first target)"),
    unit: "%, 100% = one core",
    yFmt: fmtCpu,
    series: withMon.map((x) => ({
      label: labels.size === 1 ? x.run.label : `${x.run.label}: ${x.m!.targets[0].label}`,
      color: PALETTE[x.i % PALETTE.length],
    })),
    xExtent,
    count: () => first,
  });
  c.set(join(tables));
  return c;
}

/** [first, last] second of a run's monitor samples. */
export function monitorExtent(r: Result): [number, number] | null {
  return extentOf(monitorOf(r.monitor));
}
