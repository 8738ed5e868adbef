// Where the time goes (k6's breakdown of a request): connect (TCP), the TLS handshake, waiting (from the
// request written to the first response byte: the server's time to first byte and the network) and
// receiving (first byte to last), from the result's `timings` (HTTP/1.1 runs; the engine's
// stats/timing.rs). A bar of each phase's mean share of a response's time, then each phase's
// percentiles. Connect and TLS happen once a connection: their share is their total over all
// responses.
import type { Endpoint, Phase, Timings } from "./types";
import { fill, fin, fmtInt, fmtMs, fmtPct, h, num } from "./util";

type PhaseKey = "connect" | "tls" | "waiting" | "receiving";
const PHASES: { k: PhaseKey; label: string; color: string; about: string }[] = [
  { k: "connect", label: "connect", color: "#9b6bd8", about: "TCP connect, once a connection" },
  { k: "tls", label: "TLS handshake", color: "#d6409f", about: "once a connection over TLS" },
  { k: "waiting", label: "waiting (TTFB)", color: "#3e8fe0", about: "request written to the first response byte read" },
  { k: "receiving", label: "receiving", color: "#22a06b", about: "first response byte to the last (0 when one read took it all)" },
];
const REST = {
  label: "the rest",
  color: "#b7bdc6",
  about: "the mean response time less the phases: writing the request and waiting to send it (the open model's lag, a scripted request's wait for the engine)",
};

/** A phase's histogram summary, checked (null: absent or malformed); event streams' too (streams.ts). */
export function phaseOf(v: unknown): Phase | null {
  if (!v || typeof v !== "object") return null;
  const p = v as Phase;
  return fin(p.count) && fin(p.mean_us) ? p : null;
}

/** An endpoint's `timings`, checked (null: not broken down). */
export function timingsOf(e: Endpoint | null | undefined): Timings | null {
  const t = e && e.timings;
  if (!t || typeof t !== "object") return null;
  const out: Partial<Timings> = {};
  for (const { k } of PHASES) {
    const p = phaseOf(t[k]);
    if (!p) return null;
    out[k] = p;
  }
  return out.waiting!.count > 0 ? (out as Timings) : null;
}

/** A share of a response's time (µs) in ms; under a microsecond (a connect spread over many requests) as such. */
const fmtShare = (us: number): string => (us > 0 && us < 0.5 ? "<0.001" : fmtMs(us));

/** A phase's time summed over its requests (µs). */
const totalOf = (p: Phase): number => (fin(p.total_us) ? p.total_us : p.mean_us * p.count);

/** The box (a chart-like card: `chart-timings`) for one endpoint or the aggregate. */
export function breakdown(e: Endpoint, label: string): HTMLElement {
  const t = timingsOf(e)!;
  const responses = t.waiting.count;
  const shares = PHASES.map((p) => ({ ...p, us: totalOf(t[p.k]) / responses }));
  const phasesUs = shares.reduce((a, s) => a + s.us, 0);
  const rest = Math.max(0, num(e.mean_us) - phasesUs);
  const whole = phasesUs + rest || 1;
  const segs = [...shares, { k: "rest", ...REST, us: rest }];
  const bar = h(
    "div",
    { class: "bd-bar", role: "img", "aria-label": "mean time per response by phase" },
    segs
      .filter((s) => s.us > 0)
      .map((s) =>
        h("span", {
          class: "bd-seg",
          testid: "timing-seg",
          "data-phase": s.k,
          "data-value": String(s.us),
          title: `${s.label}: ${fmtShare(s.us)} ms (${fmtPct((100 * s.us) / whole)})`,
          style: `width:${((100 * s.us) / whole).toFixed(3)}%;background:${s.color}`,
        }),
      ),
  );
  const legend = h(
    "div",
    { class: "bd-legend" },
    segs.map((s) =>
      h(
        "span",
        { class: "bd-key", title: s.about },
        h("i", { style: `background:${s.color}` }),
        s.label + " ",
        h("b", null, fmtShare(s.us) + " ms"),
        " (" + fmtPct((100 * s.us) / whole) + ")",
      ),
    ),
  );
  const cell = (col: string, v: number | null | undefined, text?: string) =>
    h("td", { class: "n", "data-col": col, "data-value": fin(v) ? String(v) : null }, text !== undefined ? text : fin(v) ? fmtMs(v) : "–");
  const rows = PHASES.map(({ k, label, about }) => {
    const p = t[k];
    const pc = p.percentiles_us || {};
    const none = !p.count;
    return h(
      "tr",
      { testid: "timing-row", "data-phase": k, title: about },
      h("td", null, label),
      cell("count", p.count, fmtInt(p.count) + (k === "connect" || k === "tls" ? (p.count === 1 ? " connection" : " connections") : "")),
      cell("mean", none ? null : p.mean_us),
      cell("p50", none ? null : pc["50"]),
      cell("p95", none ? null : pc["95"]),
      cell("p99", none ? null : pc["99"]),
      cell("max", none ? null : fin(p.max_us) ? p.max_us : pc["100"]),
    );
  });
  const th = (t: string, n = true) => h("th", { class: n ? "n" : null }, t);
  const table = h(
    "table",
    { class: "grid bd-table", testid: "timings-table" },
    h("thead", null, h("tr", null, th("Phase", false), th("Count"), th("Mean (ms)"), th("p50"), th("p95"), th("p99"), th("Max"))),
    h("tbody", null, rows),
  );
  return h(
    "div",
    { class: "chart bd", testid: "chart-timings", "data-points": String(PHASES.filter(({ k }) => t[k].count > 0).length), "data-endpoint": label },
    h(
      "div",
      { class: "chart-head" },
      h(
        "h3",
        null,
        "Mean time per response: " + label,
        h(
          "span",
          { class: "unit" },
          ` (${fmtInt(responses)} responses, ${fmtMs(num(e.mean_us))} ms` +
            (num(e.requests) > responses ? `; ${fmtInt(num(e.requests) - responses)} requests without one count in the mean, not in the phases)` : ")"),
        ),
      ),
    ),
    bar,
    legend,
    h("div", { class: "scroll" }, table),
  );
}

/** The section's body: the breakdown of the entry shown, or why there is none. */
export function fillBreakdown(body: HTMLElement, e: Endpoint | null, label: string): boolean {
  if (!e || !timingsOf(e)) {
    fill(body, h("p", { class: "empty", testid: "no-timings" }, "Not broken down: only HTTP/1.1 requests are (not HTTP/2, WebSocket or MQTT, nor results from before squall timed the phases)."));
    return false;
  }
  fill(body, breakdown(e, label));
  return true;
}
