// The two sections of Locust's web UI that are about the process rather than the run's numbers, for the
// `squall -f` dashboard: "Current ratio" (the tasks of the users running now, /api/tasks in Locust's
// get_ratio shape) and "Logs" (the last 500 lines squall logged, /api/logs, Locust's log reader). Both
// are read while the page polls and drawn only when they changed, so a reader's scroll or selection in
// the log is not reset every second. And the tabs a locustfile adds to Locust's page (`ExtensionTab`).
import type { Extension, Ratios } from "./types";
import { SortTable, type Column } from "./tables";
import { fill, fmtFixed, fmtInt, h, num } from "./util";

const pctText = (r: number) => (100 * r).toFixed(1) + "%";

function ratioList(r: Ratios, depth: number): HTMLElement {
  return h(
    "ul",
    { class: "ratio" },
    Object.keys(r).map((name) => {
      const v = r[name];
      return h(
        "li",
        { testid: "ratio-row", "data-name": name, "data-ratio": String(num(v.ratio)), "data-depth": String(depth) },
        h("span", { class: "pct" }, pctText(num(v.ratio))),
        " ",
        name,
        v.tasks && Object.keys(v.tasks).length ? ratioList(v.tasks, depth + 1) : null,
      );
    }),
  );
}

/** Locust's "Current ratio": per User class (its tasks' shares within the class), then of all tasks. */
export class RatioSection {
  readonly el = h("div", { class: "ratios" });
  private shown = "";

  update(data: { per_class?: Ratios; total?: Ratios } | null): void {
    const text = JSON.stringify(data || null);
    if (text === this.shown) return;
    this.shown = text;
    const per = (data && data.per_class) || {};
    const total = (data && data.total) || {};
    if (!Object.keys(per).length) {
      fill(this.el, h("p", { class: "empty", testid: "no-ratio" }, "No users yet"));
      return;
    }
    fill(
      this.el,
      h("div", { testid: "ratio-per-class" }, h("h3", null, "Ratio per class"), ratioList(per, 0)),
      h("div", { testid: "ratio-total" }, h("h3", null, "Total ratio"), ratioList(total, 0)),
    );
  }
}

/** Locust's "Logs": squall's log lines (Locust's format), newest last. */
export class LogsSection {
  readonly el: HTMLElement;
  private pre = h("pre", { class: "logs", testid: "log-lines" });
  private count = -1;
  private lastLine = "";

  constructor() {
    this.el = h("div", null, this.pre);
  }

  update(lines: string[]): void {
    const last = lines.length ? lines[lines.length - 1] : "";
    if (lines.length === this.count && last === this.lastLine) return;
    this.count = lines.length;
    this.lastLine = last;
    this.pre.textContent = lines.length ? lines.join("\n") : "No log lines (--skip-log-setup leaves logging to the locustfile)";
    this.pre.setAttribute("data-lines", String(lines.length));
  }
}

type ExtRow = Record<string, unknown>;

const cellValue = (v: unknown): number | string | null =>
  typeof v === "number" ? v : v === null || v === undefined ? null : typeof v === "string" ? v : JSON.stringify(v);

/** A tab a locustfile adds (Locust's `extended_tabs`, Extension): its rows are the `extended_stats`
 * entry of its key in Locust's `/stats/requests` (the file's after_request hook adds them), drawn as a
 * sortable table of its columns (the file's `extended_tables` structure, else the first row's keys). */
export class ExtensionTab {
  readonly el: HTMLElement;
  private table: SortTable<ExtRow> | null = null;
  private shown = "";

  constructor(
    readonly tab: Extension["tabs"][number],
    private index: number,
  ) {
    this.el = h("div", { testid: "extension-tab", "data-key": tab.key });
    this.update([]);
  }

  update(rows: ExtRow[]): void {
    const text = JSON.stringify(rows);
    if (text === this.shown) return;
    this.shown = text;
    const keys = this.tab.columns || (rows.length ? Object.keys(rows[0]).map((key) => ({ key, title: key })) : []);
    if (!rows.length || !keys.length) {
      this.table = null;
      fill(this.el, h("p", { class: "empty", testid: "extension-empty" }, "No data yet"));
      return;
    }
    if (!this.table) {
      const cols: Column<ExtRow>[] = keys.map(({ key, title }) => ({
        key,
        label: title,
        num: typeof rows[0][key] === "number",
        get: (r) => cellValue(r[key]),
        fmt: (v) => (typeof v === "number" ? (Number.isInteger(v) ? fmtInt(v) : fmtFixed(v, 2)) : v === null ? "–" : v),
      }));
      this.table = new SortTable<ExtRow>("extension-table-" + this.index, cols, () => ({ testid: "extension-row" }));
      fill(this.el, this.table.el);
    }
    this.table.set(rows, null);
  }
}

/** The rows of each tab from Locust's `/stats/requests` answer (its `extended_stats`: [{key, data}]). */
export function extendedRows(stats: unknown, key: string): ExtRow[] {
  const all = stats && typeof stats === "object" ? (stats as { extended_stats?: unknown }).extended_stats : null;
  if (!Array.isArray(all)) return [];
  const entry = all.find((e) => e && typeof e === "object" && (e as { key?: unknown }).key === key) as { data?: unknown } | undefined;
  const data = entry && Array.isArray(entry.data) ? entry.data : [];
  return data.filter((r): r is ExtRow => !!r && typeof r === "object" && !Array.isArray(r));
}
