// One run: key numbers, charts, tables. A report feeds it once; the dashboard feeds it every second.
import type { Endpoint, ErrorEntry, ExceptionEntry, Generator, Load, Meta, Monitor, MqttResult, Point, Result, Schedule } from "./types";
import { Chart, COLORS, PALETTE, join, spectrumTable, type SeriesDef } from "./charts";
import {
  busiest,
  byMethod,
  countedS,
  currentRates,
  isOpen,
  key,
  labels,
  latencyRow,
  mqttFromResult,
  mqttRow,
  pacedCount,
  perSecond,
  STOP_REASONS,
  sum,
  type Command,
  type Kind,
  type Labels,
  type MqttCounts,
} from "./model";
import {
  errorsTable,
  exceptionsTable,
  kvTable,
  percentileKeysOf,
  percentilesTable,
  SortTable,
  statsTable,
  statusTable,
  type StatRow,
} from "./tables";
import { thresholdRows, thresholdsBadge, thresholdsTable, tally } from "./thresholds";
import { limitBadge, limitOf, limitSection } from "./limit";
import { monitorOf, Resources } from "./monitor";
import { generatorBadge, generatorOf, generatorTable, lateWarned, setBadge, setWarnings, warningBanner } from "./generator";
import { fill, fmtBytes, fmtDuration, fmtFixed, fmtInt, fmtMs, fmtPct, fmtRate, fmtUnix, h, num, pct, setText } from "./util";
import { barsOf, Distribution } from "./distribution";
import { statusKeys, statusRow, statusSeries } from "./status";
import { ALL, endpointLabel, Picker } from "./picker";
import { fillBreakdown } from "./breakdown";
import { fillStreams, hasCount, streamOf } from "./streams";
import type { StreamCount } from "./streams";

/**
 * A report shorter than this has at most one second whose rate the time charts draw (a last second
 * covering less than half a second is left out: model.perSecond): no line to draw, so its charts are the
 * distribution's, and a note says why.
 */
export const SHORT_RUN_S = 1.5;

/** What one update brings: totals so far and the seconds not drawn yet. */
export interface Snapshot {
  aggregate: Endpoint | null;
  endpoints: Endpoint[];
  errors: ErrorEntry[];
  exceptions: ExceptionEntry[] | null;
  schedule: Schedule | null;
  mqtt: MqttCounts | null;
  /** seconds measured so far (report: duration_s) */
  durationS: number;
  /** the seconds the totals cover, over which their rates are taken: durationS less what came before a reset */
  countedS: number;
  /** the seconds to append to the charts */
  points: Point[];
  usersNow: number | null;
  targetUsers: number | null;
  /** the target's resources so far (null: none yet, or not monitored) */
  monitor: Monitor | null;
  /** the generator watching itself (null: not in the data) */
  generator: Generator | null;
}

export function snapshotFromResult(r: Result): Snapshot {
  return {
    aggregate: r.aggregate || null,
    endpoints: r.endpoints || [],
    errors: r.errors || [],
    exceptions: r.exceptions || null,
    schedule: r.schedule || null,
    mqtt: mqttFromResult(r),
    durationS: num(r.duration_s),
    countedS: countedS(num(r.duration_s), r.reset_s),
    points: r.timeseries || [],
    usersNow: null,
    targetUsers: null,
    monitor: monitorOf(r.monitor),
    generator: generatorOf(r.generator),
  };
}

export interface ViewOpts {
  meta: Meta;
  command: Command;
  kind: Kind;
  /** live: rates are the last second's; report: the run's averages */
  live: boolean;
  result?: Result;
}

interface ChartSpec {
  id: string;
  when: (s: Snapshot) => boolean;
  make: (slot: HTMLElement) => Chart;
  row?: (p: Point, s: Snapshot) => (number | null)[];
  /** charts not drawn from the seconds (the spectrum) */
  set?: (c: Chart, s: Snapshot) => void;
  /** the chart's series; when it changes (a new endpoint), the chart is made anew */
  sig?: (s: Snapshot) => string;
}

interface Card {
  value: HTMLElement;
  sub: HTMLElement | null;
}

const msFmt = (v: number) => fmtMs(v);
const rateFmt = (v: number) => fmtRate(v);
const intFmt = (v: number) => fmtInt(v);

export class RunView {
  readonly el: HTMLElement;
  readonly nav: HTMLElement;
  private L: Labels;
  private points: Point[] = [];
  private last: Snapshot | null = null;
  private cards = new Map<string, Card>();
  private facts = new Map<string, HTMLElement>();
  private charts = new Map<string, Chart>();
  private slots = new Map<string, HTMLElement>();
  private specs: ChartSpec[];
  private sigs = new Map<string, string>();
  private sections = new Map<string, { sec: HTMLElement; body: HTMLElement; link: HTMLElement }>();
  private stats: SortTable<StatRow>;
  private pctTable: SortTable<Endpoint> | null = null;
  private pctKeys = "";
  private factsBox: HTMLElement;
  private cardsBox: HTMLElement;
  /** for the page header: the breaking point, the thresholds' tally */
  readonly badges: HTMLElement[] = [];
  private drawLimit: (() => void) | null = null;
  private res: Resources;
  private banner: HTMLElement;
  private genBadge: HTMLElement;
  private genKey = "";
  private picker: Picker;
  private shortNote: HTMLElement;
  private bdKey = "";
  private stKey = "";

