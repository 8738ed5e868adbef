// Which endpoint the charts show: all of them (the aggregate) or one (Gatling's per-request pages), picked
// from a list above the charts. Hidden while there is one endpoint; left out of prints and PNGs.
import type { Endpoint } from "./types";
import { key } from "./model";
import { h, setText } from "./util";

/** The picker's value for all endpoints. */
export const ALL = "";

export const endpointLabel = (e: { method?: string; name?: string }): string => ((e.method || "") + " " + (e.name || "")).trim();

export class Picker {
  readonly el: HTMLElement;
  private sel: HTMLSelectElement;
  private shownKeys = "";
  private label: HTMLElement;

  constructor(onChange: () => void) {
    this.sel = h("select", { testid: "endpoint-picker", "aria-label": "endpoint" });
    this.sel.addEventListener("change", onChange);
    this.label = h("span", { class: "pick-note" });
    this.el = h("div", { class: "picker", hidden: true }, h("label", null, "Show ", this.sel), this.label);
  }

  /** The picked endpoint's key (`model.key`), or ALL. */
  get value(): string {
    return this.sel.value;
  }

  /** Picks an endpoint by its key (tests, links); unknown keys pick all. */
  pick(k: string): void {
    this.sel.value = k;
    if (this.sel.value !== k) this.sel.value = ALL;
  }

  /** The options: all, then each endpoint (sorted as the statistics table sorts them); the choice stays. */
  update(endpoints: Endpoint[]): void {
    const eps = endpoints.slice().sort((a, b) => (a.name || "").localeCompare(b.name || "") || (a.method || "").localeCompare(b.method || ""));
    const keys = eps.map(key).join("\u0001");
    this.el.hidden = eps.length < 2;
    if (keys === this.shownKeys) return;
    this.shownKeys = keys;
    const was = this.sel.value;
    while (this.sel.firstChild) this.sel.removeChild(this.sel.firstChild);
    this.sel.appendChild(h("option", { value: ALL }, "all requests (aggregated)"));
    for (const e of eps) this.sel.appendChild(h("option", { value: key(e), "data-method": e.method || "", "data-name": e.name || "" }, endpointLabel(e)));
    this.pick(was);
    setText(this.label, " in the time charts, the distribution and the breakdown");
  }

  /** Whether an entry (a second's endpoint) is the picked one; with ALL, every entry is. */
  has(e: { method?: string; name?: string }): boolean {
    return this.value === ALL || key(e) === this.value;
  }
}
