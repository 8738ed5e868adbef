# The documented workflow: `make demo` and `make test` on a fresh machine; the rest for development.
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
DEV    := $(VENV)/.dev-installed
NODE_MODULES := web/node_modules/.installed
WEB_CHECK := $(CURDIR)/target/web-check
# pytest's workers: the suite mostly waits on servers and runs (11 minutes of CPU in 30 of wall time,
# one at a time), so more workers than the 2 cores.
PYTEST_WORKERS ?= 4
SOURCES := $(shell find crates python -type f -not -path '*/__pycache__/*') Cargo.toml Cargo.lock pyproject.toml

.PHONY: demo test check lint lint-web docs fuzz soak install dev web test-rust test-python test-unit bench bench-http bench-h2 bench-script bench-mqtt bench-ws bench-dashboard clean

## demo: create .venv, build and install squall, run the demo against the built-in target
demo: $(STAMP)
	$(VENV)/bin/squall demo

## test: install what the tests need (apt packages included), then the lints, cargo test and pytest
test: $(DEV) $(STAMP)
	./scripts/install-system-deps.sh
	$(MAKE) lint
	$(MAKE) test-rust test-python

## check: the fast tier, for contributors: the lints, the engine's unit tests and every Python test not marked slow (each under a few seconds), in parallel; about 3 minutes on 2 cores (after `make dev`)
check: $(DEV) $(NODE_MODULES)
	@$(PY) -c "import squall._engine" 2>/dev/null || (echo "squall is not installed in $(VENV): run make dev" >&2; exit 2)
	./scripts/install-system-deps.sh
	$(MAKE) lint
	cargo test -p squall-engine --lib --locked
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not slow and not serial"
	$(PY) -m pytest -n 0 -m "serial and not slow"

## lint: rustfmt and clippy on the crates, ruff, mypy and stubtest (the pinned ones in .venv) on the Python, the docs site
lint: $(DEV)
	cargo fmt --all --check
	cargo clippy --workspace --all-targets --locked -- -D warnings
	$(VENV)/bin/ruff check python tests bench examples
	$(VENV)/bin/ruff format --check python tests bench examples
	$(VENV)/bin/mypy python/squall
	$(VENV)/bin/python -m mypy.stubtest squall._engine  # the hand-written stub against the built module
	$(VENV)/bin/hadolint deploy/Dockerfile
	$(MAKE) lint-web docs

## docs: the documentation site (docs/, MkDocs, strict: a broken link or anchor fails) into target/site/
docs: $(DEV)
	$(VENV)/bin/mkdocs build --strict

## lint-web: type-check web/ and check that the committed bundle is what its sources build to
lint-web: $(NODE_MODULES)
	cd web && npm run --silent check
	rm -rf $(WEB_CHECK) && mkdir -p $(WEB_CHECK)
	cd web && SQUALL_WEB_OUTDIR=$(WEB_CHECK)/ node build.mjs >/dev/null
	@cmp -s $(WEB_CHECK)/app.js python/squall/web/assets/app.js && cmp -s $(WEB_CHECK)/app.css python/squall/web/assets/app.css \
		|| (echo "python/squall/web/assets/ is not what web/src builds to: run make web and commit" >&2; exit 1)

## web: rebuild the page's bundle (python/squall/web/assets/, committed) from web/src
web: $(NODE_MODULES)
	cd web && npm run build

$(NODE_MODULES): web/package-lock.json
	cd web && npm ci --no-audit --no-fund --loglevel=error
	@touch $(NODE_MODULES)

test-rust:
	cargo test --workspace --exclude squall-py --locked

# The tests in parallel (xdist's workers; each test starts its own servers, on free ports), then the
# `serial` ones alone: they measure time or capacity against ground truth, which a neighbour would move.
test-python: $(DEV) $(STAMP) $(NODE_MODULES)
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup -m "not serial"
	$(PY) -m pytest -n 0 -m serial

## fuzz: the parsers', the dashboard's HTTP API's and the input files' fuzzing, longer than `make test` runs it (PROPTEST_CASES and SQUALL_FUZZ_N cases each; the API gets SQUALL_FUZZ_N / 10 requests, each input file test SQUALL_FUZZ_N / 40 files)
fuzz: $(DEV) $(STAMP)
	PROPTEST_CASES=20000 cargo test --release -p squall-engine --test fuzz
	SQUALL_FUZZ_N=200000 $(PY) -m pytest -q tests/unit/test_parser_fuzz.py tests/test_web_fuzz.py
	SQUALL_FUZZ_N=40000 $(PY) -m pytest -q tests/test_file_fuzz.py

## soak: 30 minutes of mixed load (HTTP users, the open model, MQTT); RSS and descriptors flat, counts exact
soak: $(DEV) $(STAMP)
	./scripts/install-system-deps.sh
	$(PY) tests/soak.py --minutes 30

## test-unit: the fast Python unit tests only (no servers, no subprocesses), in a second or two
test-unit: $(DEV) $(STAMP)
	$(PY) -m pytest -q tests/unit

$(PY):
	python3 -m venv $(VENV)

## install: build squall (release) and install it into .venv, as `pip install .` does
install $(STAMP): $(PY) $(SOURCES)
	$(PY) -m pip install -q --disable-pip-version-check .
	@touch $(STAMP)

# The pinned tools the tests and lints use (pytest, maturin, ruff, mypy, and Locust to compare against).
$(DEV): $(PY) requirements/dev.txt
	$(PY) -m pip install -q --disable-pip-version-check -r requirements/dev.txt
	@touch $(DEV)

## dev: editable install for iterating (Python edits apply at once; rerun after Rust edits)
dev: $(DEV)
	$(VENV)/bin/maturin develop --release

## bench: the benchmarks against peers (installs wrk, ab, hey, oha, Goose, Locust, paho-mqtt, websocket-client, Artillery, nginx, mosquitto); writes bench/RESULTS.md
bench: bench-http bench-h2 bench-script bench-mqtt bench-ws bench-dashboard

bench-http: $(STAMP)
	$(PY) bench/http_bench.py

bench-h2: $(STAMP)
	$(PY) bench/h2_bench.py --skip-install

bench-script: $(STAMP)
	$(PY) bench/script_bench.py --skip-install
	$(PY) bench/per_request.py --skip-install --rounds 3 --seconds 8
	$(PY) bench/per_request.py --skip-install --rounds 3 --seconds 8 --people
	$(PY) bench/instructions.py --write

bench-mqtt: $(STAMP)
	$(PY) bench/mqtt_bench.py --skip-install

bench-ws: $(STAMP)
	$(PY) bench/ws_bench.py  # installs what is missing (Artillery: bench/peers.sh)

bench-dashboard: $(STAMP) $(DEV)
	$(PY) bench/dashboard_bench.py --skip-install

clean:
	rm -rf $(VENV) target dist