  constructor(private o: ViewOpts) {
    this.L = labels(o.command);
    this.nav = h("nav", { class: "tabs", "aria-label": "sections" });
    this.el = h("div", { class: "run" });
    this.factsBox = h("dl", { class: "facts", testid: "facts" });
    this.cardsBox = h("div", { class: "cards" });
    this.banner = warningBanner();
    this.el.appendChild(this.banner);
    this.el.appendChild(h("section", { class: "summary", id: "summary" }, this.factsBox, this.cardsBox));
    this.buildFacts();
    this.buildCards();

    this.genBadge = generatorBadge();
    this.badges.push(this.genBadge);

    const lim = limitOf(o.result);
    if (lim) {
      const ls = limitSection(lim, o.result!);
      this.section("limit", "Breaking point", ls.el, "--find-limit");
      this.drawLimit = ls.draw;
      this.badges.push(limitBadge(lim));
    }

    const thr = thresholdRows(o.meta, o.result, o.live);
    if (thr.length) {
      const t = tally(thr);
      const note = t.pending ? (o.live ? "verdicts when the run ends" : "") : t.failed ? `${t.failed} failed` : "all passed";
      const stopped =
        o.result && o.result.stop_reason === "threshold"
          ? h("p", { class: "note stopped", testid: "threshold-stop" }, "A failing threshold stopped the run (--threshold-abort).")
          : null;
      this.section("thresholds", "Thresholds", h("div", null, stopped, h("div", { class: "scroll" }, thresholdsTable(thr))), note);
      this.badges.push(thresholdsBadge(thr));
    }

    const reqLabel = o.command === "mqtt" ? "operations" : "requests";
    this.stats = statsTable(o.live, reqLabel);
    this.section("stats", "Statistics", h("div", { class: "scroll" }, this.stats.el));
    const grid = h("div", { class: "charts", testid: "charts" });
    this.picker = new Picker(() => this.repick());
    this.shortNote = h("p", { class: "note short-run", testid: "short-run", hidden: true });
    this.section("charts", "Charts", h("div", null, this.picker.el, this.shortNote, grid));
    this.specs = this.chartSpecs();
    for (const s of this.specs) {
      const slot = h("div", { class: "slot" });
      this.slots.set(s.id, slot);
      grid.appendChild(slot);
    }
    // the target's resources: shown once there are samples (live: waiting while meta.monitor says it is asked)
    const waiting = o.live && Array.isArray(o.meta.monitor);
    this.res = new Resources(() => this.extent(), waiting);
    this.section("resources", "Resources", this.res.el, "--monitor-*");
    this.show("resources", waiting || !!(o.result && monitorOf(o.result.monitor)));
    this.section("timings", "Where the time goes", h("div"), "HTTP/1.1: connect, TLS, waiting, receiving");
    this.show("timings", false);
    this.section("streams", "Event streams", h("div"), "text/event-stream: time to first event, gaps, ends");
    this.show("streams", false);
    this.section("percentiles", "Response time percentiles", h("div", { class: "scroll" }), "exact HDR values, ms");
    this.section("status", "Status codes", h("div", { class: "scroll" }));
    this.section("failures", "Failures", h("div", { class: "scroll" }));
    if (o.kind === "script" || o.command === "run") this.section("exceptions", "Exceptions", h("div", { class: "scroll" }));
    this.section("schedule", "Schedule", h("div", { class: "scroll" }), "open model");
    if (o.command === "mqtt") this.section("mqtt", "MQTT delivery", h("div", { class: "scroll" }));
    this.section("details", "Run details", h("div", { class: "scroll" }));
    this.show("details", !o.live && !!o.result);
    this.show("status", false);
    this.show("schedule", false);
  }

  // ---------------------------------------------------------------- layout

  private section(id: string, title: string, body: HTMLElement, note?: string): void {
    const sec = h(
      "section",
      { id: "sec-" + id, class: "sec", testid: "section-" + id },
      h("h2", null, title, note ? h("span", { class: "note" }, " · " + note) : null),
      body,
    );
    const link = h("a", { href: "#sec-" + id }, title.replace("Response time percentiles", "Percentiles"));
    this.nav.appendChild(link);
    this.el.appendChild(sec);
    this.sections.set(id, { sec, body, link });
  }

  /** Appends a section owned by the caller (the dashboard's downloads). */
  addSection(id: string, title: string, body: HTMLElement): void {
    this.section(id, title, body);
  }

  private show(id: string, on: boolean): void {
    const s = this.sections.get(id);
    if (!s) return;
    s.sec.hidden = !on;
    s.link.hidden = !on;
  }

  private body(id: string): HTMLElement | null {
    const s = this.sections.get(id);
    return s ? s.body : null;
  }

  // ---------------------------------------------------------------- facts

  private buildFacts(): void {
    const { meta, result, live, command } = this.o;
    const add = (k: string, label: string, value: string, cls?: string) => {
      const dd = h("dd", { testid: "fact-" + k, class: cls || null }, value);
      this.facts.set(k, dd);
      this.factsBox.appendChild(h("div", { class: cls === "mono" ? "wide" : k === "load" ? "span2" : null }, h("dt", null, label), dd));
    };
    const target = meta.target || (result && result.url) || "";
    if (target) add("target", "Target", target, "mono");
    if (meta.command_line) add("command", "Command", meta.command_line, "mono");
    if (result) {
      add("load", "Load", this.loadText(result.load || {}, result.schedule || null, result.mqtt || null, isOpen(result, result.schedule)));
      add("start", "Started", fmtUnix(result.start_unix));
      add("duration", "Duration", fmtDuration(result.duration_s));
      if (!live) add("stop", "Stopped", STOP_REASONS[result.stop_reason || ""] || result.stop_reason || "–");
    } else {
      add("load", "Load", "");
      this.updateLiveLoad(null);
      add("users", this.L.Users, "–");
      add("elapsed", "Elapsed", "–");
    }
    const v = meta.squall_version || (result && result.squall_version);
    if (v) add("version", "squall", v);
    void command;
  }

  /**
   * The live load fact from `meta.load` (and the live schedule); hidden while nothing is known. The user
   * count the page's controls set (the live `target_users`) replaces the configured one; the spawn rate
   * they set is not in the live data, so it is left out once the count differs.
   */
  private updateLiveLoad(sched: Schedule | null, target: number | null = null): void {
    const dd = this.facts.get("load");
    if (!dd) return;
    let l: Load = this.o.meta.load || {};
    if (target !== null && l.model === "users" && target !== l.users) l = { ...l, users: target, spawn_rate: null };
    const known = Object.keys(l).length > 0 || !!sched;
    const text = known ? this.loadText(l, sched, null, !!sched || l.model === "open") : "";
    setText(dd, text);
    if (dd.parentElement) dd.parentElement.hidden = !text;
  }

