#!/usr/bin/env bash
# System packages the tests use: real servers on loopback. Installs only what is missing.
set -euo pipefail
need=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx-light)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
# mosquitto_sub: an independent subscriber that counts deliveries (ground truth for --verify).
command -v mosquitto_sub >/dev/null 2>&1 || need+=(mosquitto-clients)
# PostgreSQL's server for PostgresUser's tests (tests/test_contrib_clients.py runs one of its own).
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || need+=(postgresql)
# The browser of the dashboard's tests (driven by Playwright through executable_path).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# Node and npm build and check web/ (the bundle itself is committed: installing squall needs no Node).
command -v npm >/dev/null 2>&1 || need+=(nodejs npm)
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing ${need[*]} with apt-get" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
# The packages start a system nginx on port 80, mosquitto on 1883 and PostgreSQL on 5432; the tests run
# their own.
for svc in nginx mosquitto postgresql; do
    $SUDO systemctl disable --now $svc >/dev/null 2>&1 || $SUDO service $svc stop >/dev/null 2>&1 || true
done
