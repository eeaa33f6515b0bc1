# focused: a topical web crawler on Scrapy. `make demo` and `make test` work offline.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
SCRAPY := $(VENV)/bin/scrapy
TOPIC ?= chemistry
STRATEGY ?= annealing
OUT ?= out/demo
PYTEST_ARGS ?=

.PHONY: install demo crawl sandbox test lint clean

install: $(VENV)/.installed

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -r requirements.txt
	touch $@

# Crawl the embedded sandbox web (served on 127.0.0.1 by the spider itself) for the
# chemistry topic, then print recall and precision; the plot is $(OUT)/curve.png.
demo: install
	rm -rf $(OUT)
	$(SCRAPY) crawl focused -a topic=$(TOPIC) -s FOCUSED_WEB=sandbox \
		-s FOCUSED_STRATEGY=$(STRATEGY) -s FOCUSED_OUTPUT_DIR=$(OUT) -s LOG_LEVEL=INFO \
		-s AUTOTHROTTLE_ENABLED=False
	$(PY) -m focused.report $(OUT)

# Crawl the real web from the topic's seeds (needs internet): make crawl TOPIC=chemistry
crawl: install
	$(SCRAPY) crawl focused -a topic=$(TOPIC) -s FOCUSED_WEB=real \
		-s FOCUSED_STRATEGY=$(STRATEGY) -s FOCUSED_OUTPUT_DIR=out/crawl-$(TOPIC) \
		-s JOBDIR=out/crawl-$(TOPIC)/job
	$(PY) -m focused.report out/crawl-$(TOPIC)

# Serve the sandbox on its own: make sandbox PORT=8000
PORT ?= 8000
sandbox: install
	$(SCRAPY) sandbox --port $(PORT)

test: install
	$(PY) -m pytest -q $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check focused tests
	$(VENV)/bin/ruff format --check focused tests

clean:
	rm -rf out .pytest_cache

# Deploy the project to a scrapyd with scrapyd-client: make deploy [SCRAPYD_URL=...]
# The egg carries topics/*.toml as package data (setup.py). The URL is given to
# scrapyd-deploy as a [deploy:make] target in $(XDG_CONFIG_HOME)/scrapy.cfg.
SCRAPYD_URL ?= http://127.0.0.1:6800/
DEPLOY_VERSION ?=
.PHONY: deploy
deploy: install
	mkdir -p out/deploy
	printf '[deploy:make]\nurl = %s\nproject = focused\n' '$(SCRAPYD_URL)' > out/deploy/scrapy.cfg
	XDG_CONFIG_HOME=$(CURDIR)/out/deploy $(VENV)/bin/scrapyd-deploy make -p focused \
		$(if $(DEPLOY_VERSION),-v $(DEPLOY_VERSION))
