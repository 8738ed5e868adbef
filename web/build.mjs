// Bundles src/ into python/squall/web/assets/app.js and app.css (minified, deterministic).
import * as esbuild from "esbuild";
import { statSync } from "node:fs";

// SQUALL_WEB_OUTDIR: build elsewhere (`make lint` compares that build with the committed bundle).
const outdir = process.env.SQUALL_WEB_OUTDIR || new URL("../python/squall/web/assets/", import.meta.url).pathname;

await esbuild.build({
  entryPoints: { app: "src/main.ts" },
  outdir,
  bundle: true,
  minify: true,
  format: "iife",
  target: "es2020",
  charset: "utf8",
  legalComments: "eof",
  sourcemap: false,
  logLevel: "warning",
});

for (const f of ["app.js", "app.css"]) console.log(`${f}: ${statSync(outdir + f).size.toLocaleString("en-US")} bytes`);
