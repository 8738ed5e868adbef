// Thresholds (`--threshold 'p95<300ms'`): the verdicts of a result, or the configured texts while a run
// is live (pending: the verdict comes with the result).
import type { Meta, Result, Verdict } from "./types";
import { h } from "./util";

export type VerdictState = "pass" | "fail" | "pending" | "none";

export interface ThresholdRow {
  text: string;
  /** null: the whole run */
  endpoint: string | null;
  state: VerdictState;
  shown: string;
  reason: string;
}

/** The endpoint a threshold's text names ("GET /x: max<2s" -> "GET /x"), as squall parses it; null: all. */
export function scopeOf(text: string): string | null {
  const m = /^\s*(?:(.+?)\s*:\s*)?(?:[a-z_]+(?:\.[a-z_0-9.]+)?|p\d+(?:\.\d+)?)\s*(?:<=|>=|==|!=|<|>)/.exec(text);
  return m && m[1] ? m[1] : null;
}

const str = (v: unknown): string => (typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));

/**
 * The rows to show: a result's verdicts; else (live, or a final result that holds none) the configured
 * texts of `meta.thresholds`, pending while live. Empty: no section.
 */
export function thresholdRows(meta: Meta, result: Result | undefined, live: boolean): ThresholdRow[] {
  const verdicts = result && Array.isArray(result.thresholds) ? result.thresholds : null;
  if (verdicts) {
    return verdicts
      .filter((v): v is Verdict => !!v && typeof v === "object")
      .map((v) => ({
        text: str(v.threshold),
        endpoint: typeof v.endpoint === "string" && v.endpoint ? v.endpoint : null,
        state: v.passed === true ? "pass" : "fail",
        shown: str(v.shown) || (typeof v.value === "number" && isFinite(v.value) ? String(v.value) : "n/a"),
        reason: str(v.reason),
      }));
  }
  const texts = Array.isArray(meta.thresholds) ? meta.thresholds.map(str).filter(Boolean) : [];
  return texts.map((text) => ({
    text,
    endpoint: scopeOf(text),
    state: live ? "pending" : "none",
    shown: "–",
    reason: live ? "" : "the result holds no verdict",
  }));
}

export interface Tally {
  total: number;
  passed: number;
  failed: number;
  pending: number;
}

export function tally(rows: ThresholdRow[]): Tally {
  const n = (s: VerdictState) => rows.filter((r) => r.state === s).length;
  return { total: rows.length, passed: n("pass"), failed: n("fail"), pending: rows.length - n("pass") - n("fail") };
}

/** "3 thresholds: 2 passed, 1 failed" (or "2 thresholds: pending" while the run is live). */
export function tallyText(t: Tally): string {
  const head = `${t.total} threshold${t.total === 1 ? "" : "s"}: `;
  if (t.passed + t.failed === 0) return head + (t.pending ? "pending" : "no verdict");
  return head + `${t.passed} passed, ${t.failed} failed` + (t.pending ? `, ${t.pending} without verdict` : "");
}

/** The tally's colour: bad when any failed, good when all passed, else neutral. */
export function tallyClass(t: Tally): string {
  return t.failed ? "bad" : t.passed === t.total && t.total ? "good" : "pending";
}

// the text says it (not the colour alone); a mark before it comes from the style sheet
const LABEL: Record<VerdictState, string> = { pass: "PASS", fail: "FAIL", pending: "PENDING", none: "NO VERDICT" };

export function verdictPill(state: VerdictState): HTMLElement {
  return h("span", { class: "verdict " + state, "data-verdict": state }, LABEL[state]);
}

/** The header badge; a link to the section. */
export function thresholdsBadge(rows: ThresholdRow[]): HTMLElement {
  const t = tally(rows);
  return h(
    "a",
    {
      class: "badge thr " + tallyClass(t),
      href: "#sec-thresholds",
      testid: "thresholds-badge",
      "data-total": String(t.total),
      "data-passed": String(t.passed),
      "data-failed": String(t.failed),
      "data-pending": String(t.pending),
    },
    tallyText(t),
  );
}

export function thresholdsTable(rows: ThresholdRow[]): HTMLElement {
  return h(
    "table",
    { class: "grid thresholds", testid: "thresholds-table" },
    h(
      "thead",
      null,
      h(
        "tr",
        null,
        h("th", null, "Result"),
        h("th", null, "Threshold"),
        h("th", null, "Endpoint"),
        h("th", { class: "n" }, "Measured"),
        h("th", null, "Note"),
      ),
    ),
    h(
      "tbody",
      null,
      rows.map((r) =>
        h(
          "tr",
          {
            testid: "threshold-row",
            class: "thr-" + r.state,
            "data-threshold": r.text,
            "data-passed": r.state === "pass" ? "true" : r.state === "fail" ? "false" : null,
            "data-state": r.state,
          },
          h("td", null, verdictPill(r.state)),
          h("td", { class: "mono expr" }, r.text),
          h("td", { class: "name" + (r.endpoint ? "" : " all") }, r.endpoint || "all"),
          h("td", { class: "n", testid: "threshold-value" }, r.shown),
          h("td", { class: "msg" + (r.reason ? " why" : "") }, r.reason),
        ),
      ),
    ),
  );
}
