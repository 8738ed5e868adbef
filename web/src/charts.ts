// uPlot wrappers: a chart box with a title, a log-scale toggle, data-points for tests, live resizing.
import uPlot from "uplot";
import { h, fmtClock } from "./util";

export interface SeriesDef {
  label: string;
  color: string;
  dash?: number[];
  width?: number;
  /** the y scale (default "y"); another scale gets its axis from `extend` */
  scale?: string;
  /** no line: a legend entry for what a draw hook paints */
  noPath?: boolean;
  /** points: true always, false never; default while fewer than 40 x */
  points?: boolean;
  /** the legend's format (default: the chart's yFmt) */
  fmt?: (v: number) => string;
}

export interface ChartOpts {
  testid: string;
  title: string;
  /** formats a y value (legend and axis) */
  yFmt: (v: number) => string;
  /** unit shown after the title, e.g. "ms" */
  unit?: string;
  series: SeriesDef[];
  /** x is "time" (seconds since start), "pctl" (log10(1 / (1 - p))) or "num" (a number, `xFmt`). */
  x?: "time" | "pctl" | "num";
  /** "num": the x axis' and legend's format, and the legend's name of x */
  xFmt?: (v: number) => string;
  xLabel?: string;
  logToggle?: boolean;
  /** the scales the log toggle switches (default ["y"]; "x" only with x "num") */
  logScales?: string[];
  /** the log toggle starts on */
  logDefault?: boolean;
  /** "num": the x index whose values the legend shows while the cursor is off the plot (else none) */
  restIdx?: () => number | null;
  /** the last word on uPlot's options: more axes and scales, draw hooks */
  extend?: (opts: uPlot.Options, log: boolean) => void;
  /** connect points across nulls (joined tables) */
  spanGaps?: boolean;
  height?: number;
  /** the y axis' top while there is no data (ms charts: 1000 µs) */
  emptyMax?: number;
  /** whole numbers only on the y axis (users) */
  intY?: boolean;
  /** "time": the x range to show at least (the run's seconds, shared by the page's time charts); a zoom still narrows it */
  xExtent?: (() => [number, number] | null) | null;
  /** what `data-points` counts when not the x values (the resources' charts: the first series' samples) */
  count?: () => number;
}

