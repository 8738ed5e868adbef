// Tables: sortable statistics (Locust's columns), percentiles, status codes, failures, exceptions, key/value lists.
import type { Endpoint, ErrorEntry, ExceptionEntry } from "./types";
import { h, fill, fmtInt, fmtMs, fmtRate, fmtDuration, num, pct, pctKeys } from "./util";

type Val = number | string | null;

export interface Column<R> {
  key: string;
  label: string;
  num?: boolean;
  title?: string;
  get: (r: R) => Val;
  fmt?: (v: Val, r: R) => string;
}

/** A table whose body is re-filled on every update; clicking a header sorts (the total row stays last). */
export class SortTable<R> {
  readonly el: HTMLTableElement;
  private body: HTMLTableSectionElement;
  private foot: HTMLTableSectionElement;
  private sortKey: string | null = null;
  private desc = false;
  private rows: R[] = [];
  private total: R | null = null;

  constructor(
    testid: string,
    private cols: Column<R>[],
    private rowAttrs: (r: R, total: boolean) => Record<string, string | null | undefined>,
  ) {
    const head = h(
      "tr",
      null,
      cols.map((c) => {
        const th = h("th", { class: c.num ? "n" : null, title: c.title || null, "data-col": c.key, scope: "col" }, c.label);
        th.addEventListener("click", () => this.sortBy(c.key));
        return th;
      }),
    );
    this.body = h("tbody");
    this.foot = h("tbody", { class: "total" });
    this.el = h("table", { class: "grid sortable", testid }, h("thead", null, head), this.body, this.foot);
  }

  set(rows: R[], total: R | null): void {
    this.rows = rows;
    this.total = total;
    this.render();
  }

  private sortBy(k: string): void {
    if (this.sortKey === k) this.desc = !this.desc;
    else {
      this.sortKey = k;
      this.desc = !!this.cols.find((c) => c.key === k && c.num);
    }
    this.el.querySelectorAll("th").forEach((th) => {
      const on = th.getAttribute("data-col") === this.sortKey;
      th.classList.toggle("sorted", on);
      th.classList.toggle("desc", on && this.desc);
    });
    this.render();
  }

  private row(r: R, total: boolean): HTMLTableRowElement {
    return h(
      "tr",
      this.rowAttrs(r, total),
      this.cols.map((c) => {
        const v = c.get(r);
        const cls = c.num ? "n" : c.key === "name" ? "name" : null;
        return h("td", { class: cls, "data-col": c.key }, c.fmt ? c.fmt(v, r) : v === null ? "–" : String(v));
      }),
    );
  }

  private render(): void {
    let rows = this.rows.slice();
    const col = this.cols.find((c) => c.key === this.sortKey);
    if (col) {
      rows.sort((a, b) => {
        const x = col.get(a);
        const y = col.get(b);
        const c =
          typeof x === "number" && typeof y === "number" ? x - y : String(x ?? "").localeCompare(String(y ?? ""));
        return this.desc ? -c : c;
      });
    }
    fill(this.body, rows.map((r) => this.row(r, false)));
    fill(this.foot, this.total ? this.row(this.total, true) : null);
  }
}

const ms = (v: Val) => (typeof v === "number" ? fmtMs(v) : "–");
const int = (v: Val) => (typeof v === "number" ? fmtInt(v) : "–");
const rate = (v: Val) => (typeof v === "number" ? fmtRate(v) : "–");

export interface StatRow {
  e: Endpoint;
  rps: number | null;
  fps: number | null;
}

