// Event streams (Server-Sent Events, `text/event-stream` over HTTP/1.1): from the result's `stream`
// (the engine's stats/streams.rs) how the streams ended, the events and their rate, and the time to
// each stream's first event and between its events as exact HDR percentiles. The events a second over
// time are a chart of the seconds' `events` (view.ts's "events" chart). A language model's streamed
// answers add their tokens (`stream.tokens`): how many, a second, and the time to first token, between
// tokens and per token; the seconds' `tokens` are the "tokens" chart.
import { phaseOf } from "./breakdown";
import type { Endpoint, Phase, StreamReport, TokenReport } from "./types";
import { fill, fin, fmtInt, fmtMs, fmtRate, h, num } from "./util";

/** An endpoint's `stream`, checked (null: no event stream was read). */
export function streamOf(e: Endpoint | null | undefined): StreamReport | null {
  const s = e && e.stream;
  if (!s || typeof s !== "object" || !fin(s.streams) || !(s.streams > 0)) return null;
  if (!phaseOf(s.first_event) || !phaseOf(s.gap)) return null;
  const reasons: Record<string, number> = {};
  if (s.cut_reasons && typeof s.cut_reasons === "object") {
    for (const [why, n] of Object.entries(s.cut_reasons)) if (fin(n)) reasons[why] = n;
  }
  const t = s.tokens;
  const tokens: TokenReport | null =
    t && typeof t === "object" && fin(t.tokens) && phaseOf(t.ttft) && phaseOf(t.itl) && phaseOf(t.tpot)
      ? { ...t, streams: num(t.streams), tokens_per_s: num(t.tokens_per_s), counted_by_server: num(t.counted_by_server) }
      : null;
  return { ...s, completed: num(s.completed), cut: num(s.cut), events: num(s.events), events_per_s: num(s.events_per_s), cut_reasons: reasons, tokens };
}

type Row = { label: string; about: string; phase: (s: StreamReport) => Phase | null; k: string };
const ROWS: Row[] = [
  { k: "first_event", label: "time to first event", about: "from the request's start (as its latency) to its stream's first event", phase: (s) => s.first_event },
  { k: "gap", label: "gap between events", about: "from one event of a stream to the next (0 for events that came in one read)", phase: (s) => s.gap },
  { k: "ttft", label: "time to first token", about: "from the request's start to its stream's first event that carried output", phase: (s) => (s.tokens ? s.tokens.ttft : null) },
  { k: "itl", label: "inter-token latency", about: "from one output event of a stream to the next", phase: (s) => (s.tokens ? s.tokens.itl : null) },
  { k: "tpot", label: "time per output token", about: "a stream's time from its first token to its end, over its tokens but the first", phase: (s) => (s.tokens ? s.tokens.tpot : null) },
];

/** The box (`chart-streams`) for one endpoint or the aggregate. */
export function streamsBox(s: StreamReport, label: string): HTMLElement {
  const open = Math.max(0, num(s.streams) - num(s.completed) - num(s.cut));
  const fact = (testid: string, value: number, text: string) => h("span", { class: "st-fact", testid, "data-value": String(value) }, h("b", null, text));
  const facts = h(
    "p",
    { class: "st-facts" },
    fact("streams-begun", s.streams, fmtInt(s.streams)),
    " streams: ",
    fact("streams-completed", s.completed, fmtInt(s.completed)),
    " completed, ",
    fact("streams-cut", s.cut, fmtInt(s.cut)),
    " cut",
    open ? `, ${fmtInt(open)} still open at the end` : "",
    " · ",
    fact("stream-events", s.events, fmtInt(s.events)),
    " events, ",
    fact("events-per-s", s.events_per_s, fmtRate(s.events_per_s)),
    " a second",
    ...(s.tokens
      ? [
          " · ",
          fact("stream-tokens", s.tokens.tokens, fmtInt(s.tokens.tokens)),
          " tokens, ",
          fact("tokens-per-s", s.tokens.tokens_per_s, fmtRate(s.tokens.tokens_per_s)),
          " a second",
          s.tokens.counted_by_server === s.tokens.streams ? " (as the server counted them)" : s.tokens.counted_by_server ? ` (${fmtInt(s.tokens.counted_by_server)} streams counted by the server)` : " (an output event a token)",
        ]
      : []),
  );
  const reasons = Object.entries(s.cut_reasons).sort((a, b) => b[1] - a[1]);
  const cuts = reasons.length
    ? h(
        "ul",
        { class: "st-cuts", testid: "stream-cuts" },
        reasons.map(([why, n]) => h("li", { testid: "stream-cut", "data-reason": why, "data-value": String(n) }, `${fmtInt(n)} cut: ${why}`)),
      )
    : null;
  const cell = (col: string, v: number | null | undefined, text?: string) =>
    h("td", { class: "n", "data-col": col, "data-value": fin(v) ? String(v) : null }, text !== undefined ? text : fin(v) ? fmtMs(v) : "–");
  const rows = ROWS.flatMap(({ k, label, about, phase }) => {
    const p = phase(s);
    if (!p) return [];
    const pc = p.percentiles_us || {};
    const none = !p.count;
    return h(
      "tr",
      { testid: "stream-row", "data-row": k, title: about },
      h("td", null, label),
      cell("count", p.count, fmtInt(p.count)),
      cell("mean", none ? null : p.mean_us),
      cell("p50", none ? null : pc["50"]),
      cell("p90", none ? null : pc["90"]),
      cell("p95", none ? null : pc["95"]),
      cell("p99", none ? null : pc["99"]),
      cell("max", none ? null : fin(p.max_us) ? p.max_us : pc["100"]),
    );
  });
  const th = (t: string, n = true) => h("th", { class: n ? "n" : null }, t);
  const table = h(
    "table",
    { class: "grid", testid: "streams-table" },
    h("thead", null, h("tr", null, th("(ms)", false), th("Count"), th("Mean"), th("p50"), th("p90"), th("p95"), th("p99"), th("Max"))),
    h("tbody", null, rows),
  );
  return h(
    "div",
    { class: "chart", testid: "chart-streams", "data-points": String(num(s.events)), "data-endpoint": label },
    h("div", { class: "chart-head" }, h("h3", null, "Event streams: " + label)),
    facts,
    cuts,
    h("div", { class: "scroll" }, table),
  );
}

/** The section's body: the streams of the entry shown, or why there are none; false when none. */
export function fillStreams(body: HTMLElement, e: Endpoint | null, label: string): boolean {
  const s = streamOf(e);
  if (!s) {
    fill(body, h("p", { class: "empty", testid: "no-streams" }, "No event stream read here (HTTP/1.1 text/event-stream responses are)."));
    return false;
  }
  fill(body, streamsBox(s, label));
  return true;
}

/** What the streams count a second (`Summary.events`, `Summary.tokens`): each has its chart. */
export type StreamCount = "events" | "tokens";

/** Whether any second counted `key`: its a-second chart is drawn then. */
export const hasCount = (key: StreamCount, points: { events?: number; tokens?: number }[], e: Endpoint | null): boolean =>
  num(e && e[key]) > 0 || points.some((p) => num(p[key]) > 0);
