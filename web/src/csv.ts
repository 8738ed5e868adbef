// Locust's stats.csv from a result (report mode: the download without a server).
import type { Endpoint, Result } from "./types";
import { num, pctKeys } from "./util";

const msx = (us: number) => String(+(us / 1000).toFixed(3));

function cell(v: string | number): string {
  const s = String(v);
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

export function statsCsv(r: Result): string {
  const agg = r.aggregate;
  const keys = pctKeys(agg ? agg.percentiles_us : undefined);
  const d = num(r.duration_s);
  const head = [
    "Type",
    "Name",
    "Request Count",
    "Failure Count",
    "Median Response Time",
    "Average Response Time",
    "Min Response Time",
    "Max Response Time",
    "Average Content Size",
    "Requests/s",
    "Failures/s",
    ...keys.map((k) => k + "%"),
  ];
  const row = (type: string, name: string, e: Endpoint) => {
    const n = num(e.requests);
    const p = e.percentiles_us || {};
    const has = Object.keys(p).length > 0;
    return [
      type,
      name,
      n,
      num(e.failures),
      has ? msx(num(p["50"])) : 0,
      num(e.mean_us) / 1000,
      msx(num(e.min_us)),
      msx(num(e.max_us)),
      n ? num(e.body_bytes) / n : 0,
      d > 0 ? n / d : 0,
      d > 0 ? num(e.failures) / d : 0,
      ...keys.map((k) => (has ? msx(num(p[k])) : "N/A")),
    ];
  };
  const rows = [head, ...(r.endpoints || []).map((e) => row(e.method, e.name, e))];
  if (agg) rows.push(row("", "Aggregated", agg));
  return rows.map((cols) => cols.map(cell).join(",")).join("\r\n") + "\r\n";
}
