// Live mode: poll /api/live once a second, append the new seconds, run the controls; the final result
// (once `finished`) replaces the live view with the report.
import type { Live, Meta, Result } from "./types";
import { commandOf, kindOf, byMethod, sum, STOP_REASONS } from "./model";
import { RunView, snapshotFromResult, type Snapshot } from "./view";
import { badge, markReady, shell, type Shell } from "./shell";
import { h, num, setText } from "./util";
import { monitorOf } from "./monitor";
import { generatorOf } from "./generator";

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

export function startLive(root: HTMLElement, meta: Meta): void {
  const command = commandOf(meta, undefined);
  const kind = kindOf(command);
  const controls = meta.controls || {};
  const form = meta.form || {};
  const S: Shell = shell(root, meta.title || "squall " + (command === "run" ? "" : command + " ") + "dashboard");
  const state = badge("state", "connecting", "state");
  const conn = badge("connection", "connected", "conn");
  conn.hidden = true;
  S.badges.append(state, conn);
  const msg = h("div", { class: "ctl-msg", testid: "control-message", role: "status" });

  const post = async (path: string, body: object): Promise<void> => {
    setText(msg, "");
    try {
      const r = await getJson<{ ok: boolean; error?: string }>(path, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
      });
      if (!r || !r.ok) setText(msg, (r && r.error) || "the server refused");
      else {
        edit.hidden = true;
        void tick(); // show the new state at once
      }
    } catch (e) {
      setText(msg, "could not reach squall: " + String(e));
    }
  };

  // header buttons
  const editBtn = h("button", { class: "btn", type: "button", testid: "edit-users-button" }, "Edit users");
  const stopBtn = h("button", { class: "btn danger", type: "button", testid: "stop-button" }, "Stop");
  const resetBtn = h("button", { class: "btn", type: "button", testid: "reset-button" }, "Reset stats");
  stopBtn.addEventListener("click", () => void post("/api/stop", {}));
  resetBtn.addEventListener("click", () => void post("/api/reset", {}));
  S.actions.append(editBtn, stopBtn, resetBtn);

  // the start form (state "ready")
  const [uLabel, uIn] = numberField("start-users", "Number of users (peak concurrency)", form.users, "1", "1");
  const [rLabel, rIn] = numberField("start-rate", "Ramp up (users started/second)", form.spawn_rate, "any", "0");
  const hIn = h("input", { type: "text", testid: "start-host", name: "host", value: form.host || "", placeholder: "http://...", spellcheck: "false" });
  const start = h(
    "form",
    { class: "panel start", testid: "start-form" },
    h("h2", null, "Start new load test"),
    uLabel,
    rLabel,
    h("label", null, h("span", null, "Host"), hIn),
    h("button", { class: "btn primary", type: "submit", testid: "start-button" }, "Start"),
  );
  start.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const body: Record<string, unknown> = { users: Number(uIn.value), spawn_rate: Number(rIn.value) };
    if (hIn.value.trim()) body.host = hIn.value.trim();
    void post("/api/start", body);
  });

  // edit users (while running)
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
  editBtn.addEventListener("click", () => {
    edit.hidden = !edit.hidden;
    if (!edit.hidden) euIn.focus();
  });
  edit.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void post("/api/users", { users: Number(euIn.value), spawn_rate: Number(erIn.value) });
  });

  const panels = h("div", { class: "panels" }, start, edit, msg);
  S.main.appendChild(panels);

  const downloads = () =>
    h(
      "div",
      { class: "downloads" },
      h("a", { class: "btn", href: "/download/result.json", download: "result.json", testid: "download-json" }, "Result (JSON)"),
      h("a", { class: "btn", href: "/download/stats.csv", download: "stats.csv", testid: "download-csv" }, "Statistics (CSV, Locust's columns)"),
      h("a", { class: "btn", href: "/download/report.html", download: "report.html", testid: "download-html" }, "Report (HTML)"),
    );

  let view = new RunView({ meta, command, kind, live: true });
  view.addSection("download", "Download data", downloads());
  S.badges.append(...view.badges);
  S.navSlot.appendChild(view.nav);
  S.main.appendChild(view.el);
  S.footer.append("squall " + (meta.squall_version || ""), " · live dashboard");

  let cursor = 0;
  let done = false;
  let busy = false;
  let timer = 0;
  let seenState = "";
  let userEdited = false;
  euIn.addEventListener("input", () => (userEdited = true));

  const applyState = (l: Live) => {
    const st = String(l.state || "unknown");
    setText(state, st);
    state.setAttribute("data-state", st);
    const running = st === "spawning" || st === "running";
    start.hidden = !(st === "ready" && controls.start);
    editBtn.hidden = !(running && controls.users);
    if (!running) edit.hidden = true;
    stopBtn.hidden = !(running && controls.stop);
    resetBtn.hidden = !(running && controls.reset);
    if (st !== seenState) {
      seenState = st;
      document.body.dataset.state = st;
    }
    if (!userEdited && edit.hidden && typeof l.target_users === "number") euIn.value = String(l.target_users);
    else if (!userEdited && edit.hidden && typeof l.users === "number") euIn.value = String(l.users);
  };

  // squall may publish the result a moment before the thresholds' verdicts are put into it
  let verdictWaits = 0;
  const wantsVerdicts = Array.isArray(meta.thresholds) && meta.thresholds.length > 0;

  const finish = async (): Promise<boolean> => {
    const result = await getJson<Result>("/api/result");
    if (!result || typeof result !== "object" || !result.aggregate) return false;
    if (wantsVerdicts && !Array.isArray(result.thresholds) && verdictWaits++ < 5) return false;
    const final = new RunView({ meta, command: commandOf(meta, result), kind: kindOf(command, result), live: false, result });
    final.addSection("download", "Download data", downloads());
    view.badges.forEach((b) => b.remove());
    view.destroy();
    view = final;
    S.badges.append(...view.badges);
    const reason = result.stop_reason || "";
    if (reason && reason !== "running")
      S.badges.insertBefore(badge("stop-reason", STOP_REASONS[reason] || reason, "state" + (reason === "threshold" ? " bad" : "")), conn);
    S.navSlot.appendChild(view.nav);
    S.main.appendChild(view.el);
    view.update(snapshotFromResult(result));
    start.hidden = true;
    edit.hidden = true;
    editBtn.hidden = stopBtn.hidden = resetBtn.hidden = true;
    document.body.dataset.finished = "1";
    return true;
  };

  async function tick(): Promise<void> {
    if (done || busy) return;
    busy = true;
    if (timer) clearTimeout(timer);
    try {
      const l = await getJson<Live>("/api/live?cursor=" + cursor);
      if (!l || typeof l !== "object" || typeof l.state !== "string") throw new Error("not a live answer");
      conn.hidden = true;
      setText(conn, "connected");
      document.body.dataset.connection = "connected";
      if (typeof l.cursor === "number") {
        if (l.cursor < cursor) view.resetSeries(); // a new run: its seconds start over
        cursor = l.cursor;
      }
      applyState(l);
      view.update(snapshotFromLive(l));
      if (l.finished && (await finish())) done = true;
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
