// Responses per second by status (Gatling's chart): a series per status code, and "no response" for the
// requests that failed without one (refused, timed out, reset, closed). Its counts are the seconds'
// `status_codes`, so that over the run they add up to the result's. WebSocket exchanges (method WS) have
// no status by nature: they are not "no response", and a run of them alone has no such chart.
import type { Endpoint, Point } from "./types";
import { COLORS, type SeriesDef } from "./charts";
import { num } from "./util";

/** The series of requests that got no status. */
export const NO_RESPONSE = "none";
/** Codes shown apart at most (by count); the rest add up under "other". */
const MAX_CODES = 8;
const OTHER = "other";

type Counted = { method?: string; requests?: number; status_codes?: Record<string, number> };

/** A WebSocket exchange: a message and its reply, which has no status. */
const statusless = (e: Counted) => e.method === "WS";

/** The status counts of entries added up (a second's endpoints, or one of them). */
export function statusCounts(entries: Counted[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of entries) for (const [c, n] of Object.entries(e.status_codes || {})) out[c] = (out[c] || 0) + num(n);
  return out;
}

/** Requests without a status among those counted. */
function unanswered(entries: Counted[], counts: Record<string, number>): number {
  const answered = Object.values(counts).reduce((a, n) => a + n, 0);
  return Math.max(0, entries.reduce((a, e) => a + (statusless(e) ? 0 : num(e.requests)), 0) - answered);
}

/** The series' keys for totals (the aggregate's endpoints, or the picked one): codes by count, "other", "none". */
export function statusKeys(totals: Counted[]): string[] {
  const counts = statusCounts(totals);
  const codes = Object.keys(counts).sort((a, b) => counts[b] - counts[a] || a.localeCompare(b));
  const keys = codes.slice(0, MAX_CODES).sort();
  if (codes.length > MAX_CODES) keys.push(OTHER);
  if (unanswered(totals, counts) > 0) keys.push(NO_RESPONSE);
  return keys;
}

/** Colour by class (2xx green, 3xx blue, 4xx amber, 5xx red); a second code of a class is dashed. */
export function statusSeries(keys: string[]): SeriesDef[] {
  const seen = new Map<string, number>();
  return keys.map((k) => {
    const cls = k === NO_RESPONSE || k === OTHER ? k : k.charAt(0);
    const nth = seen.get(cls) || 0;
    seen.set(cls, nth + 1);
    const color =
      { "2": COLORS.rps, "3": COLORS.p50, "4": COLORS.p95, "5": COLORS.fail, none: COLORS.max, other: "#8d6e3f" }[cls] || COLORS.intended;
    return {
      label: k === NO_RESPONSE ? "no response" : k,
      color,
      dash: nth === 0 ? undefined : nth === 1 ? [6, 3] : [2, 3],
    };
  });
}

/** One second's count per key (entries: the second's endpoints, or the picked one's entry). */
export function statusRow(entries: Counted[], keys: string[]): number[] {
  const counts = statusCounts(entries);
  const shown = new Set(keys);
  let other = 0;
  for (const [c, n] of Object.entries(counts)) if (!shown.has(c)) other += n;
  return keys.map((k) => (k === NO_RESPONSE ? unanswered(entries, counts) : k === OTHER ? other : counts[k] || 0));
}

/** The entries of a second a chart counts: all its endpoints, or the picked one (none that second: []). */
export function entriesOf(p: Point, pick: (e: Endpoint) => boolean): Endpoint[] {
  return (p.endpoints || []).filter(pick);
}