  private loadText(l: Load, sched: Schedule | null, m: MqttResult | null, open: boolean): string {
    const parts: string[] = [];
    const live = this.o.live;
    const plural = (n: number, word: string) => `${fmtInt(n)} ${n === 1 ? word.replace(/s$/, "") : word}`;
    const rate = sched ? num(sched.rate) : num(l.rate);
    if (this.o.command === "mqtt") {
      if (open) parts.push(rate ? `open model, ${fmtRate(rate)} msg/s` : "open model");
      else if (!live || l.model) parts.push("as fast as acknowledged");
      if (m && m.rate_per_client) parts.push(`${fmtRate(m.rate_per_client)}/s per client`);
      const clients = num(m && m.clients) || num(l.connections);
      if (clients) parts.push(plural(clients, "clients"));
      if (m && m.qos !== undefined) parts.push("QoS " + m.qos);
      if (m && m.mqtt_version) parts.push("MQTT " + m.mqtt_version);
    } else if (open) {
      parts.push(
        "open model" + (rate ? `, ${fmtRate(rate)} ${this.L.paced}/s` : "") + (sched && sched.arrival ? ` (${sched.arrival})` : ""),
      );
      const n = num(l.users) || num(l.connections);
      if (n) parts.push("up to " + plural(n, this.L.users));
    } else if (l.model === "users" || this.o.command === "run") {
      const n = num(l.users) || num(l.connections);
      parts.push(plural(n, "users"));
    } else {
      parts.push("closed model, " + plural(num(l.connections), "connections"));
    }
    if (l.spawn_rate && this.o.command === "run") parts.push(`spawn rate ${+num(l.spawn_rate).toFixed(2)}/s`);
    if (l.requests) parts.push(`${fmtInt(l.requests)} requests`);
    if (live && l.duration_s) parts.push(`run time ${fmtDuration(l.duration_s)}`);
    if (l.ramp_s) parts.push(`ramp ${fmtDuration(l.ramp_s)}`);
    if (l.threads) parts.push(`${l.threads} thread${l.threads === 1 ? "" : "s"}`);
    if (l.http2) parts.push("HTTP/2");
    if (l.keepalive === false) parts.push("no keep-alive");
    return parts.join(" · ");
  }

  // ---------------------------------------------------------------- cards

  private card(id: string, label: string, sub = true): void {
    const value = h("div", { class: "v", testid: id }, "–");
    const s = sub ? h("div", { class: "s" }) : null;
    this.cardsBox.appendChild(h("div", { class: "card", "data-card": id }, h("div", { class: "l" }, label), value, s));
    this.cards.set(id, { value, sub: s });
  }

  private buildCards(): void {
    const live = this.o.live;
    if (this.o.command === "mqtt") {
      this.card("mqtt-published", "Published");
      this.card("mqtt-delivered", "Delivered");
      this.card("mqtt-lost", "Lost");
      this.card("rps", live ? "Current msg/s" : "Messages/s");
      this.card("publish-p95-ms", "PUBLISH p95 (ms)");
      this.card("deliver-p95-ms", "DELIVER p95 (ms)");
      this.card("total-failures", "Failures");
    } else {
      this.card("total-requests", "Requests");
      this.card("total-failures", "Failures");
      this.card("rps", live ? "Current RPS" : "Requests/s");
      this.card("p50-ms", "Median (ms)");
      this.card("p95-ms", "95%ile (ms)");
      this.card("p99-ms", "99%ile (ms)");
      this.card("max-ms", "Max (ms)");
    }
    if (live) this.card("users-now", this.L.Users);
  }

  private setCard(id: string, value: string, raw: number | null, sub?: (string | Node)[]): void {
    const c = this.cards.get(id);
    if (!c) return;
    setText(c.value, value);
    if (raw === null) c.value.removeAttribute("data-value");
    else c.value.setAttribute("data-value", String(raw));
    if (c.sub && sub) fill(c.sub, sub);
  }

  private subVal(testid: string, text: string, raw: number | null): HTMLElement {
    return h("span", { testid, "data-value": raw === null ? null : String(raw) }, text);
  }

