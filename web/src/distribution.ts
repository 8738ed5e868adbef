// The response-time distribution (Gatling's chart): requests per response-time bar, drawn from the
// engine's `distribution` (up to 50 log-spaced bars from the fastest request to the slowest whose counts
// add up to the HDR histogram's exactly), on a log time axis so that a narrow peak and a long tail both show.
import type uPlot from "uplot";
import type { Endpoint } from "./types";
import { Chart } from "./charts";
import { fin, fmtInt, fmtMs, fmtPct } from "./util";

/** [from_us, to_us, requests]: the requests above `from` and at most `to` (the first bar from the fastest). */
export type Bar = [number, number, number];

const FILL = "rgba(62, 143, 224, 0.78)";

/** An endpoint's bars, checked (none: an older result, or nothing measured). */
export function barsOf(e: Endpoint | null | undefined): Bar[] {
  const d = e && e.distribution;
  if (!Array.isArray(d)) return [];
  return d.filter((b): b is Bar => Array.isArray(b) && b.length >= 3 && fin(b[0]) && fin(b[1]) && fin(b[2]) && b[1] >= b[0] && b[2] >= 0);
}

/** Where the cursor finds a bar: its geometric middle on the log axis (a bar of one value: that value). */
const middle = (b: Bar): number => Math.sqrt(Math.max(b[0], 1) * Math.max(b[1], 1));

/** 1, 2, 5 times the powers of 10 within [min, max] (µs). */
function splits125(_u: uPlot, _i: number, min: number, max: number): number[] {
  const out: number[] = [];
  if (!(min > 0) || !(max > min)) return out;
  for (let e = Math.floor(Math.log10(min)); e <= Math.ceil(Math.log10(max)); e++)
    for (const m of [1, 2, 5]) {
      const v = m * Math.pow(10, e);
      if (v >= min && v <= max) out.push(v);
    }
  // a narrow distribution (less than a factor of 2): its ends and middle instead
  return out.length >= 2 ? out : [min, Math.sqrt(min * max), max];
}

function drawBars(u: uPlot, bars: Bar[]): void {
  const c = u.ctx;
  const r = typeof devicePixelRatio === "number" && devicePixelRatio > 0 ? devicePixelRatio : 1;
  const { left, top, width, height } = u.bbox;
  const logY = u.scales.y.distr === 3;
  const base = logY ? top + height : u.valToPos(0, "y", true);
  c.save();
  c.beginPath();
  c.rect(left, top, width, height);
  c.clip();
  c.fillStyle = FILL;
  for (const [from, to, n] of bars) {
    if (!(n > 0)) continue;
    let x0 = u.valToPos(Math.max(from, 1), "x", true);
    let x1 = u.valToPos(Math.max(to, 1), "x", true);
    if (x1 - x0 < 3 * r) {
      const m = (x0 + x1) / 2;
      x0 = m - 1.5 * r;
      x1 = m + 1.5 * r;
    }
    const y = u.valToPos(n, "y", true);
    c.fillRect(x0 + 0.5 * r, y, Math.max(r, x1 - x0 - r), Math.max(0, base - y));
  }
  c.restore();
}

/** The chart: one bar per `distribution` entry; `data-total` is the requests drawn (their sum). */
export class Distribution {
  readonly chart: Chart;
  private bars: Bar[] = [];
  private total = 0;

  constructor(parent: HTMLElement, testid: string, title: string) {
    const self = this;
    this.chart = new Chart(parent, {
      testid,
      title,
      x: "num",
      xLabel: "response time",
      xFmt: (v) => self.barLabel(v),
      yFmt: (v) => fmtInt(v),
      intY: true,
      logToggle: true,
      height: 240,
      emptyMax: 10,
      series: [{ label: "requests", color: FILL, noPath: true, points: false, fmt: (v) => `${fmtInt(v)} (${fmtPct(self.total ? (100 * v) / self.total : 0)})` }],
      extend: (o) => {
        const ax = o.axes!;
        // (a log axis' default filter keeps only the powers of 10)
        ax[0] = { ...ax[0], splits: splits125, filter: (_u, sp) => sp, values: (_u, sp) => sp.map((v) => (v === null ? "" : fmtMs(v))), label: "response time (ms, log scale)", labelSize: 20, labelGap: 0 };
        ax[1] = { ...ax[1], label: "requests", labelSize: 20, labelGap: 0 };
        o.scales!.x = { time: false, distr: 3, log: 10, range: () => self.xRange() };
        o.hooks = { draw: [(u) => drawBars(u, self.bars)] };
      },
    });
  }

  /** The x range: the bars' ends, a little wider (one value: a factor of 1.2 either side). */
  private xRange(): [number, number] {
    if (!this.bars.length) return [100, 10_000];
    const lo = Math.max(1, this.bars[0][0]);
    const hi = Math.max(lo, this.bars[this.bars.length - 1][1]);
    const pad = hi / lo < 1.5 ? 1.2 : 1.04;
    return [lo / pad, hi * pad];
  }

  private barLabel(x: number): string {
    let best: Bar | null = null;
    for (const b of this.bars) if (!best || Math.abs(Math.log(middle(b) / x)) < Math.abs(Math.log(middle(best) / x))) best = b;
    if (!best) return fmtMs(x) + " ms";
    return best[0] === best[1] ? fmtMs(best[1]) + " ms" : `${fmtMs(best[0])}–${fmtMs(best[1])} ms`;
  }

  set(bars: Bar[]): void {
    this.bars = bars;
    this.total = bars.reduce((a, b) => a + b[2], 0);
    this.chart.set([bars.map(middle), bars.map((b) => b[2])]);
    this.chart.note(bars.length ? `${fmtInt(this.total)} requests` : "");
    this.chart.box.setAttribute("data-total", String(this.total));
  }
}