/** Locust's statistics table; `current` says whether the rates are the last second's or the run's average. */
export function statsTable(current: boolean, reqLabel: string): SortTable<StatRow> {
  const Req = reqLabel.charAt(0).toUpperCase() + reqLabel.slice(1);
  const cols: Column<StatRow>[] = [
    { key: "method", label: "Type", get: (r) => r.e.method || "" },
    { key: "name", label: "Name", get: (r) => r.e.name || "" },
    { key: "requests", label: "# " + Req, num: true, get: (r) => num(r.e.requests), fmt: int },
    { key: "failures", label: "# Fails", num: true, get: (r) => num(r.e.failures), fmt: int },
    { key: "p50", label: "Median (ms)", num: true, get: (r) => (r.e.requests ? pct(r.e.percentiles_us, "50") : null), fmt: ms },
    { key: "p90", label: "90%ile (ms)", num: true, get: (r) => (r.e.requests ? pct(r.e.percentiles_us, "90") : null), fmt: ms },
    { key: "p95", label: "95%ile (ms)", num: true, get: (r) => (r.e.requests ? pct(r.e.percentiles_us, "95") : null), fmt: ms },
    { key: "p99", label: "99%ile (ms)", num: true, get: (r) => (r.e.requests ? pct(r.e.percentiles_us, "99") : null), fmt: ms },
    { key: "avg", label: "Average (ms)", num: true, get: (r) => (r.e.requests ? num(r.e.mean_us) : null), fmt: ms },
    { key: "min", label: "Min (ms)", num: true, get: (r) => (r.e.requests ? num(r.e.min_us) : null), fmt: ms },
    { key: "max", label: "Max (ms)", num: true, get: (r) => (r.e.requests ? num(r.e.max_us) : null), fmt: ms },
    {
      key: "size",
      label: "Average size (bytes)",
      num: true,
      get: (r) => (r.e.requests && r.e.body_bytes !== undefined ? num(r.e.body_bytes) / r.e.requests : null),
      fmt: int,
    },
    {
      key: "rps",
      label: current ? "Current RPS" : "RPS",
      title: current ? "the mean of the last 10 seconds, as Locust's" : "average over the run",
      num: true,
      get: (r) => r.rps,
      fmt: rate,
    },
    {
      key: "fps",
      label: current ? "Current Failures/s" : "Failures/s",
      title: current ? "the mean of the last 10 seconds, as Locust's" : "average over the run",
      num: true,
      get: (r) => r.fps,
      fmt: rate,
    },
  ];
  return new SortTable<StatRow>("stats-table", cols, (r, total) =>
    total
      ? { "data-testid": "aggregate-row", "data-name": r.e.name || "Aggregated", "data-method": r.e.method || "", class: "total" }
      : { "data-testid": "endpoint-row", "data-name": r.e.name || "", "data-method": r.e.method || "" },
  );
}

/** Response time percentiles (exact HDR values), Locust's report table. */
export function percentilesTable(keys: string[]): SortTable<Endpoint> {
  const cols: Column<Endpoint>[] = [
    { key: "method", label: "Type", get: (e) => e.method || "" },
    { key: "name", label: "Name", get: (e) => e.name || "" },
    ...keys.map(
      (k): Column<Endpoint> => ({
        key: "p" + k,
        label: k + "%",
        num: true,
        get: (e) => (e.requests ? pct(e.percentiles_us, k) : null),
        fmt: ms,
      }),
    ),
    { key: "requests", label: "# Requests", num: true, get: (e) => num(e.requests), fmt: int },
  ];
  return new SortTable<Endpoint>("percentiles-table", cols, (e, total) =>
    total
      ? { "data-testid": "percentiles-total", class: "total" }
      : { "data-testid": "percentiles-row", "data-name": e.name || "", "data-method": e.method || "" },
  );
}

export function percentileKeysOf(eps: Endpoint[]): string[] {
  const seen = new Set<string>();
  for (const e of eps) for (const k of pctKeys(e.percentiles_us)) seen.add(k);
  return Array.from(seen).sort((a, b) => parseFloat(a) - parseFloat(b));
}

