# The two commands of the README: `make run` and `make test`. Each sets up what it needs.
VENV   ?= .venv
PY     := $(VENV)/bin/python
PRAXIS := $(VENV)/bin/praxis
FLOW   ?= flows/sales-report
# Two workers on the suite (pytest-xdist), tests handed out one by one: most of a docker test
# is waiting on a container, so the other worker's test runs meanwhile.
PYTEST_ARGS ?= -n 2 --dist worksteal --durations=25

.PHONY: run test test-fast image lint docs bench bench-smoke clean

$(VENV)/.installed: pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev,ray,mcp]'
	touch $@

# The sandbox image, when a Docker daemon answers (a content-hash tag: seconds when unchanged).
image: $(VENV)/.installed
	@if $(PY) -c "import sys; from sandbox.daemon import available as d; sys.exit(d() is not None)"; then \
		$(PRAXIS) sandbox build; \
	elif [ "$${PRAXIS_REQUIRE_DOCKER:-0}" = "1" ]; then \
		echo "PRAXIS_REQUIRE_DOCKER=1 but no Docker daemon answers: start dockerd" >&2; exit 5; \
	else \
		echo "no Docker daemon: flows run on local kernels (no isolation); start dockerd for the sandbox" >&2; \
	fi

run: image
	$(PRAXIS) run $(FLOW)

# pytest's exit 5 ("no tests ran") is a failure here, never a success.
test: image
	@$(VENV)/bin/pytest $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; exit $$rc

# The pure and fake-sandbox layers only: no Docker, no browser, no real kernel (seconds).
FAST = tests/flows/test_state.py tests/flows/test_state_events.py tests/flows/test_route.py \
	tests/flows/test_events.py tests/flows/test_kinds.py tests/llm/test_loop.py \
	tests/flows/test_route_states.py tests/flows/test_facts.py tests/flows/test_trace.py \
	tests/flows/test_lock.py tests/flows/test_runner.py tests/flows/test_decisions.py \
	tests/flows/test_layout.py tests/flows/test_snapshot.py tests/flows/test_state_file.py \
	tests/flows/test_collect.py tests/flows/test_phase.py \
	tests/flows/test_contract.py tests/sandbox/test_fake.py tests/sandbox/test_factory.py \
	tests/sandbox/test_paths.py tests/sandbox/test_tree.py tests/test_errors.py tests/web/test_refusals.py \
	tests/sandbox/test_workspace.py tests/sandbox/test_standby.py tests/sandbox/test_client.py \
	tests/sandbox/test_ray_cluster.py \
	tests/flows/test_params.py tests/sandbox/test_files.py tests/sandbox/test_cgroup.py \
	tests/flows/test_edits.py tests/flows/test_safe_yaml.py tests/flows/test_sandbox_config.py \
	tests/flows/test_reconcile.py tests/flows/test_notebook_check.py tests/flows/test_definition.py \
	tests/flows/test_yaml_values.py tests/flows/test_receipt.py tests/flows/test_status.py \
	tests/flows/test_carry.py tests/flows/test_notify.py tests/flows/test_profile.py tests/flows/test_checks.py \
	tests/flows/test_handle.py tests/flows/test_handout.py tests/flows/test_opening.py \
	tests/test_console.py tests/sources/test_source.py \
	tests/reliability/test_bad_input.py
test-fast: $(VENV)/.installed
	@$(VENV)/bin/pytest -q -m "not docker and not browser and not ray" $(FAST) $(PYTEST_ARGS); \
	rc=$$?; if [ $$rc -eq 5 ]; then echo "pytest ran no tests: failing" >&2; exit 1; fi; exit $$rc

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check praxis sandbox tests benchmarks tools
	$(VENV)/bin/ruff format --check praxis sandbox tests benchmarks tools
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy --strict tools
	$(VENV)/bin/lint-imports --no-cache
	$(PY) tools/house.py  # cycles, local imports, module size, O_NOFOLLOW's one home, no self-skip
	$(PY) -m tests.lint_command_lines  # one builder of command lines (praxis/command_line.py)

# The documentation site in site/ (mkdocs.yml): --strict fails on a broken link, a page
# outside the nav or a reference page the code can no longer write (docs/hooks/reference.py).
docs: $(VENV)/.installed
	$(VENV)/bin/ruff check docs/hooks
	$(VENV)/bin/ruff format --check docs/hooks
	$(VENV)/bin/mypy docs/hooks/reference.py
	$(VENV)/bin/mkdocs build --strict

bench: image
	$(PY) -m benchmarks.compare

# The benchmarks in their quickest form, so they cannot rot unnoticed: one round of the quick
# commands and the 5-phase flow (fresh and reused); the figures are printed, never asserted.
bench-smoke: image
	$(PY) -m benchmarks.compare --repeats 1 --only quick --only pipeline --results "$${TMPDIR:-/tmp}/praxis-bench"
	$(PY) -m benchmarks.web_table 20000  # the Gate page's steps answer (a refused step fails it)

clean:
	rm -rf flows/*/runs flows/*/run.lock .pytest_cache