  private updateCards(s: Snapshot): void {
    const a = s.aggregate;
    const reqs = a ? num(a.requests) : 0;
    const fails = a ? num(a.failures) : 0;
    const failPct = reqs ? (100 * fails) / reqs : 0;
    const lastP = this.points.length ? this.points[this.points.length - 1] : null;
    const msv = (us: number | null) => (us === null ? null : us / 1000);
    // MQTT: CONNECT, PUBLISH and DELIVER are different operations, so their failures are given each
    // (a share of their sum would count nothing).
    const opFails = (method: string, id: string, label: string) => {
      const f = sum(byMethod(s.endpoints, method), (e) => num(e.failures));
      return [label + " ", this.subVal("failures-" + id, fmtInt(f), f)];
    };
    this.setCard(
      "total-failures",
      fmtInt(fails),
      fails,
      this.o.command === "mqtt"
        ? [...opFails("CONNECT", "connect", "connect"), " · ", ...opFails("PUBLISH", "publish", "publish"), " · ", ...opFails("DELIVER", "deliver", "deliver")]
        : [this.subVal("fail-pct", fmtPct(failPct), +failPct.toFixed(4)), " of requests"],
    );
    if (this.o.command === "mqtt") {
      const m = s.mqtt;
      const pubEps = byMethod(s.endpoints, "PUBLISH");
      const delEps = byMethod(s.endpoints, "DELIVER");
      const published = m && m.published !== null ? m.published : sum(pubEps, (e) => num(e.requests) - num(e.failures));
      const delivered = m && m.delivered !== null ? m.delivered : delEps.length ? sum(delEps, (e) => num(e.requests) - num(e.failures)) : null;
      const lost = m && m.lost !== null ? m.lost : delEps.length ? sum(delEps, (e) => num(e.failures)) : null;
      const sent = m && m.sent !== null ? m.sent : null;
      this.setCard("mqtt-published", fmtInt(published), published, [sent !== null ? "of " + fmtInt(sent) + " sent" : ""]);
      this.setCard("mqtt-delivered", delivered === null ? "–" : fmtInt(delivered), delivered, [
        delivered !== null && published ? fmtPct((100 * delivered) / published) + " of published" : "no --verify",
      ]);
      const dup = m ? m.duplicated : null;
      const ooo = m ? m.out_of_order : null;
      this.setCard("mqtt-lost", lost === null ? "–" : fmtInt(lost), lost, [
        dup !== null || ooo !== null ? `${fmtInt(dup ?? 0)} duplicated · ${fmtInt(ooo ?? 0)} out of order` : "",
      ]);
      const rate = this.o.live ? (lastP ? pacedCount(lastP, "mqtt") : null) : s.countedS ? published / s.countedS : null;
      this.setCard("rps", fmtRate(rate), rate === null ? null : +rate.toFixed(3), [s.schedule ? "intended " + fmtRate(s.schedule.rate) : ""]);
      for (const [method, id] of [
        ["PUBLISH", "publish"],
        ["DELIVER", "deliver"],
      ]) {
        const e = busiest(byMethod(s.endpoints, method));
        const p = e && e.requests ? e.percentiles_us : undefined;
        const p95 = pct(p, "95");
        this.setCard(id + "-p95-ms", fmtMs(p95), msv(p95), [
          "p50 ",
          this.subVal(id + "-p50-ms", fmtMs(pct(p, "50")), msv(pct(p, "50"))),
          " · p99 ",
          this.subVal(id + "-p99-ms", fmtMs(pct(p, "99")), msv(pct(p, "99"))),
        ]);
      }
    } else {
      const p = a && a.requests ? a.percentiles_us : undefined;
      // "received" as the console and numbers.md say it: the responses' bytes as they came (head,
      // framing, body); bodies alone for a result without them.
      const received = a ? (a.wire_bytes !== undefined ? num(a.wire_bytes) : num(a.body_bytes)) : 0;
      this.setCard("total-requests", fmtInt(reqs), reqs, [a ? fmtBytes(received) + " received" : ""]);
      const avg = s.countedS ? reqs / s.countedS : null;
      const cur = currentRates(this.points);
      const rate = this.o.live ? (cur ? cur.rps : null) : avg;
      // After a reset the totals and their average count from it: said, so that requests / duration
      // is not taken for the average.
      const reset = s.countedS < s.durationS ? s.durationS - s.countedS : null;
      const since = reset === null ? "" : ` since the reset at ${fmtDuration(reset)}`;
      this.setCard("rps", fmtRate(rate), rate === null ? null : +rate.toFixed(3), [
        this.o.live
          ? avg !== null
            ? "average " + fmtRate(avg) + since
            : ""
          : s.schedule
            ? "intended " + fmtRate(s.schedule.rate)
            : "average" + since,
      ]);
      this.setCard("p50-ms", fmtMs(pct(p, "50")), msv(pct(p, "50")), [
        "average ",
        this.subVal("avg-ms", a && a.requests ? fmtMs(a.mean_us) : "–", a && a.requests ? +(a.mean_us / 1000).toFixed(6) : null),
      ]);
      this.setCard("p95-ms", fmtMs(pct(p, "95")), msv(pct(p, "95")), ["p90 " + fmtMs(pct(p, "90"))]);
      this.setCard("p99-ms", fmtMs(pct(p, "99")), msv(pct(p, "99")), ["p99.9 " + fmtMs(pct(p, "99.9"))]);
      const max = a && a.requests ? num(a.max_us) : null;
      this.setCard("max-ms", fmtMs(max), msv(max), ["min " + (a && a.requests ? fmtMs(a.min_us) : "–")]);
    }
    const sc = s.schedule;
    if (sc) {
      if (!this.cards.has("sched-late")) this.card("sched-late", `Late (> ${fmtInt(num(sc.late_after_ms) || 10)} ms)`);
      const late = num(sc.late);
      const dropped = num(sc.dropped);
      this.setCard("sched-late", fmtInt(late), late, [
        num(sc.intended) ? fmtPct((100 * late) / num(sc.intended)) + " · " : "",
        this.subVal("sched-dropped", fmtInt(dropped), dropped),
        " dropped",
      ]);
      const el = this.cardsBox.querySelector('[data-card="sched-late"]');
      // Red when the generator's rule warned of the late sends (a start-up burst does not); a result
      // without the rule's verdict: when any send was late.
      const warned = lateWarned(s.generator);
      if (el) el.classList.toggle("bad", dropped > 0 || (warned === null ? late > 0 : warned));
    }
    const fc = this.cardsBox.querySelector('[data-card="total-failures"]');
    if (fc) fc.classList.toggle("bad", fails > 0);
    if (this.o.live) {
      const u = s.usersNow;
      this.setCard("users-now", fmtInt(u), u, [s.targetUsers !== null && s.targetUsers !== undefined ? "target " + fmtInt(s.targetUsers) : ""]);
      const fu = this.facts.get("users");
      if (fu) setText(fu, fmtInt(u) + (s.targetUsers !== null && s.targetUsers !== undefined ? " → " + fmtInt(s.targetUsers) : ""));
      const fe = this.facts.get("elapsed");
      if (fe) setText(fe, fmtDuration(s.durationS));
      this.updateLiveLoad(s.schedule, typeof s.targetUsers === "number" && s.targetUsers > 0 ? s.targetUsers : null);
    }
  }

  // ---------------------------------------------------------------- charts

  /** A second's count as a rate (a result's last, partial second is scaled or left out). */
  private rate(count: number, p: Point): number | null {
    return perSecond(count, p.t, this.o.live || !this.o.result ? null : num(this.o.result.duration_s));
  }

