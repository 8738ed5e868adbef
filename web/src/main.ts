// squall's one page: a report (data inlined), a comparison of reports, or the live dashboard.
import "uplot/dist/uPlot.min.css";
import "./style.css";
import type { Doc, Meta, Result } from "./types";
import { commandOf, kindOf, STOP_REASONS } from "./model";
import { RunView, snapshotFromResult } from "./view";
import { renderCompare } from "./compare";
import { startLive } from "./live";
import { badge, blobLink, markReady, shell } from "./shell";
import { h } from "./util";

function readDoc(): Doc | null {
  const el = document.getElementById("squall-data");
  if (!el) return null;
  try {
    const d = JSON.parse(el.textContent || "null");
    return d && typeof d === "object" ? (d as Doc) : null;
  } catch {
    return null;
  }
}

// The CSV files a report offers: written by squall (report/locust_csv.py), as the dashboard serves them.
const CSV_DOWNLOADS: [string, string, string][] = [
  ["stats.csv", "download-csv", "Statistics (CSV, Locust's columns)"],
  ["failures.csv", "download-failures-csv", "Failures (CSV)"],
  ["exceptions.csv", "download-exceptions-csv", "Exceptions (CSV)"],
];

function report(root: HTMLElement, meta: Meta, result: Result, downloads: Record<string, string>): void {
  const command = commandOf(meta, result);
  const title = meta.title || "squall " + command + " report";
  const S = shell(root, title);
  const reason = result.stop_reason || "";
  S.badges.appendChild(badge("stop-reason", STOP_REASONS[reason] || reason || "finished", "state" + (reason === "threshold" ? " bad" : "")));
  const view = new RunView({ meta, command, kind: kindOf(command, result), live: false, result });
  S.badges.append(...view.badges);
  view.addSection(
    "download",
    "Download data",
    h(
      "div",
      { class: "downloads" },
      blobLink("download-json", "Result (JSON)", "result.json", "application/json", () => JSON.stringify(result, null, 1)),
      ...CSV_DOWNLOADS.filter(([file]) => typeof downloads[file] === "string").map(([file, testid, label]) =>
        blobLink(testid, label, file, "text/csv", () => downloads[file]),
      ),
    ),
  );
  S.navSlot.appendChild(view.nav);
  S.main.appendChild(view.el);
  S.footer.append("squall " + (meta.squall_version || result.squall_version || ""), " · report");
  view.update(snapshotFromResult(result));
}

function fail(root: HTMLElement, why: string): void {
  if (root.id === "app") root.textContent = "";
  const S = shell(root, "squall");
  S.main.appendChild(h("p", { class: "empty", testid: "error" }, why));
}

function boot(): void {
  const root = document.getElementById("app") || document.body;
  const doc = readDoc();
  const meta: Meta = (doc && doc.meta) || {};
  try {
    if (!doc) fail(root, "No data: this page expects a squall-data block.");
    else if (doc.mode === "report" && doc.result) report(root, meta, doc.result, doc.downloads || {});
    else if (doc.mode === "compare" && Array.isArray(doc.runs) && doc.runs.length) {
      const S = shell(root, "");
      const c = renderCompare(meta, doc.runs);
      document.title = c.title;
      S.title.textContent = c.title;
      S.navSlot.appendChild(c.nav);
      S.main.appendChild(c.el);
      S.footer.append("squall " + (meta.squall_version || "") + " · comparison");
      c.draw();
    } else if (doc.mode === "live") {
      startLive(root, meta, doc.token || "", doc.extension || null);
      return; // ready after the first poll
    } else fail(root, "Unknown data mode.");
  } catch (e) {
    console.error(e);
    fail(root, "This page could not render its data: " + String(e));
  }
  markReady();
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", boot);
else boot();
