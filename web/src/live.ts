// Live mode: poll /api/live once a second, append the new seconds, run the controls; the final result
// (once `finished`) replaces the live view with the report.
//
// `squall -f` follows Locust's web UI: a header that stays in view with the host, status, users, current
// RPS and failure %; Start (with a host when a User class has none), Edit (filled with the running
// test's users and spawn rate), Stop, Reset, and after a test New, which starts another in the same
// process (the live `test` counter goes up and the page starts over with it; `meta.controls.new` says
// the page keeps polling after a result for that); the Current ratio and Logs sections; the failures and
// exceptions CSVs among the downloads. A page a locustfile's route rendered (Locust's `index.html`) has
// the tabs and CSV files the route adds (`extension`), their rows read from Locust's /stats/requests.
import type { Extension, Live, Meta, Result } from "./types";
import { commandOf, countedS, currentRates, kindOf, byMethod, sum, STOP_REASONS } from "./model";
import { RunView, snapshotFromResult, type Snapshot } from "./view";
import { badge, markReady, shell, type Shell } from "./shell";
import { fmtPct, fmtRate, h, num, setText } from "./util";
import { monitorOf } from "./monitor";
import { generatorOf } from "./generator";
import { ExtensionTab, LogsSection, RatioSection, extendedRows } from "./webui";

const POLL_MS = 1000;