  private chartSpecs(): ChartSpec[] {
    const cmd = this.o.command;
    const L = this.L;
    const always = () => true;
    const lat = (testid: string, title: string): ((slot: HTMLElement) => Chart) => (slot) =>
      new Chart(slot, {
        testid,
        title,
        unit: "ms",
        yFmt: msFmt,
        logToggle: true,
        emptyMax: 1000,
        series: [
          { label: "p50", color: COLORS.p50 },
          { label: "p95", color: COLORS.p95 },
          { label: "p99", color: COLORS.p99 },
          { label: "max", color: COLORS.max, width: 1, dash: [4, 3] },
        ],
      });
    // while live, the intended rate is the configured one until the live schedule says it
    const ml = this.o.meta.load || null;
    const liveOpen = this.o.live && !!ml && ml.model === "open";
    const liveRate = this.o.live && ml && typeof ml.rate === "number" && ml.rate > 0 ? ml.rate : null;
    const specs: ChartSpec[] = [];
    if (cmd === "mqtt") {
      specs.push({
        id: "mqtt",
        when: always,
        make: (slot) =>
          new Chart(slot, {
            testid: "chart-mqtt",
            title: "Messages per second",
            yFmt: rateFmt,
            series: [
              { label: "published", color: COLORS.rps },
              { label: "delivered", color: COLORS.delivered, dash: [6, 3] },
              { label: "lost", color: COLORS.lost },
              { label: "unsent/failed", color: COLORS.unsent },
            ],
          }),
        row: (p) => mqttRow(p).map((c) => this.rate(c, p)),
      });
      // PUBLISH (solid) and DELIVER (dashed, when --verify subscribes) on one chart: the delivery's extra
      // time over the broker's acknowledgement shows directly.
      const pick = (p: Point, m: string) => latencyRow(busiest(byMethod(p.endpoints, m))).slice(0, 3);
      const hasDeliver = (s: Snapshot | null) => !!s && byMethod(s.endpoints, "DELIVER").length > 0;
      specs.push({
        id: "mqtt-latency",
        when: (s) => byMethod(s.endpoints, "PUBLISH").length > 0 || hasDeliver(s),
        sig: (s) => String(hasDeliver(s)),
        make: (slot) => {
          const series: SeriesDef[] = [
            { label: "PUBLISH p50", color: COLORS.p50 },
            { label: "PUBLISH p95", color: COLORS.p95 },
            { label: "PUBLISH p99", color: COLORS.p99 },
          ];
          if (hasDeliver(this.last))
            series.push(
              { label: "DELIVER p50", color: COLORS.p50, dash: [5, 3] },
              { label: "DELIVER p95", color: COLORS.p95, dash: [5, 3] },
              { label: "DELIVER p99", color: COLORS.p99, dash: [5, 3] },
            );
          return new Chart(slot, {
            testid: "chart-mqtt-latency",
            title: hasDeliver(this.last) ? "PUBLISH (ack) and DELIVER (to the subscriber) latency" : "PUBLISH latency (broker ack)",
            unit: "ms",
            yFmt: msFmt,
            logToggle: true,
            emptyMax: 1000,
            series,
          });
        },
        row: (p, s) => (hasDeliver(s) ? [...pick(p, "PUBLISH"), ...pick(p, "DELIVER")] : pick(p, "PUBLISH")),
      });
    } else {
      const picked = () => (this.picker.value === ALL ? "" : ": " + this.pickedLabel());
      specs.push({
        id: "rps",
        when: always,
        sig: () => this.picker.value,
        make: (slot) =>
          new Chart(slot, {
            testid: "chart-rps",
            title: this.picker.value === ALL ? "Total requests per second" : "Requests per second" + picked(),
            yFmt: rateFmt,
            series: [
              { label: "RPS", color: COLORS.rps },
              { label: "Failures/s", color: COLORS.fail },
            ],
          }),
        row: (p) => {
          const e = this.entryOf(p);
          return [this.rate(e ? num(e.requests) : 0, p), this.rate(e ? num(e.failures) : 0, p)];
        },
      });
      // what event streams count a second: their events, and a model's output tokens (streams.ts)
      const counts: [StreamCount, string, string, string][] = [
        ["events", "Events per second", "events/s", COLORS.delivered],
        ["tokens", "Output tokens per second", "tokens/s", COLORS.rps],
      ];
      for (const [key, title, label, color] of counts) {
        specs.push({
          id: key,
          when: (s) => hasCount(key, this.points, s.aggregate),
          sig: () => this.picker.value,
          make: (slot) => new Chart(slot, { testid: "chart-" + key, title: title + picked(), yFmt: rateFmt, series: [{ label, color }] }),
          row: (p) => {
            const e = this.entryOf(p);
            return [this.rate(e ? num(e[key]) : 0, p)];
          },
        });
      }
      specs.push({
        id: "latency",
        when: always,
        sig: () => this.picker.value,
        make: (slot) => lat("chart-latency", "Response times" + picked())(slot),
        row: (p) => latencyRow(this.entryOf(p)),
      });
      // responses per second by status: the picked endpoint's, or all of them
      const statusTotals = (s: Snapshot) => (this.picker.value === ALL ? s.endpoints : s.endpoints.filter((e) => this.picker.has(e)));
      specs.push({
        id: "status",
        when: (s) => statusKeys(statusTotals(s)).length > 0,
        sig: (s) => this.picker.value + "\u0000" + statusKeys(statusTotals(s)).join(),
        make: (slot) =>
          new Chart(slot, {
            testid: "chart-status",
            title: "Responses per second by status" + picked(),
            yFmt: rateFmt,
            series: statusSeries(statusKeys(this.last ? statusTotals(this.last) : [])),
          }),
        row: (p, s) => statusRow((p.endpoints || []).filter((e) => this.picker.has(e)), statusKeys(statusTotals(s))).map((n) => this.rate(n, p)),
        set: (c, s) => {
          // the seconds' counts per series, added up (the drawn rates scale a part second): `data-counts`
          const keys = statusKeys(statusTotals(s));
          const sums = keys.map(() => 0);
          for (const p of this.points) statusRow((p.endpoints || []).filter((e) => this.picker.has(e)), keys).forEach((n, i) => (sums[i] += n));
          c.box.setAttribute("data-counts", JSON.stringify(Object.fromEntries(keys.map((k, i) => [k, sums[i]]))));
        },
      });
    }
    // the connections open, beside the users, when the result counted them (a dashed line)
    const counted = () => this.points.some((p) => typeof p.connections === "number");
    specs.push({
      id: "users",
      when: always,
      sig: () => String(counted()),
      make: (slot) =>
        new Chart(slot, {
          testid: "chart-users",
          title: "Number of " + L.users + (counted() && cmd !== "bench" ? " and open connections" : ""),
          yFmt: intFmt,
          intY: true,
          emptyMax: 10,
          series: [
            { label: L.Users, color: COLORS.users },
            ...(counted() ? [{ label: cmd === "bench" ? "open" : "open connections", color: COLORS.p95, dash: [5, 3] }] : []),
          ],
        }),
      row: (p) => [typeof p.users === "number" ? p.users : null, ...(counted() ? [typeof p.connections === "number" ? p.connections : null] : [])],
      set: (c) => {
        // bench's open model: its seconds count the connections started; -c only caps them
        const l = this.o.result ? this.o.result.load : this.o.meta.load;
        c.note(cmd === "bench" && l && l.model === "open" && l.connections ? `opened as needed, cap ${fmtInt(l.connections)} (-c)` : "");
      },
    });
    specs.push({
      id: "schedule",
      when: (s) => !!s.schedule || liveOpen || (!!this.o.result && isOpen(this.o.result, null)),
      make: (slot) =>
        new Chart(slot, {
          testid: "chart-schedule",
          title: cmd === "mqtt" ? "Intended vs published messages/s" : cmd === "run" ? "Intended iterations/s vs requests/s" : "Intended vs achieved requests/s",
          yFmt: rateFmt,
          series: [
            { label: cmd === "run" ? "intended iterations/s" : "intended", color: COLORS.intended, dash: [6, 4] },
            { label: cmd === "mqtt" ? "published/s" : "achieved req/s", color: COLORS.rps },
          ],
        }),
      row: (p, s) => [s.schedule ? num(s.schedule.rate) : liveRate, this.rate(pacedCount(p, cmd), p)],
      set: (c, s) => {
        const sc = s.schedule;
        c.note(sc ? `${fmtInt(sc.late)} late · ${fmtInt(sc.dropped)} dropped` : "");
      },
    });
    specs.push({
      id: "spectrum",
      when: (s) => this.spectra(s).length > 0,
      sig: (s) => this.spectra(s).map((x) => x.label).join("\u0000"),
      make: (slot) => this.makeSpectrum(slot, this.last),
      set: (c, s) => this.setSpectrum(c, s),
    });
    if (cmd !== "mqtt") {
      const dists = new WeakMap<Chart, Distribution>();
      specs.push({
        id: "distribution",
        when: (s) => barsOf(this.pickedTotals(s)).length > 0,
        sig: () => this.picker.value,
        make: (slot) => {
          const d = new Distribution(slot, "chart-distribution", "Response time distribution" + (this.picker.value === ALL ? "" : ": " + this.pickedLabel()));
          dists.set(d.chart, d);
          return d.chart;
        },
        set: (c, s) => dists.get(c)!.set(barsOf(this.pickedTotals(s))),
      });
    }
    return specs;
  }

