// DOM building without HTML strings (every text from the data is attacker-controlled) and number formats.

/** A finite number (a field of a result or a live answer, checked before use). */
export const fin = (v: unknown): v is number => typeof v === "number" && isFinite(v);

type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined | ((ev: Event) => void)>;

/** Creates an element; attributes are set with setAttribute, text children become text nodes. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (attrs) {
    for (const k of Object.keys(attrs)) {
      const v = attrs[k];
      if (v === null || v === undefined || v === false) continue;
      if (typeof v === "function") el.addEventListener(k.slice(2), v);
      else if (k === "testid") el.setAttribute("data-testid", String(v));
      else el.setAttribute(k, v === true ? "" : String(v));
    }
  }
  append(el, children);
  return el;
}

export function append(el: Node, children: (Child | Child[])[]): void {
  for (const c of children) {
    if (Array.isArray(c)) append(el, c);
    else if (c === null || c === undefined || c === false) continue;
    else el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

/** Replaces the children of `el`. */
export function fill(el: Node, ...children: (Child | Child[])[]): void {
  while (el.firstChild) el.removeChild(el.firstChild);
  append(el, children);
}

export function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

const nf = (d: number) => new Intl.NumberFormat("en-US", { minimumFractionDigits: d, maximumFractionDigits: d });
const NF = [nf(0), nf(1), nf(2), nf(3)];

export const num = (v: unknown): number => (typeof v === "number" && isFinite(v) ? v : 0);

/** 1234567 -> "1,234,567" */
export function fmtInt(v: number | null | undefined): string {
  return v === null || v === undefined || !isFinite(v) ? "–" : NF[0].format(Math.round(v));
}

/** Fixed decimals with separators. */
export function fmtFixed(v: number | null | undefined, d: number): string {
  return v === null || v === undefined || !isFinite(v) ? "–" : NF[Math.max(0, Math.min(3, d))].format(v);
}

/** Microseconds as milliseconds with three significant digits (HDR's precision): 0.267, 3.31, 96.2, 1,234. */
export function fmtMs(us: number | null | undefined): string {
  if (us === null || us === undefined || !isFinite(us)) return "–";
  const ms = us / 1000;
  const a = Math.abs(ms);
  const d = a === 0 ? 0 : a < 1 ? 3 : a < 10 ? 2 : a < 100 ? 1 : 0;
  return NF[d].format(ms);
}

/** A rate: 2 decimals below 10, 1 below 100, none above. */
export function fmtRate(v: number | null | undefined): string {
  if (v === null || v === undefined || !isFinite(v)) return "–";
  const a = Math.abs(v);
  return NF[a === 0 ? 0 : a < 10 ? 2 : a < 100 ? 1 : 0].format(v);
}

/** A share in percent (0..100). */
export function fmtPct(p: number | null | undefined): string {
  if (p === null || p === undefined || !isFinite(p)) return "–";
  if (p === 0) return "0%";
  if (p < 0.01) return "<0.01%";
  return NF[p < 10 ? 2 : 1].format(p) + "%";
}

export function fmtBytes(b: number | null | undefined): string {
  if (b === null || b === undefined || !isFinite(b)) return "–";
  const u = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (Math.abs(b) >= 1000 && i < u.length - 1) {
    b /= 1000;
    i++;
  }
  return (i === 0 ? NF[0].format(b) : NF[Math.abs(b) < 10 ? 2 : 1].format(b)) + " " + u[i];
}

/** Seconds: "4.1 s", "2 m 05 s", "1 h 02 m". */
export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !isFinite(s)) return "–";
  if (s < 60) return NF[s < 10 ? 1 : 0].format(s) + " s";
  const t = Math.round(s);
  const hh = Math.floor(t / 3600);
  const mm = Math.floor((t % 3600) / 60);
  const ss = t % 60;
  const p2 = (n: number) => (n < 10 ? "0" : "") + n;
  return hh ? `${hh} h ${p2(mm)} m` : `${mm} m ${p2(ss)} s`;
}

/** Seconds since start: "45s", "1:30", "1:02:03" (`long`: "0:45", as on an axis that reaches a minute). */
export function fmtClock(s: number, long = false): string {
  if (!isFinite(s)) return "";
  const t = Math.round(s);
  if (Math.abs(t) < 60 && !long) return t + "s";
  const hh = Math.floor(t / 3600);
  const mm = Math.floor((t % 3600) / 60);
  const ss = t % 60;
  const p2 = (n: number) => (n < 10 ? "0" : "") + n;
  return hh ? `${hh}:${p2(mm)}:${p2(ss)}` : `${mm}:${p2(ss)}`;
}

/** Unix seconds as "2026-11-20 21:36:38 UTC" (UTC: the same text wherever the report is opened). */
export function fmtUnix(u: number | null | undefined): string {
  if (u === null || u === undefined || !isFinite(u) || u <= 0) return "–";
  const d = new Date(u * 1000);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** The percentile keys of a percentiles_us map, numerically sorted. */
export function pctKeys(p: Record<string, number> | undefined): string[] {
  return Object.keys(p || {}).sort((a, b) => parseFloat(a) - parseFloat(b));
}

/** Value of a percentile in µs, or null. */
export function pct(p: Record<string, number> | undefined, key: string): number | null {
  const v = p ? p[key] : undefined;
  return typeof v === "number" && isFinite(v) ? v : null;
}
