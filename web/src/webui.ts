// The two sections of Locust's web UI that are about the process rather than the run's numbers, for the
// `squall -f` dashboard: "Current ratio" (the tasks of the users running now, /api/tasks in Locust's
// get_ratio shape) and "Logs" (the last 500 lines squall logged, /api/logs, Locust's log reader). Both
// are read while the page polls and drawn only when they changed, so a reader's scroll or selection in
// the log is not reset every second.
import type { Ratios } from "./types";
import { fill, h, num } from "./util";

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