  /** The picked endpoint's entry in a second (all picked: the second itself; absent that second: null). */
  private entryOf(p: Point): Endpoint | Point | null {
    if (this.picker.value === ALL) return p;
    return (p.endpoints || []).find((e) => this.picker.has(e)) || null;
  }

  private pickedLabel(): string {
    const e = this.last ? this.last.endpoints.find((x) => this.picker.has(x)) : null;
    return e ? endpointLabel(e) : "";
  }

  /** The totals entry the distribution and the breakdown show: the aggregate, or the picked endpoint. */
  private pickedTotals(s: Snapshot): Endpoint | null {
    if (this.picker.value === ALL) return s.aggregate || (s.endpoints.length === 1 ? s.endpoints[0] : null);
    return s.endpoints.find((e) => this.picker.has(e)) || null;
  }

  /** Another endpoint picked: the charts that follow it are made anew. */
  private repick(): void {
    if (this.last) this.update({ ...this.last, points: [] });
  }

  /** A report too short for time charts (SHORT_RUN_S); never live. */
  private short(): boolean {
    return !this.o.live && !!this.o.result && num(this.o.result.duration_s) < SHORT_RUN_S;
  }

  private spectra(s: Snapshot): { label: string; spec: [number, number][] }[] {
    const has = (e: Endpoint | null) => !!e && Array.isArray(e.spectrum) && e.spectrum.length > 0;
    const out: { label: string; spec: [number, number][] }[] = [];
    if (this.o.command === "mqtt") {
      for (const e of s.endpoints) if (has(e)) out.push({ label: (e.method + " " + e.name).trim(), spec: e.spectrum! });
      return out.slice(0, PALETTE.length);
    }
    if (has(s.aggregate)) out.push({ label: "Aggregated", spec: s.aggregate!.spectrum! });
    if (s.endpoints.length > 1 || !out.length)
      for (const e of s.endpoints) if (has(e)) out.push({ label: (e.method + " " + e.name).trim(), spec: e.spectrum! });
    return out.slice(0, PALETTE.length);
  }

  private makeSpectrum(slot: HTMLElement, s: Snapshot | null): Chart {
    const list = s ? this.spectra(s) : [];
    const series: SeriesDef[] = list.map((x, i) => ({
      label: x.label,
      color: x.label === "Aggregated" ? "#8a8f98" : PALETTE[i % PALETTE.length],
      width: x.label === "Aggregated" ? 2.25 : 1.5,
    }));
    return new Chart(slot, {
      testid: "chart-spectrum",
      title: "Latency by percentile",
      unit: "ms",
      x: "pctl",
      yFmt: msFmt,
      logToggle: true,
      emptyMax: 1000,
      spanGaps: true,
      series,
    });
  }

  private setSpectrum(c: Chart, s: Snapshot): void {
    const list = this.spectra(s);
    c.set(join(list.map((x) => spectrumTable(x.spec))));
  }