/** Status codes per endpoint and in total; null when no endpoint has any (MQTT). */
export function statusTable(eps: Endpoint[], agg: Endpoint | null): HTMLTableElement | null {
  const codes = new Set<string>();
  for (const e of eps) for (const c of Object.keys(e.status_codes || {})) codes.add(c);
  if (!codes.size) return null;
  const list = Array.from(codes).sort((a, b) => parseFloat(a) - parseFloat(b) || a.localeCompare(b));
  const total: Record<string, number> = {};
  for (const e of eps) for (const c of list) total[c] = (total[c] || 0) + num((e.status_codes || {})[c]);
  const aggCodes = agg && agg.status_codes && Object.keys(agg.status_codes).length ? agg.status_codes : total;
  const cls = (c: string) => "n code c" + c.charAt(0);
  return h(
    "table",
    { class: "grid auto", testid: "status-table" },
    h("thead", null, h("tr", null, h("th", null, "Type"), h("th", null, "Name"), list.map((c) => h("th", { class: cls(c) }, c)))),
    h(
      "tbody",
      null,
      eps.map((e) =>
        h(
          "tr",
          { testid: "status-row", "data-name": e.name || "", "data-method": e.method || "" },
          h("td", null, e.method || ""),
          h("td", { class: "name" }, e.name || ""),
          list.map((c) => h("td", { class: cls(c), "data-code": c }, fmtInt(num((e.status_codes || {})[c])))),
        ),
      ),
    ),
    h(
      "tbody",
      { class: "total" },
      h(
        "tr",
        { testid: "status-total", class: "total" },
        h("td", null, ""),
        h("td", null, "Total"),
        list.map((c) => h("td", { class: cls(c), "data-code": c }, fmtInt(num(aggCodes[c])))),
      ),
    ),
  );
}

const secs = (v: number | undefined) => (typeof v === "number" && isFinite(v) ? fmtDuration(v) : "–");

export function errorsTable(errors: ErrorEntry[]): HTMLElement {
  if (!errors.length) return h("p", { class: "empty", testid: "no-failures" }, "No failures");
  const rows = errors.slice().sort((a, b) => num(b.count) - num(a.count));
  return h(
    "table",
    { class: "grid", testid: "errors-table" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", { class: "n" }, "# Occurrences"),
        h("th", null, "Method"),
        h("th", null, "Name"),
        h("th", null, "Kind"),
        h("th", { class: "n" }, "Status"),
        h("th", null, "Message"),
        h("th", { class: "n" }, "First seen"),
        h("th", { class: "n" }, "Last seen"),
      ),
    ),
    h(
      "tbody",
      null,
      rows.map((e) =>
        h(
          "tr",
          { testid: "error-row", "data-kind": e.kind || "", "data-name": e.name || "", "data-method": e.method || "" },
          h("td", { class: "n" }, fmtInt(num(e.count))),
          h("td", null, e.method || ""),
          h("td", { class: "name" }, e.name || ""),
          h("td", null, h("span", { class: "tag" }, e.kind || "")),
          h("td", { class: "n" }, e.status === null || e.status === undefined ? "" : String(e.status)),
          h("td", { class: "msg", testid: "error-message" }, e.locust || e.message || ""),
          h("td", { class: "n" }, secs(e.first_seen_s)),
          h("td", { class: "n" }, secs(e.last_seen_s)),
        ),
      ),
    ),
  );
}

export function exceptionsTable(xs: ExceptionEntry[]): HTMLElement {
  if (!xs.length) return h("p", { class: "empty", testid: "no-exceptions" }, "No exceptions");
  const rows = xs.slice().sort((a, b) => num(b.count) - num(a.count));
  return h(
    "table",
    { class: "grid", testid: "exceptions-table" },
    h("thead", null, h("tr", null, h("th", { class: "n" }, "Count"), h("th", null, "Message"), h("th", null, "Traceback"))),
    h(
      "tbody",
      null,
      rows.map((x) =>
        h(
          "tr",
          { testid: "exception-row" },
          h("td", { class: "n" }, fmtInt(num(x.count))),
          h("td", { class: "msg" }, x.message || ""),
          h("td", null, x.traceback ? h("details", null, h("summary", null, lastLine(x.traceback)), h("pre", null, x.traceback)) : ""),
        ),
      ),
    ),
  );
}

function lastLine(tb: string): string {
  const lines = tb.trim().split("\n");
  return lines[lines.length - 1].trim() || "traceback";
}

/** A two-column list of facts: [label, value, testid?]. */
export function kvTable(testid: string, rows: [string, string, string?][]): HTMLTableElement {
  return h(
    "table",
    { class: "kv", testid },
    h(
      "tbody",
      null,
      rows.map(([k, v, id]) => h("tr", null, h("th", { scope: "row" }, k), h("td", { class: "n", testid: id || null }, v))),
    ),
  );
}
