// What the page derives from the contract's shapes: labels per command, per-second rows, MQTT counts.
import type { Endpoint, Meta, Point, Result, Schedule } from "./types";
import { num, pct } from "./util";

export type Command = "bench" | "run" | "mqtt";
export type Kind = "http" | "script" | "mqtt";

export function commandOf(meta: Meta | undefined, result: Result | undefined, liveKind?: string): Command {
  const c = meta && meta.command;
  if (c === "bench" || c === "run" || c === "mqtt") return c;
  const k = (result && result.kind) || liveKind;
  return k === "mqtt" ? "mqtt" : k === "script" ? "run" : "bench";
}

export function kindOf(command: Command, result?: Result): Kind {
  const k = result && result.kind;
  if (k === "http" || k === "script" || k === "mqtt") return k;
  return command === "mqtt" ? "mqtt" : command === "run" ? "script" : "http";
}

export interface Labels {
  /** what `users` counts: "connections", "users", "clients" */
  users: string;
  Users: string;
  /** what the open model paces: "requests", "iterations", "messages" */
  paced: string;
}

export function labels(command: Command): Labels {
  if (command === "mqtt") return { users: "clients", Users: "Clients", paced: "messages" };
  if (command === "run") return { users: "users", Users: "Users", paced: "iterations" };
  return { users: "connections", Users: "Connections", paced: "requests" };
}

export const STOP_REASONS: Record<string, string> = {
  completed: "completed",
  duration: "run time reached",
  interrupted: "interrupted",
  drain_timeout: "open-model backlog did not drain",
  threshold: "stopped by a threshold",
  crashed: "crashed: the seconds saved before the end",
  running: "running",
};

export const key = (e: { method?: string; name?: string }): string => (e.method || "") + "\u0000" + (e.name || "");

export function isOpen(result: Result | undefined, schedule: Schedule | null | undefined): boolean {
  return !!schedule || (!!result && !!result.load && result.load.model === "open");
}

/** The endpoints of a point or totals with this method (MQTT: PUBLISH, DELIVER, CONNECT), merged. */
export function byMethod(eps: Endpoint[] | undefined, method: string): Endpoint[] {
  return (eps || []).filter((e) => e.method === method);
}

/** Of several endpoints with one method, the busiest: its percentiles stand for the method. */
export function busiest(eps: Endpoint[]): Endpoint | null {
  let best: Endpoint | null = null;
  for (const e of eps) if (!best || num(e.requests) > num(best.requests)) best = e;
  return best;
}

export const sum = (eps: Endpoint[], f: (e: Endpoint) => number): number => eps.reduce((a, e) => a + f(e), 0);

/** p50, p95, p99, max of one second (null when the second had no requests). */
export function latencyRow(s: { requests: number; percentiles_us: Record<string, number>; max_us: number } | null): (number | null)[] {
  if (!s || !num(s.requests)) return [null, null, null, null];
  const p = s.percentiles_us;
  return [pct(p, "50"), pct(p, "95"), pct(p, "99"), num(s.max_us) || pct(p, "100")];
}

/** MQTT message counts of one second: published, delivered, lost, failed/unsent. */
export function mqttRow(p: Point): number[] {
  const pub = byMethod(p.endpoints, "PUBLISH");
  const del = byMethod(p.endpoints, "DELIVER");
  return [
    sum(pub, (e) => num(e.requests) - num(e.failures)),
    sum(del, (e) => num(e.requests) - num(e.failures)),
    sum(del, (e) => num(e.failures)),
    sum(pub, (e) => num(e.failures)),
  ];
}

/** The requests a second counts toward the paced rate: PUBLISH messages for MQTT, else all requests. */
export function pacedCount(p: Point, command: Command): number {
  if (command === "mqtt") return sum(byMethod(p.endpoints, "PUBLISH"), (e) => num(e.requests));
  return num(p.requests);
}

export interface MqttCounts {
  connected: number | null;
  sent: number | null;
  published: number | null;
  failed: number | null;
  unsent: number | null;
  delivered: number | null;
  lost: number | null;
  duplicated: number | null;
  out_of_order: number | null;
}

const n = (v: unknown): number | null => (typeof v === "number" && isFinite(v) ? v : null);

export function mqttFromResult(r: Result): MqttCounts | null {
  const m = r.mqtt;
  if (!m) return null;
  const d = m.delivery || null;
  return {
    connected: null,
    sent: n(m.sent),
    published: n(m.published),
    failed: n(m.failed),
    unsent: n(m.unsent),
    delivered: d ? n(d.delivered) : null,
    lost: d ? n(d.lost) : null,
    duplicated: d ? n(d.duplicated) : null,
    out_of_order: d ? n(d.out_of_order) : null,
  };
}

/** The seconds a run's totals cover: its duration less the time before their last reset (`reset_s`). */
export function countedS(durationS: number, resetS: number | null | undefined): number {
  return typeof resetS === "number" && resetS > 0 ? Math.max(durationS - resetS, 0) : durationS;
}

/**
 * A per-second count as a rate. The last second of a result usually covers only part of a second
 * (the run ended within it): its count is divided by the part it covers, or left out below half a second,
 * so the chart does not show a fall that never happened; a run shorter than a second keeps its only
 * second (scaled). `durationS` null: every second is whole (live).
 */
export function perSecond(count: number, t: number, durationS: number | null): number | null {
  if (durationS === null || !(durationS > t)) return count;
  const covered = Math.min(1, durationS - t);
  if (covered >= 0.999) return count;
  return covered >= 0.5 || t === 0 ? count / Math.max(covered, 1e-3) : null;
}

/**
 * The dashboard's "current" rates, smoothed as Locust's `current_rps`: the mean of up to the last
 * CURRENT_WINDOW seconds published (fewer at the start of a test). Locust averages the ten clock seconds
 * ending two seconds before its last request, leaving out the seconds still filling; squall publishes a
 * second once it is complete, so its last ten are the same kind of window, about as old. One second alone
 * swings with the users' timing: 2 users each waiting 50 ms between requests made 36 to 39 requests in
 * each whole second of a 12-s run, and 38.0 and 37.9 over its two 10-s windows (measured).
 */
export const CURRENT_WINDOW = 10;

export interface Current {
  rps: number;
  fps: number;
  /** per endpoint (`key`): requests and failures a second over the same seconds */
  endpoints: Map<string, { rps: number; fps: number }>;
}

export function currentRates(points: Point[]): Current | null {
  const win = points.slice(-CURRENT_WINDOW);
  if (!win.length) return null;
  const n = win.length;
  const eps = new Map<string, { rps: number; fps: number }>();
  let reqs = 0;
  let fails = 0;
  for (const p of win) {
    reqs += num(p.requests);
    fails += num(p.failures);
    for (const e of p.endpoints || []) {
      const k = key(e);
      const c = eps.get(k) || { rps: 0, fps: 0 };
      c.rps += num(e.requests) / n;
      c.fps += num(e.failures) / n;
      eps.set(k, c);
    }
  }
  return { rps: reqs / n, fps: fails / n, endpoints: eps };
}