  /** The seconds the time charts show: the load's and the monitor's, [first, last] (null: none yet). */
  private extent(): [number, number] | null {
    const p = this.points;
    const m = this.res.extent();
    if (!p.length) return m;
    const lo = p[0].t;
    const hi = p[p.length - 1].t;
    return m ? [Math.min(lo, m[0]), Math.max(hi, m[1])] : [lo, hi];
  }

  private updateCharts(s: Snapshot, fresh: Point[]): void {
    for (const spec of this.specs) {
      let c = this.charts.get(spec.id);
      const sig = spec.sig ? spec.sig(s) : "";
      if (c && sig !== this.sigs.get(spec.id)) {
        c.destroy(); // the endpoints changed: new series
        this.charts.delete(spec.id);
        c = undefined;
      }
      if (!c) {
        if (!spec.when(s) || (spec.row && this.short())) continue;
        c = spec.make(this.slots.get(spec.id)!);
        if ((c.o.x || "time") === "time") c.o.xExtent = () => this.extent();
        this.charts.set(spec.id, c);
        this.sigs.set(spec.id, sig);
        if (spec.row) for (const p of this.points) c.push(p.t, spec.row(p, s));
      } else if (spec.row) {
        for (const p of fresh) c.push(p.t, spec.row(p, s));
      }
      if (spec.set) spec.set(c, s);
      c.draw();
    }
  }

  // ---------------------------------------------------------------- tables

  private updateTables(s: Snapshot): void {
    const cur = this.o.live ? currentRates(this.points) : null;
    const d = s.countedS;
    const rates = (e: Endpoint, agg: boolean): { rps: number | null; fps: number | null } => {
      if (this.o.live) {
        if (!cur) return { rps: null, fps: null };
        const c = agg ? cur : cur.endpoints.get(key(e));
        return { rps: c ? c.rps : 0, fps: c ? c.fps : 0 };
      }
      return d ? { rps: num(e.requests) / d, fps: num(e.failures) / d } : { rps: null, fps: null };
    };
    const eps = s.endpoints.slice().sort((a, b) => (a.name || "").localeCompare(b.name || "") || (a.method || "").localeCompare(b.method || ""));
    // MQTT: no Aggregated row (CONNECT, PUBLISH and DELIVER added up count nothing).
    const agg = this.o.command === "mqtt" ? null : s.aggregate || null;
    this.stats.set(
      eps.map((e) => ({ e, ...rates(e, false) })),
      agg ? { e: agg, ...rates(agg, true) } : null,
    );

    // percentiles
    const keys = percentileKeysOf(agg ? [...eps, agg] : eps);
    if (keys.join() !== this.pctKeys || !this.pctTable) {
      this.pctKeys = keys.join();
      this.pctTable = percentilesTable(keys);
      fill(this.body("percentiles")!, this.pctTable.el);
    }
    if (this.pctTable) this.pctTable.set(eps, agg);
    if (!keys.length) fill(this.body("percentiles")!, h("p", { class: "empty" }, "Nothing measured yet"));

    const st = statusTable(eps, agg);
    this.show("status", !!st);
    if (st) fill(this.body("status")!, st);

    fill(this.body("failures")!, errorsTable(s.errors));
    const ex = this.body("exceptions");
    if (ex) fill(ex, exceptionsTable(s.exceptions || []));

    this.show("schedule", !!s.schedule);
    if (s.schedule) fill(this.body("schedule")!, this.scheduleTable(s.schedule));

    const mq = this.body("mqtt");
    if (mq) fill(mq, this.mqttTable(s));
    this.updateDetails(s.generator);
  }

  /** Run details (reports) and squall's own threads (reports and, once it comes, the dashboard). */
  private updateDetails(g: Generator | null): void {
    const det = this.body("details");
    if (!det) return;
    const key = JSON.stringify(g);
    if (key === this.genKey && det.firstChild) return;
    this.genKey = key;
    const r = this.o.result;
    fill(det, r ? this.detailsTable(r) : null, g ? generatorTable(g) : null);
    this.show("details", !!r || !!g);
  }

  private scheduleTable(sc: Schedule): HTMLElement {
    const P = this.L.paced;
    const late = num(sc.late);
    const intended = num(sc.intended);
    return kvTable("schedule-table", [
      ["Intended rate", fmtRate(sc.rate) + " " + P + "/s" + (sc.arrival ? ` (${sc.arrival} arrivals)` : ""), "schedule-rate"],
      ["Intended", fmtInt(intended), "schedule-intended"],
      ["Sent", fmtInt(sc.sent), "schedule-sent"],
      [`Late (more than ${fmtInt(num(sc.late_after_ms) || 10)} ms)`, fmtInt(late) + (intended ? ` (${fmtPct((100 * late) / intended)})` : ""), "schedule-late"],
      ["Dropped (never sent)", fmtInt(sc.dropped), "schedule-dropped"],
      ["Mean lag", fmtMs(sc.mean_lag_us) + " ms", "schedule-mean-lag"],
      ["Max lag", fmtMs(sc.max_lag_us) + " ms", "schedule-max-lag"],
    ]);
  }

  private mqttTable(s: Snapshot): HTMLElement {
    const m = s.mqtt;
    const r = this.o.result && this.o.result.mqtt;
    const v = (x: number | null | undefined) => (x === null || x === undefined ? "–" : fmtInt(x));
    const rows: [string, string, string?][] = [];
    if (m && m.connected !== null) rows.push(["Connected clients", v(m.connected), "mqtt-connected"]);
    rows.push(["Sent", v(m && m.sent), "mqtt-sent"]);
    rows.push(["Published (acknowledged)", v(m && m.published), "mqtt-published-n"]);
    if (m && m.failed !== null) rows.push(["Failed", v(m.failed), "mqtt-failed"]);
    if (m && m.unsent !== null) rows.push(["Unsent", v(m.unsent), "mqtt-unsent"]);
    rows.push(["Delivered", v(m && m.delivered), "mqtt-delivered-n"]);
    rows.push(["Lost", v(m && m.lost), "mqtt-lost-n"]);
    if (m && m.duplicated !== null) rows.push(["Duplicated", v(m.duplicated), "mqtt-duplicated"]);
    if (m && m.out_of_order !== null) rows.push(["Out of order", v(m.out_of_order), "mqtt-out-of-order"]);
    if (r) {
      if (r.broker) rows.push(["Broker", r.broker]);
      if (r.topic) rows.push(["Topic", r.topic + (r.filter ? "  (subscribed: " + r.filter + ")" : "")]);
      const conf = [
        r.mqtt_version ? "MQTT " + r.mqtt_version : "",
        r.qos !== undefined ? "QoS " + r.qos : "",
        r.inflight ? "in flight " + r.inflight : "",
        r.verify ? "verified delivery" : "",
      ].filter(Boolean);
      if (conf.length) rows.push(["Settings", conf.join(" · ")]);
    }
    return kvTable("mqtt-table", rows);
  }

