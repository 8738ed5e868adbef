// The page frame shared by every mode: header (brand, title, badges, actions), section tabs, main, footer.
import { h } from "./util";

export interface Shell {
  header: HTMLElement;
  title: HTMLElement;
  badges: HTMLElement;
  actions: HTMLElement;
  navSlot: HTMLElement;
  main: HTMLElement;
  footer: HTMLElement;
}

export function shell(root: HTMLElement, title: string): Shell {
  document.title = title;
  const t = h("h1", { testid: "title" }, title);
  const badges = h("div", { class: "badges" });
  const actions = h("div", { class: "actions" });
  const header = h("header", { class: "top" }, h("div", { class: "brand", "aria-hidden": "true" }, "squall"), t, badges, actions);
  const navSlot = h("div", { class: "navbar" });
  const main = h("main", null);
  const footer = h("footer", null);
  root.appendChild(header);
  root.appendChild(navSlot);
  root.appendChild(main);
  root.appendChild(footer);
  return { header, title: t, badges, actions, navSlot, main, footer };
}

export function badge(testid: string, text: string, cls = ""): HTMLElement {
  return h("span", { class: "badge " + cls, testid }, text);
}

/** A download link for text made here (no request: a blob URL). */
export function blobLink(testid: string, label: string, filename: string, type: string, make: () => string): HTMLAnchorElement {
  const a = h("a", { class: "btn", testid, href: "#", download: filename }, label);
  let url = "";
  a.addEventListener("click", () => {
    if (!url) url = URL.createObjectURL(new Blob([make()], { type }));
    a.href = url;
  });
  return a;
}

export function markReady(): void {
  if (document.body.dataset.ready !== "1") document.body.dataset.ready = "1";
}
