// The generator's own health (`generator`: squall watching its threads' CPU and its sends' lag), so that
// nobody takes squall's limit for the target's: a banner with its warnings, a header badge, its threads.
import type { Generator, GeneratorThread, Lateness, Result } from "./types";
import { fill, fin, fmtBytes, fmtInt, fmtMs, fmtPct, h, setText } from "./util";
import { fmtCpu } from "./monitor";

export const WARNING_LEAD = "The generator, not the target, may be the limit: ";

/** The `generator` section, checked (null: none). */
export function generatorOf(v: unknown): Generator | null {
  if (!v || typeof v !== "object" || Array.isArray(v)) return null;
  const g = v as Generator;
  return {
    ...g,
    threads: Array.isArray(g.threads) ? g.threads.filter((t): t is GeneratorThread => !!t && typeof t === "object") : [],
    warnings: Array.isArray(g.warnings) ? g.warnings.filter((w): w is string => typeof w === "string" && !!w) : [],
    saturated: g.saturated === true,
  };
}

export type GenState = "saturated" | "warning" | "ok";

export function genState(g: Generator): GenState {
  return g.saturated ? "saturated" : (g.warnings || []).length ? "warning" : "ok";
}

/** The banner (hidden while there is no warning); `setWarnings` fills it. */
export function warningBanner(): HTMLElement {
  return h("div", { class: "gen-warn", testid: "generator-warning", role: "alert", hidden: true });
}

/** One line per warning; only touched when they change (the dashboard calls it every second). */
export function setWarnings(el: HTMLElement, g: Generator | null): void {
  const ws = g ? g.warnings || [] : [];
  const key = JSON.stringify([ws, g && g.saturated]);
  if (el.dataset.key === key) return;
  el.dataset.key = key;
  el.hidden = !ws.length;
  el.className = "gen-warn " + (g && g.saturated ? "bad" : "warn");
  fill(
    el,
    ws.map((w) => h("p", { class: "gen-line", testid: "generator-warning-line" }, h("b", null, WARNING_LEAD), w)),
  );
}

const BADGE: Record<GenState, [string, string]> = {
  saturated: ["generator saturated", "bad"],
  warning: ["generator behind schedule", "warn"],
  ok: ["generator ok", "good"],
};

/** The header badge (hidden until there is a `generator`); a link to squall's threads. */
export function generatorBadge(): HTMLElement {
  return h("a", { class: "badge gen", href: "#sec-details", testid: "generator-badge", hidden: true });
}

export function setBadge(el: HTMLElement, g: Generator | null): void {
  el.hidden = !g;
  if (!g) return;
  const st = genState(g);
  const [text, cls] = BADGE[st];
  const n = (g.warnings || []).length;
  setText(el, st === "warning" && n > 1 ? `${text} (${n} warnings)` : text);
  el.className = "badge gen " + cls;
  el.setAttribute("data-state", st);
  el.setAttribute("title", n ? (g.warnings || []).join("\n") : "squall kept up: no thread ran out of CPU and the sends kept to their schedule");
}

/** Whether the paced sends' lateness warned (sustained or material); null when the section does not say
 * (no paced sends, or a result older than the rule: then any late send counts). */
export function lateWarned(g: Generator | null): boolean | null {
  const l = g && g.lateness;
  if (!l || typeof l !== "object") return null;
  return l.sustained === true || l.material === true;
}

/** A paced run's late sends and the rule's verdict on them, with the numbers (python/squall/lateness.py). */
export function latenessLine(l: Lateness): HTMLElement {
  const sent = fin(l.sent) ? l.sent : 0;
  const late = fin(l.late) ? l.late : 0;
  const rule = l.rule || {};
  const share = +(100 * (fin(rule.share) ? rule.share : 0.01)).toPrecision(3) + "%"; // the rule's 1%, as written
  const inRow = fin(rule.sustained_s) ? rule.sustained_s : 3;
  const st = l.streak;
  const verdict: string[] = [];
  if (l.material) verdict.push(`more than ${share} of the run's sends were late`);
  if (l.sustained && st)
    verdict.push(`more than ${share} were late every second for ${fmtInt(st.last - st.first + 1)} s (seconds ${st.first}-${st.last}: ${fmtInt(st.late)} of ${fmtInt(st.sent)})`);
  const text =
    `Paced sends late (> ${fmtInt(fin(l.late_after_ms) ? l.late_after_ms : 10)} ms): ${fmtInt(late)} of ${fmtInt(sent)}` +
    ` (${fmtPct(sent ? (100 * late) / sent : 0)})` +
    (late && fin(l.max_lag_us) ? `, up to ${fmtMs(l.max_lag_us)} ms behind` : "") +
    ". " +
    (verdict.length
      ? "A warning: " + verdict.join("; ") + "."
      : l.judged === "so far"
        ? `No warning so far: squall warns when more than ${share} are late in each of ${fmtInt(inRow)} seconds in a row, and at the end when more than ${share} of the run's sends were.`
        : `No warning: squall warns when more than ${share} of the run's sends are late, or more than ${share} in each of ${fmtInt(inRow)} seconds in a row.`);
  return h(
    "p",
    {
      class: "note gen-late",
      testid: "generator-lateness",
      "data-late": String(late),
      "data-sent": String(sent),
      "data-sustained": String(l.sustained === true),
      "data-material": String(l.material === true),
    },
    text,
  );
}

