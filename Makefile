# anima — `make help` lists the targets.
PYTHON  ?= python3
VENV    ?= .venv
BENCH   ?=
PREFIX  ?= /usr/local
DESTDIR ?=
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib/anima
MANDIR  ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/site-functions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d

BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help demo test test-later lint lint-man bench man data completions install uninstall clean tools

help: ## Show this list of targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-z][a-z-]*:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

# The helper scripts beside anima in .venv/bin, the PATH the README gives: links, so that an
# edit of bin/ is what runs.
SCRIPTS := $(BIN)/anima-crontab $(BIN)/anima-loop
$(SCRIPTS): $(BIN)/%: bin/% $(STAMP)
	ln -sf "$(CURDIR)/$<" $@

tools: ## Install the system tools the tests use (groff, shellcheck, faketime, promtool).
	@missing=""; \
	command -v groff >/dev/null 2>&1 || missing="$$missing groff-base"; \
	command -v faketime >/dev/null 2>&1 || missing="$$missing faketime"; \
	command -v shellcheck >/dev/null 2>&1 || missing="$$missing shellcheck"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  { $$sudo apt-get update -qq || $$sudo apt-get -o APT::Sandbox::User=root update -qq; } && \
	  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	    --no-install-recommends $$missing >/dev/null; fi

demo: $(STAMP) $(SCRIPTS) ## Run the whole loop on a throwaway home with the offline backend.
	PATH="$(CURDIR)/$(BIN):$$PATH" bin/anima-demo

test: $(STAMP) $(SCRIPTS) tools ## Install into .venv and run the test suite (one worker per core).
	$(BIN)/pytest -q -n auto

test-later: $(STAMP) $(SCRIPTS) tools ## Run the suite again with the clock three years ahead (faketime).
	faketime '+3 years' $(BIN)/pytest -q -n auto

lint: $(STAMP) tools ## Lint the code (ruff), the scripts in bin/ (shellcheck) and the man pages (groff).
	$(BIN)/ruff check anima tests bench man scripts
	shellcheck bin/*
	$(MAKE) -s lint-man

lint-man: tools ## Lint every man page with groff (a .so page: its target exists).
	@for page in man/*.[157]; do \
	  case "$$(head -c4 $$page)" in \
	    .so\ ) target=man/$$(sed 's|^\.so man[157]/||' $$page); \
	          [ -f "$$target" ] || { echo "$$page: no page $$target" >&2; exit 1; } ;; \
	    *) out=$$(groff -t -man -ww -z $$page 2>&1); \
	       [ -z "$$out" ] || { echo "$$out" >&2; exit 1; } ;; \
	  esac; done

# BENCH names some scripts to run (`make bench BENCH=crash.py`): the other sections are kept.
bench: $(STAMP) ## Measure speed against same-run references and crash safety; write bench/README.md.
	@command -v rg >/dev/null 2>&1 && command -v zstd >/dev/null 2>&1 && [ -x /usr/bin/time ] || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq ripgrep zstd time >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq ripgrep zstd time >/dev/null; fi; }
	$(BIN)/python bench/report.py $(BENCH)

man: $(STAMP) tools ## Regenerate the generated parts of the man pages from the code, then lint them.
	$(BIN)/python man/generate.py
	$(MAKE) -s lint-man

data: $(STAMP) ## Regenerate anima/data/ tables: look-alikes, default-ignorables, traditional->simplified.
	$(BIN)/python scripts/tables.py

completions: $(STAMP) ## Regenerate completions/ for bash, zsh and fish.
	_ANIMA_COMPLETE=bash_source $(BIN)/anima > completions/anima.bash
	_ANIMA_COMPLETE=zsh_source $(BIN)/anima > completions/_anima
	_ANIMA_COMPLETE=fish_source $(BIN)/anima > completions/anima.fish

install: ## Install anima (a private venv in LIBDIR), man pages and completions under DESTDIR/PREFIX.
	rm -rf "$(DESTDIR)$(LIBDIR)"
	$(PYTHON) -m venv "$(DESTDIR)$(LIBDIR)"
	"$(DESTDIR)$(LIBDIR)/bin/python" -m pip install --quiet .
	install -d "$(DESTDIR)$(BINDIR)"
	@# a script of the private venv's python, not sh running `python -m anima`: no shell and no
	@# runpy before each `anima prompt` (bench/startup.py)
	printf '#!%s/bin/python\n"""anima(1), installed by make install."""\nimport sys\n\nfrom anima.__main__ import main\n\nsys.exit(main())\n' "$(LIBDIR)" > "$(DESTDIR)$(BINDIR)/anima"
	chmod 0755 "$(DESTDIR)$(BINDIR)/anima"
	install -d "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(MANDIR)/man5" "$(DESTDIR)$(MANDIR)/man7"
	install -m 0644 man/*.1 "$(DESTDIR)$(MANDIR)/man1/"
	install -m 0644 man/*.5 "$(DESTDIR)$(MANDIR)/man5/"
	install -m 0644 man/*.7 "$(DESTDIR)$(MANDIR)/man7/"
	install -d "$(DESTDIR)$(BASHCOMPDIR)" "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	install -m 0644 completions/anima.bash "$(DESTDIR)$(BASHCOMPDIR)/anima"
	install -m 0644 completions/_anima "$(DESTDIR)$(ZSHCOMPDIR)/_anima"
	install -m 0644 completions/anima.fish "$(DESTDIR)$(FISHCOMPDIR)/anima.fish"
	install -m 0755 bin/anima-crontab "$(DESTDIR)$(BINDIR)/anima-crontab"
	install -m 0755 bin/anima-loop "$(DESTDIR)$(BINDIR)/anima-loop"

uninstall: ## Remove what `make install` put under DESTDIR/PREFIX.
	rm -rf "$(DESTDIR)$(LIBDIR)"
	rm -f "$(DESTDIR)$(BINDIR)/anima" "$(DESTDIR)$(BINDIR)/anima-crontab" "$(DESTDIR)$(BINDIR)/anima-loop"
	rm -f $(patsubst man/%,"$(DESTDIR)$(MANDIR)/man1/%",$(wildcard man/*.1))
	rm -f $(patsubst man/%,"$(DESTDIR)$(MANDIR)/man5/%",$(wildcard man/*.5))
	rm -f $(patsubst man/%,"$(DESTDIR)$(MANDIR)/man7/%",$(wildcard man/*.7))
	rm -f "$(DESTDIR)$(BASHCOMPDIR)/anima" "$(DESTDIR)$(ZSHCOMPDIR)/_anima" "$(DESTDIR)$(FISHCOMPDIR)/anima.fish"

clean: ## Remove the virtualenv and caches.
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