  private detailsTable(r: Result): HTMLElement {
    const rows: [string, string, string?][] = [];
    const l = r.load || {};
    rows.push(["Load model", (l.model || "–") + (l.timeout_s ? ` · timeout ${fmtDuration(l.timeout_s)}` : "")]);
    const c = r.connect;
    if (c && c.requests) {
      rows.push([
        "Connect time (ms)",
        `${fmtInt(c.requests)} connects · min ${fmtMs(c.min_us)} · p50 ${fmtMs(pct(c.percentiles_us, "50"))} · p99 ${fmtMs(
          pct(c.percentiles_us, "99"),
        )} · max ${fmtMs(c.max_us)}`,
        "connect-time",
      ]);
      if (c.failures) rows.push(["Connect failures", fmtInt(c.failures)]);
    }
    const a = r.aggregate;
    const d = countedS(num(r.duration_s), r.reset_s);
    if (a && a.wire_bytes !== undefined)
      rows.push([
        "Transferred",
        `${fmtBytes(a.wire_bytes)} on the wire` + (d ? ` (${fmtBytes(num(a.wire_bytes) / d)}/s)` : "") + ` · ${fmtBytes(a.body_bytes)} bodies`,
      ]);
    if (a && a.requests && a.stdev_us !== undefined) rows.push(["Latency mean ± stdev", `${fmtMs(a.mean_us)} ± ${fmtMs(a.stdev_us)} ms`]);
    if (r.abandoned) rows.push(["In flight at the end", fmtInt(r.abandoned) + " (sent, not counted)", "abandoned"]);
    rows.push(["Stop reason", STOP_REASONS[r.stop_reason || ""] || r.stop_reason || "–"]);
    rows.push(["Duration", fmtFixed(d, 3) + " s"]);
    return kvTable("details-table", rows);
  }

  // ---------------------------------------------------------------- updates

  update(s: Snapshot): void {
    const fresh: Point[] = [];
    const lastT = this.points.length ? this.points[this.points.length - 1].t : -Infinity;
    for (const p of s.points) if (typeof p.t === "number" && p.t > lastT) fresh.push(p);
    this.points.push(...fresh);
    this.last = s;
    this.picker.update(this.o.command === "mqtt" ? [] : s.endpoints);
    this.updateShort(s);
    this.updateBreakdown(s);
    this.updateStreams(s);
    setWarnings(this.banner, s.generator);
    setBadge(this.genBadge, s.generator);
    const monitored = this.res.update(s.monitor);
    if (monitored) this.show("resources", true);
    this.updateCards(s);
    this.updateTables(s);
    this.updateCharts(s, fresh);
    this.res.draw();
    if (this.drawLimit) {
      this.drawLimit();
      this.drawLimit = null;
    }
  }

  /** The seconds drawn so far (the dashboard's header reads its current rate from them). */
  seconds(): Point[] {
    return this.points;
  }

  /** A short report says why it has no time charts (its numbers are the run's, its charts the distributions). */
  private updateShort(s: Snapshot): void {
    const short = this.short();
    this.shortNote.hidden = !short;
    if (!short) return;
    const d = num(s.durationS);
    const reqs = s.aggregate ? num(s.aggregate.requests) : 0;
    setText(
      this.shortNote,
      `This run lasted ${fmtFixed(d, 3)} s: shorter than the ${SHORT_RUN_S} s the per-second charts need to draw a line, so they are left out. ` +
        `Its ${fmtInt(reqs)} ${this.o.command === "mqtt" ? "operations" : "requests"} are shown by their distribution` +
        (d > 0 ? ` (${fmtRate(reqs / d)} a second over the run)` : "") +
        "; squall's own CPU is sampled once a second, so in a run this short it is not measured.",
    );
  }

  /** The breakdown of the picked endpoint (or all), redrawn only when it changes. */
  private updateBreakdown(s: Snapshot): void {
    const body = this.body("timings");
    if (!body) return;
    const e = this.pickedTotals(s);
    const label = this.picker.value === ALL ? "all requests" : this.pickedLabel();
    const k = label + "\u0000" + JSON.stringify(e ? e.timings || null : null) + String(e ? e.mean_us : "");
    if (k === this.bdKey) return;
    this.bdKey = k;
    const any = !!s.aggregate && !!s.aggregate.timings;
    const shown = fillBreakdown(body, e, label);
    this.show("timings", shown || any);
  }

  /** The event streams of the picked endpoint (or all), redrawn only when they change. */
  private updateStreams(s: Snapshot): void {
    const body = this.body("streams");
    if (!body) return;
    const e = this.pickedTotals(s);
    const label = this.picker.value === ALL ? "all requests" : this.pickedLabel();
    const k = label + "\u0000" + JSON.stringify(e ? e.stream || null : null);
    if (k === this.stKey) return;
    this.stKey = k;
    const shown = fillStreams(body, e, label);
    this.show("streams", shown || !!streamOf(s.aggregate));
  }

  /** A new run started (the live cursor went back): the charts start over. */
  resetSeries(): void {
    this.points = [];
    this.res.reset();
    this.charts.forEach((c) => c.destroy());
    this.charts.clear();
  }

  destroy(): void {
    this.charts.forEach((c) => c.destroy());
    this.charts.clear();
    this.res.destroy();
    this.el.remove();
    this.nav.remove();
  }
}