/** squall's threads: mean and peak CPU, seconds saturated; squall as a whole last. */
export function generatorTable(g: Generator): HTMLElement {
  const rows = (g.threads || []).map((t) => {
    const sat = fin(t.saturated_s) ? t.saturated_s : 0;
    return h(
      "tr",
      { testid: "generator-thread", "data-name": String(t.name ?? ""), class: sat ? "gen-hot" : null },
      h("td", { class: "name mono", "data-col": "name" }, String(t.name ?? "")),
      h("td", { class: "n", "data-col": "mean", "data-value": fin(t.cpu_percent_mean) ? String(t.cpu_percent_mean) : null }, fmtCpu(t.cpu_percent_mean)),
      h("td", { class: "n", "data-col": "peak", "data-value": fin(t.cpu_percent_peak) ? String(t.cpu_percent_peak) : null }, fmtCpu(t.cpu_percent_peak)),
      h("td", { class: "n", "data-col": "saturated", "data-value": String(sat) }, sat ? fmtInt(sat) + " s" : "0"),
    );
  });
  const p = g.process;
  const total =
    p && typeof p === "object"
      ? h(
          "tr",
          { testid: "generator-process" },
          h("td", null, "squall (all threads" + (fin(p.cpus) && p.cpus > 0 ? `, of ${fmtInt(100 * p.cpus)}%` : "") + ")"),
          h("td", { class: "n", "data-col": "mean" }, fmtCpu(p.cpu_percent_mean)),
          h("td", { class: "n", "data-col": "peak" }, fmtCpu(p.cpu_percent_peak)),
          h("td", { class: "n" }, ""),
        )
      : null;
  return h(
    "div",
    { class: "gen" },
    h("h3", null, "squall's own threads", h("span", { class: "note" }, " · CPU, 100% is one core; saturated: above 90% for 3 s or more in a row")),
    h(
      "table",
      { class: "grid gen-table", testid: "generator-table" },
      h(
        "thead",
        null,
        h("tr", null, h("th", null, "Thread"), h("th", { class: "n" }, "Mean CPU"), h("th", { class: "n" }, "Peak CPU"), h("th", { class: "n" }, "Saturated")),
      ),
      h("tbody", null, rows),
      total ? h("tbody", { class: "total" }, total) : null,
    ),
    g.lateness && typeof g.lateness === "object" ? latenessLine(g.lateness) : null,
    memoryLine(g),
  );
}

/** squall's peak resident memory, and how much it grew over the run (the connections, the statistics). */
function memoryLine(g: Generator): HTMLElement | null {
  const p = g.process;
  if (!p || typeof p !== "object" || !fin(p.rss_peak_bytes)) return null;
  const grew = fin(p.rss_start_bytes) ? `, ${fmtBytes(Math.max(p.rss_peak_bytes - p.rss_start_bytes, 0))} more than before the run` : "";
  return h("p", { class: "note", testid: "generator-memory" }, `Memory: peak ${fmtBytes(p.rss_peak_bytes)} resident${grew}.`);
}

/** Compare: a run whose generator warned gets a mark beside its label. */
export function compareGeneratorMark(r: Result): HTMLElement | null {
  const g = generatorOf(r.generator);
  if (!g || genState(g) === "ok") return null;
  const st = genState(g);
  return h(
    "span",
    { class: "badge gen " + BADGE[st][1], testid: "compare-generator", "data-state": st, title: (g.warnings || []).join("\n") },
    BADGE[st][0],
  );
}