/** The last non-null value of a column: the legend shows it while the cursor is off the plot. */
function lastOf(col: ArrayLike<number | null | undefined> | undefined): number | null {
  if (!col) return null;
  for (let i = col.length - 1; i >= 0; i--) {
    const v = col[i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

type Col = (number | null)[];

const charts = new Set<Chart>();
export const INT_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1e3, 2e3, 2500, 5e3, 1e4, 2e4, 25e3, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7];
/** Whole seconds only on the time axis. */
const TIME_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 28800, 86400];
export const theme = { axis: "#888", grid: "rgba(128,128,128,.18)", card: "#fff" };

function readTheme(): void {
  const cs = getComputedStyle(document.documentElement);
  theme.axis = cs.getPropertyValue("--chart-axis").trim() || theme.axis;
  theme.grid = cs.getPropertyValue("--chart-grid").trim() || theme.grid;
  theme.card = cs.getPropertyValue("--card").trim() || theme.card;
}

let themed = false;
function watchTheme(): void {
  if (themed) return;
  themed = true;
  readTheme();
  const mq = window.matchMedia ? window.matchMedia("(prefers-color-scheme: dark)") : null;
  const redo = () => {
    readTheme();
    charts.forEach((c) => c.redraw());
  };
  if (mq && mq.addEventListener) mq.addEventListener("change", redo);
}

/** Percentile label of the spectrum's x: log10(1 / (1 - p)). */
export function pctlLabel(x: number, decimals = 4): string {
  const p = 100 * (1 - Math.pow(10, -x));
  const s = p.toFixed(decimals);
  return (s.indexOf(".") >= 0 ? s.replace(/0+$/, "").replace(/\.$/, "") : s) + "%";
}

/** x of a percentile (0..100) on the spectrum's axis; Infinity for 100. */
export function pctlX(p: number): number {
  return p >= 100 ? Infinity : Math.log10(100 / (100 - p));
}

/** Spectrum series: [[x...], [value_us...]] with x = log10(1 / (1 - p)); 100% goes just right of the last point. */
export function spectrumTable(spec: [number, number][]): (number | null)[][] {
  const xs: number[] = [];
  const ys: number[] = [];
  for (const [p, v] of spec) {
    if (typeof p !== "number" || typeof v !== "number") continue;
    let x = pctlX(p);
    if (!isFinite(x)) {
      if (!xs.length) x = 0;
      else if (v > ys[ys.length - 1]) x = xs[xs.length - 1] + 0.05;
      else continue;
    }
    if (xs.length && x <= xs[xs.length - 1]) continue;
    xs.push(x);
    ys.push(v);
  }
  return [xs, ys];
}

export class Chart {
  readonly box: HTMLElement;
  private plot: HTMLElement;
  private noteEl: HTMLElement;
  private u: uPlot | null = null;
  private log = false;
  private ro: ResizeObserver | null = null;
  private width = 0;
  data: Col[];

  constructor(parent: HTMLElement, readonly o: ChartOpts) {
    watchTheme();
    this.log = !!o.logDefault;
    this.data = [[], ...o.series.map(() => [])];
    this.plot = h("div", { class: "plot" });
    this.noteEl = h("span", { class: "chart-note" });
    const head = h(
      "div",
      { class: "chart-head" },
      h("h3", null, o.title, o.unit ? h("span", { class: "unit" }, " (" + o.unit + ")") : null),
      this.noteEl,
    );
    if (o.logToggle) {
      const btn = h(
        "button",
        { class: "tog", type: "button", title: "logarithmic " + (o.logScales && o.logScales.indexOf("x") >= 0 ? "axes" : "y axis"), "aria-pressed": String(this.log) },
        "log",
      );
      btn.addEventListener("click", () => {
        this.log = !this.log;
        btn.setAttribute("aria-pressed", String(this.log));
        this.rebuild();
      });
      head.appendChild(btn);
    }
    this.box = h("div", { class: "chart", testid: o.testid, "data-points": "0" }, head, this.plot);
    parent.appendChild(this.box);
    charts.add(this);
    if (typeof ResizeObserver !== "undefined") {
      this.ro = new ResizeObserver(() => this.resize());
      this.ro.observe(this.plot);
    }
  }

  /** A short text beside the title (the schedule's late and dropped counts). */
  note(text: string): void {
    if (this.noteEl.textContent !== text) this.noteEl.textContent = text;
  }

  /** Appends one x with its y values (call draw() after a batch). */
  push(x: number, ys: (number | null)[]): void {
    this.data[0].push(x);
    for (let i = 0; i < this.o.series.length; i++) this.data[i + 1].push(ys[i] ?? null);
  }

  /** Replaces all data. */
  set(data: Col[]): void {
    this.data = data;
  }

  clear(): void {
    this.data = [[], ...this.o.series.map(() => [])];
  }

  get points(): number {
    return this.data[0].length;
  }

  /** Draws the current data: the plot is made once, then only its data is replaced. */
  draw(): void {
    this.box.setAttribute("data-points", String(this.o.count ? this.o.count() : this.points));
    const w = this.measure();
    if (!this.u) {
      if (!w) return; // not laid out yet: the resize observer draws it
      this.create(w);
    } else {
      this.u.setData(this.shaped() as uPlot.AlignedData, true);
    }
  }

  redraw(): void {
    if (this.u) this.u.redraw(false, true);
  }

  destroy(): void {
    charts.delete(this);
    if (this.ro) this.ro.disconnect();
    if (this.u) this.u.destroy();
    this.u = null;
    this.box.remove();
  }

  private measure(): number {
    return Math.floor(this.plot.clientWidth);
  }

  private resize(): void {
    const w = this.measure();
    if (!w || Math.abs(w - this.width) < 2) return;
    if (!this.u) {
      this.create(w);
      return;
    }
    this.width = w;
    this.u.setSize({ width: w, height: this.o.height || 220 });
  }

  private rebuild(): void {
    if (this.u) {
      this.u.destroy();
      this.u = null;
    }
    this.draw();
  }

  /** The data as uPlot gets it: a log axis cannot take zeros. */
  private shaped(): Col[] {
    if (!this.log) return this.data;
    const logs = this.o.logScales || ["y"];
    const onLog = (i: number) => logs.indexOf(this.o.series[i - 1].scale || "y") >= 0;
    return this.data.map((c, i) => (i === 0 || !onLog(i) ? c : c.map((v) => (v !== null && v > 0 ? v : null))));
  }

  private create(width: number): void {
    this.width = width;
    const o = this.o;
    const yFmt = o.yFmt;
    const pctl = o.x === "pctl";
    const numX = o.x === "num";
    const xFmt = o.xFmt || ((v: number) => String(v));
    const logs = o.logScales || ["y"];
    const logY = this.log && logs.indexOf("y") >= 0;
    const logX = this.log && numX && logs.indexOf("x") >= 0;
    const rest = numX && o.restIdx ? o.restIdx() : null;
    const axisSize = (_u: uPlot, values: string[]) =>
      values && values.length ? Math.max(36, Math.max(...values.map((v) => (v || "").length)) * 7 + 16) : 40;
    const common = {
      stroke: () => theme.axis,
      grid: { stroke: () => theme.grid, width: 1 },
      ticks: { stroke: () => theme.grid, width: 1, size: 4 },
      font: "11px system-ui, -apple-system, 'Segoe UI', sans-serif",
    };
    const xAxis: uPlot.Axis = numX
      ? { ...common, values: (_u, splits) => splits.map((v) => (v === null ? "" : xFmt(v))) }
      : pctl
      ? {
          ...common,
          splits: (_u, _i, min, max) => {
            const s: number[] = [];
            for (let k = Math.ceil(min); k <= max + 1e-9; k++) s.push(k);
            return s;
          },
          values: (_u, splits) => splits.map((v) => pctlLabel(v, 6)),
        }
      : {
          ...common,
          incrs: TIME_INCRS,
          values: (_u, splits) => {
            const long = splits.length > 0 && splits[splits.length - 1] >= 60;
            return splits.map((v) => fmtClock(v, long));
          },
        };
    const yAxis: uPlot.Axis = { ...common, size: axisSize, values: (_u, splits) => splits.map((v) => (v === null ? "" : yFmt(v))) };
    if (o.intY && !logY) yAxis.incrs = INT_INCRS;
    const yScale: uPlot.Scale = logY
      ? { distr: 3, log: 10 }
      : { range: (_u, _min, max) => [0, max > 0 ? uPlot.rangeNum(0, max, 0.1, true)[1] ?? max : o.emptyMax ?? 1] };
    const xScale: uPlot.Scale = numX
      ? logX
        ? { time: false, distr: 3, log: 10 }
        : { time: false, range: (_u, _min, max) => [0, max > 0 ? uPlot.rangeNum(0, max, 0.1, true)[1] ?? max : 1] }
      : pctl
      ? {
          time: false,
          range: (_u, _min, max) => [0, Math.max(3, Math.ceil((max || 0) - 1e-9))],
        }
      : {
          time: false,
          range: (u, min, max) => {
            // When uPlot auto-ranges (the range covers all the data; not on a zoom): the data's own seconds
            // (uPlot makes a lone x 100 wide: one second drawn on a 0:00-1:40 axis), widened to the shared extent.
            const ext = o.xExtent ? o.xExtent() : null;
            const xs = u.data[0];
            if (min !== null && max !== null && xs.length && min <= xs[0] && max >= xs[xs.length - 1]) {
              min = xs[0];
              max = xs[xs.length - 1];
              if (ext) {
                min = Math.min(min, ext[0]);
                max = Math.max(max, ext[1]);
              }
            }
            return min === max || min === null ? [Math.max(0, (min ?? 0) - 1), (max ?? 0) + 1] : [min, max];
          },
        };
    const opts: uPlot.Options = {
      width,
      height: o.height || 220,
      padding: [8, pctl ? 28 : 14, 0, 0],
      legend: { live: true },
      cursor: { drag: { x: true, y: false }, points: { size: 6 } },
      scales: { x: xScale, y: yScale },
      axes: [xAxis, yAxis],
      series: [
        {
          label: numX ? o.xLabel || "x" : pctl ? "percentile" : "time",
          value: (u, v, _si, idx) => {
            if (idx === null && rest !== null) v = u.data[0][rest];
            else if (idx === null) return numX || pctl ? "" : "latest";
            return v === null || v === undefined ? "–" : numX ? xFmt(v) : pctl ? pctlLabel(v) : fmtClock(v);
          },
        },
        ...o.series.map(
          (s): uPlot.Series => ({
            label: s.label,
            stroke: s.color,
            width: s.width ?? 1.5,
            dash: s.dash,
            spanGaps: !!o.spanGaps,
            scale: s.scale || "y",
            paths: s.noPath ? () => null : undefined,
            points: { show: s.points !== undefined ? s.points : (u: uPlot) => u.data[0].length < 40, size: 4 },
            value: (u, raw, si, idx) => {
              const v: number | null | undefined =
                idx !== null ? raw : rest !== null ? u.data[si][rest] : pctl || numX ? null : lastOf(u.data[si]);
              return v === null || v === undefined ? "–" : (s.fmt || yFmt)(v);
            },
          }),
        ),
      ],
    };
    if (o.extend) o.extend(opts, this.log);
    this.u = new uPlot(opts, this.shaped() as uPlot.AlignedData, this.plot);
  }
}

/** Joins tables with different x values into one (nulls where a table has no value). */
export function join(tables: Col[][]): Col[] {
  if (!tables.length) return [[]];
  return uPlot.join(tables as uPlot.AlignedData[]) as unknown as Col[];
}

export const COLORS = {
  rps: "#22a06b",
  fail: "#e5484d",
  p50: "#3e8fe0",
  p95: "#e5a000",
  p99: "#e5484d",
  max: "#9b6bd8",
  users: "#3e8fe0",
  intended: "#8a8f98",
  delivered: "#3e8fe0",
  lost: "#e5484d",
  unsent: "#e5a000",
};

/** Colours for runs (compare) and endpoints (spectrum). */
export const PALETTE = ["#3e8fe0", "#e5a000", "#22a06b", "#e5484d", "#9b6bd8", "#d6409f", "#12a4b4", "#8d6e3f", "#6c7a89"];