function snapshotFromLive(l: Live): Snapshot {
  const t = l.totals || {};
  const eps = t.endpoints || [];
  const del = byMethod(eps, "DELIVER");
  const m = l.mqtt;
  const n = (v: unknown) => (typeof v === "number" && isFinite(v) ? v : null);
  return {
    aggregate: t.aggregate || null,
    endpoints: eps,
    errors: t.errors || [],
    exceptions: t.exceptions || null,
    schedule: l.schedule || null,
    mqtt: m
      ? {
          connected: n(m.connected),
          sent: n(m.sent),
          published: n(m.published),
          failed: n(m.failed),
          unsent: null,
          delivered: n(m.delivered),
          lost: del.length ? sum(del, (e) => num(e.failures)) : null,
          duplicated: null,
          out_of_order: null,
        }
      : null,
    durationS: num(l.elapsed_s),
    countedS: countedS(num(l.elapsed_s), l.totals && l.totals.reset_s),
    points: l.timeseries || [],
    usersNow: n(l.users),
    targetUsers: n(l.target_users),
    monitor: monitorOf(l.monitor),
    generator: generatorOf(l.generator),
  };
}

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const ctl = typeof AbortController !== "undefined" ? new AbortController() : null;
  const timer = ctl ? setTimeout(() => ctl.abort(), 8000) : 0;
  try {
    const res = await fetch(url, { cache: "no-store", ...init, signal: ctl ? ctl.signal : undefined });
    const ct = res.headers.get("content-type") || "";
    if (!res.ok && ct.indexOf("json") < 0) throw new Error("HTTP " + res.status);
    return (await res.json()) as T;
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function numberField(testid: string, label: string, value: number | undefined, step: string, min: string): [HTMLElement, HTMLInputElement] {
  const input = h("input", { type: "number", testid, name: testid, min, step, required: true, value: value === undefined ? null : String(value) });
  return [h("label", null, h("span", null, label), input), input];
}

/** One of the header's figures (Locust's Host, Status, Users, RPS, Failures): a label over a value. */
function headerStat(label: string, value: HTMLElement): HTMLElement {
  return h("div", { class: "hstat" }, h("span", { class: "l" }, label), value);
}

export function startLive(root: HTMLElement, meta: Meta, token: string, extension: Extension | null = null): void {
  const command = commandOf(meta, undefined);
  const kind = kindOf(command);
  const controls = meta.controls || {};
  const form = meta.form || {};
  const isRun = command === "run";
  const S: Shell = shell(root, meta.title || "squall " + (command === "run" ? "" : command + " ") + "dashboard");
  const state = badge("state", "connecting", "state");
  const conn = badge("connection", "connected", "conn");
  conn.hidden = true;
  const msg = h("div", { class: "ctl-msg", testid: "control-message", role: "status" });

  // the header stays in view while the page scrolls (Locust's bar): with the section tabs under it
  const stick = h("div", { class: "stick" });
  root.insertBefore(stick, S.header);
  stick.append(S.header, S.navSlot);
  const hv = (testid: string, cls = "") => h("span", { class: "v " + cls, testid }, "–");
  const hHost = hv("header-host", "mono");
  const hUsers = hv("header-users");
  const hRps = hv("header-rps");
  const hFail = hv("header-fail-pct");
  const setHv = (el: HTMLElement, text: string, raw: number | null) => {
    setText(el, text);
    if (raw === null) el.removeAttribute("data-value");
    else el.setAttribute("data-value", String(raw));
  };
  if (isRun) {
    const stats = h(
      "div",
      { class: "hstats", testid: "header-stats" },
      headerStat("Host", hHost),
      headerStat("Status", state),
      headerStat("Users", hUsers),
      headerStat("RPS", hRps),
      headerStat("Failures", hFail),
    );
    S.header.insertBefore(stats, S.badges);
    S.badges.append(conn);
  } else S.badges.append(state, conn);

  const post = async (path: string, body: object): Promise<void> => {
    setText(msg, "");
    try {
      const r = await getJson<{ ok: boolean; error?: string }>(path, {
        method: "POST",
        // what the server requires of its own page (another origin can send neither): README, Safety
        headers: { "Content-Type": "application/json", "X-Squall-Token": token },
        body: JSON.stringify(body),
      });
      if (!r || !r.ok) setText(msg, (r && r.error) || "the server refused");
      else {
        edit.hidden = true;
        if (path === "/api/start") newOpen = false;
        void tick(); // show the new state at once
      }
    } catch (e) {
      setText(msg, "could not reach squall: " + String(e));
    }
  };

  // header buttons
  const editBtn = h("button", { class: "btn", type: "button", testid: "edit-users-button" }, "Edit");
  const stopBtn = h("button", { class: "btn danger", type: "button", testid: "stop-button" }, "Stop");
  const resetBtn = h("button", { class: "btn", type: "button", testid: "reset-button" }, "Reset stats");
  const newBtn = h("button", { class: "btn primary", type: "button", testid: "new-button" }, "New");
  stopBtn.addEventListener("click", () => void post("/api/stop", {}));
  resetBtn.addEventListener("click", () => void post("/api/reset", {}));
  editBtn.hidden = stopBtn.hidden = resetBtn.hidden = newBtn.hidden = true;
  S.actions.append(newBtn, editBtn, stopBtn, resetBtn);

  // the start form (state "ready", and after New)
  const [uLabel, uIn] = numberField("start-users", "Number of users (peak concurrency)", form.users, "1", "1");
  const [rLabel, rIn] = numberField("start-rate", "Ramp up (users started/second)", form.spawn_rate, "any", "0");
  const hostless = form.host_required || "";
  const hIn = h("input", {
    type: "text",
    testid: "start-host",
    name: "host",
    value: form.host || "",
    placeholder: "http://...",
    spellcheck: "false",
    required: !!hostless,
  });
  const hostNote = hostless
    ? h("p", { class: "note", testid: "host-required" }, `${hostless} has no host attribute: give the host here (the test needs one to start).`)
    : null;
  const start = h(
    "form",
    { class: "panel start", testid: "start-form" },
    h("h2", null, "Start new load test"),
    uLabel,
    rLabel,
    h("label", null, h("span", null, "Host" + (hostless ? " (required)" : "")), hIn),
    h("button", { class: "btn primary", type: "submit", testid: "start-button" }, "Start"),
    hostNote,
  );
  start.hidden = true;
  start.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body: Record<string, unknown> = { users: Number(uIn.value), spawn_rate: Number(rIn.value) };
    if (hIn.value.trim()) body.host = hIn.value.trim();
    void post("/api/start", body);
  });

  // edit users (while running): filled with the running test's numbers each time it opens
  const [euLabel, euIn] = numberField("edit-users", "Number of users", form.users, "1", "0");
  const [erLabel, erIn] = numberField("edit-rate", "Ramp up (users started/second)", form.spawn_rate, "any", "0");
  const edit = h(
    "form",
    { class: "panel edit", testid: "edit-form" },
    h("h2", null, "Edit running load test"),
    euLabel,
    erLabel,
    h("button", { class: "btn primary", type: "submit", testid: "edit-submit" }, "Apply"),
  );
  edit.hidden = true;
  let last: Live | null = null;
  editBtn.addEventListener("click", () => {
    edit.hidden = !edit.hidden;
    if (edit.hidden) return;
    if (last && typeof last.target_users === "number") euIn.value = String(last.target_users);
    else if (last && typeof last.users === "number") euIn.value = String(last.users);
    if (last && typeof last.spawn_rate === "number") erIn.value = String(last.spawn_rate);
    euIn.focus();
  });
  edit.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void post("/api/users", { users: Number(euIn.value), spawn_rate: Number(erIn.value) });
  });

  // New (after a test): the start form again, filled with the last test's users, spawn rate and host
  let newOpen = false;
  newBtn.addEventListener("click", () => {
    newOpen = !newOpen;
    if (newOpen && last) {
      if (typeof last.target_users === "number" && last.target_users > 0) uIn.value = String(last.target_users);
      if (typeof last.spawn_rate === "number") rIn.value = String(last.spawn_rate);
      if (typeof last.host === "string" && last.host) hIn.value = last.host;
    }
    start.hidden = !newOpen;
    if (newOpen) {
      window.scrollTo(0, 0);
      uIn.focus();
    }
  });

  const panels = h("div", { class: "panels" }, start, edit, msg);
  S.main.appendChild(panels);

  const downloads = () =>
    h(
      "div",
      { class: "downloads" },
      h("a", { class: "btn", href: "/download/result.json", download: "result.json", testid: "download-json" }, "Result (JSON)"),
      h("a", { class: "btn", href: "/download/stats.csv", download: "stats.csv", testid: "download-csv" }, "Statistics (CSV, Locust's columns)"),
      h("a", { class: "btn", href: "/download/failures.csv", download: "failures.csv", testid: "download-failures-csv" }, "Failures (CSV)"),
      isRun
        ? h("a", { class: "btn", href: "/download/exceptions.csv", download: "exceptions.csv", testid: "download-exceptions-csv" }, "Exceptions (CSV)")
        : null,
      h("a", { class: "btn", href: "/download/report.html", download: "report.html", testid: "download-html" }, "Report (HTML)"),
      ((extension && extension.csv_files) || []).map(({ href, title }) =>
        h("a", { class: "btn", href, testid: "download-extension-csv" }, title),
      ),
    );
  const ratio = new RatioSection();
  const logs = new LogsSection();
  const tabs = ((extension && extension.tabs) || []).map((tab, i) => new ExtensionTab(tab, i));
  const sections = (v: RunView) => {
    if (isRun) v.addSection("ratio", "Current ratio", ratio.el);
    tabs.forEach((t, i) => v.addSection("extension-" + i, t.tab.title, t.el));
    v.addSection("download", "Download data", downloads());
    if (isRun) v.addSection("logs", "Logs", logs.el);
  };

  let view = new RunView({ meta, command, kind, live: true });
  sections(view);
  S.badges.append(...view.badges);
  S.navSlot.appendChild(view.nav);
  S.main.appendChild(view.el);
  S.footer.append("squall " + (meta.squall_version || ""), " · live dashboard");

  let cursor = 0;
  let test = -1; // the test the view shows (the live `test`; -1 before the first answer)
  let final: Result | null = null; // the test's result, once shown
  let reasonBadge: HTMLElement | null = null;
  let busy = false;
  let timer = 0;
  let seenState = "";
  // after a result, the page polls on only where a new test can start from it
  const keepPolling = !!controls.new;

  const replaceView = (next: RunView) => {
    view.badges.forEach((b) => b.remove());
    view.destroy();
    view = next;
    sections(view);
    S.badges.append(...view.badges);
    if (reasonBadge) S.badges.append(reasonBadge);
    S.badges.append(conn); // last, where it was
    S.navSlot.appendChild(view.nav);
    S.main.appendChild(view.el);
  };

  /** Another test began in this process: its live view replaces whatever the page showed. */
  const newTest = () => {
    replaceView(new RunView({ meta, command, kind, live: true }));
    if (reasonBadge) reasonBadge.remove();
    reasonBadge = null;
    final = null;
    cursor = 0;
    verdictWaits = 0;
    delete document.body.dataset.finished;
  };

  const applyState = (l: Live) => {
    const st = String(l.state || "unknown");
    setText(state, st);
    state.setAttribute("data-state", st);
    const running = st === "spawning" || st === "running";
    if (st === "ready") newOpen = false;
    const canStart = l.startable !== false;
    start.hidden = !(controls.start && canStart && (st === "ready" || (newOpen && !!final)));
    newBtn.hidden = !(controls.new && canStart && !!final && l.startable);
    editBtn.hidden = !(running && controls.users);
    if (!running) edit.hidden = true;
    stopBtn.hidden = !(running && controls.stop);
    resetBtn.hidden = !(running && controls.reset);
    if (st !== seenState) {
      seenState = st;
      document.body.dataset.state = st;
    }
  };

  /** The header's figures: the live ones while a test runs, the result's once it is shown. */
  const applyHeader = (l: Live) => {
    if (!isRun) return;
    setText(hHost, l.host || meta.target || "–");
    const users = typeof l.users === "number" ? l.users : null;
    setHv(hUsers, users === null ? "–" : String(users), users);
    hUsers.parentElement!.hidden = !!final || l.state === "ready"; // as Locust's: while a test runs
    const a = final ? final.aggregate : l.totals && l.totals.aggregate;
    const reqs = a ? num(a.requests) : 0;
    const failPct = reqs ? (100 * num(a!.failures)) / reqs : 0;
    setHv(hFail, fmtPct(failPct), +failPct.toFixed(4));
    let rps: number | null;
    const counted = final ? countedS(num(final.duration_s), final.reset_s) : 0;
    if (final) rps = counted ? reqs / counted : null;
    else {
      const cur = currentRates(view.seconds());
      rps = cur ? cur.rps : null;
    }
    setHv(hRps, rps === null ? "–" : fmtRate(rps), rps === null ? null : +rps.toFixed(3));
  };

  const readExtras = async () => {
    if (!isRun) return;
    try {
      const [tasks, lines] = await Promise.all([
        getJson<{ per_class?: Record<string, { ratio: number }>; total?: Record<string, { ratio: number }> }>("/api/tasks"),
        getJson<{ lines?: string[] }>("/api/logs"),
      ]);
      ratio.update(tasks);
      logs.update((lines && lines.lines) || []);
      if (tabs.length) {
        const stats = await getJson<unknown>("/stats/requests");
        tabs.forEach((t) => t.update(extendedRows(stats, t.tab.key)));
      }
    } catch {
      // the live poll reports the connection
    }
  };

  // squall may publish the result a moment before the thresholds' verdicts are put into it
  let verdictWaits = 0;
  const wantsVerdicts = Array.isArray(meta.thresholds) && meta.thresholds.length > 0;

  const finish = async (): Promise<boolean> => {
    const result = await getJson<Result>("/api/result");
    if (!result || typeof result !== "object" || !result.aggregate) return false;
    if (wantsVerdicts && !Array.isArray(result.thresholds) && verdictWaits++ < 5) return false;
    replaceView(new RunView({ meta, command: commandOf(meta, result), kind: kindOf(command, result), live: false, result }));
    const reason = result.stop_reason || "";
    if (reason && reason !== "running") {
      reasonBadge = badge("stop-reason", STOP_REASONS[reason] || reason, "state" + (reason === "threshold" ? " bad" : ""));
      S.badges.insertBefore(reasonBadge, conn);
    }
    view.update(snapshotFromResult(result));
    final = result;
    edit.hidden = true;
    editBtn.hidden = stopBtn.hidden = resetBtn.hidden = true;
    document.body.dataset.finished = "1";
    return true;
  };

  async function tick(): Promise<void> {
    if (busy) return;
    busy = true;
    if (timer) clearTimeout(timer);
    let done = false;
    try {
      const l = await getJson<Live>("/api/live?cursor=" + cursor);
      if (!l || typeof l !== "object" || typeof l.state !== "string") throw new Error("not a live answer");
      conn.hidden = true;
      setText(conn, "connected");
      document.body.dataset.connection = "connected";
      const lt = typeof l.test === "number" ? l.test : 0;
      if (test >= 0 && lt !== test) {
        // a new test: its seconds start over (this answer's were cut at the old cursor)
        test = lt;
        newTest();
        l.timeseries = [];
      } else {
        test = lt;
        if (typeof l.cursor === "number") {
          if (l.cursor < cursor) view.resetSeries(); // the seconds started over
          cursor = l.cursor;
        }
      }
      last = l;
      if (!final) view.update(snapshotFromLive(l));
      if (l.finished && !final) await finish();
      applyState(l);
      applyHeader(l);
      void readExtras();
      done = !!final && !keepPolling;
    } catch {
      conn.hidden = false;
      setText(conn, "disconnected");
      document.body.dataset.connection = "disconnected";
    } finally {
      busy = false;
    }
    markReady();
    if (!done) timer = window.setTimeout(() => void tick(), POLL_MS);
  }
  void tick();
}
