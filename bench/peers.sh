#!/usr/bin/env bash
# Installs the benchmark peers by package name: wrk, ab, hey and nginx from apt, oha and Goose 0.19 from crates.io,
# Locust, paho-mqtt and websocket-client from PyPI into their own venv, Artillery from npm (bench/artillery), and
# a C compiler for bench/floor.c and bench/ws_floor.c, valgrind for bench/instructions.py. Safe to rerun: only what is missing is installed.
set -euo pipefail
cd "$(dirname "$0")"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
need=()
command -v wrk >/dev/null || need+=(wrk)
command -v ab >/dev/null || need+=(apache2-utils)
command -v hey >/dev/null || need+=(hey)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v taskset >/dev/null || need+=(util-linux)
command -v h2load >/dev/null || need+=(nghttp2-client)
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v npm >/dev/null || need+=(nodejs npm)
command -v valgrind >/dev/null || need+=(valgrind)
if [ ${#need[@]} -gt 0 ]; then
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  $SUDO systemctl disable --now nginx mosquitto >/dev/null 2>&1 || true
fi
command -v oha >/dev/null || cargo install oha --version 1.16.0 --locked   # about 9 minutes to compile
# Goose 0.19, the scripted peer of script_bench.py: its user in Rust (bench/goose), about 5 minutes.
cargo build -q --release --locked --manifest-path goose/Cargo.toml
# rumqttc's own client, the alternative measured against squall's use of its codec alone.
cargo build -q --release --locked --manifest-path mqtt_client_choice/Cargo.toml
if [ ! -x .venv-locust/bin/locust ] || ! .venv-locust/bin/python -c 'import websocket' 2>/dev/null; then
  [ -x .venv-locust/bin/pip ] || python3 -m venv .venv-locust
  .venv-locust/bin/pip install -q --disable-pip-version-check -r requirements-locust.txt
fi
# Artillery 2.0.34, the WebSocket peer of ws_bench.py (its ws engine), as bench/artillery/package-lock.json
# pins it; about 460 MB. Its Playwright engine's browser download is skipped: the ws engine needs no browser.
if [ ! -x artillery/node_modules/.bin/artillery ]; then
  (cd artillery && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
fi
