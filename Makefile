# make demo: kernels (vector add, tiled matmul, LDS reduction) compiled by clang-22, run on the mock GPU through
#            the runtime, checked against numpy and timed; a Perfetto trace in usergpu-demo-trace.json; then the
#            GPUs found and a kernel disassembled for each ISA.
# make test: install what is missing, then run the tests.
# Both are idempotent and work from a fresh clone (Debian; root or sudo for apt-get).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# the C toolchain and headers the bindings are generated from and ABI-checked against
APT_PACKAGES := gcc g++ clang-22 lld-22 llvm-22 llvm-22-dev libclang1-22 python3-clang-22 libclc-22 \
                libdrm-dev linux-libc-dev libhsa-runtime-dev linux-source-6.12
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: demo test setup apt venv firmware lint autogen-check

# make demo DEMO_DEV=MOCKPCI+AMD: the same showcase on AM and the register-level mock GPU (DEMO_DEV=MOCK+NV: in CUDA
# C, assembled by ptxas, on the mock NVIDIA GPU of MOCKGPU_NV_ARCH);
# make demo MOCKGPU_ARCH=gfx942 (or gfx950): on a mock MI300X (MI350X), with an MFMA matmul on its matrix cores
DEMO_DEV ?= MOCKKFD+AMD
demo: setup
	$(BIN)/usergpu demo --dev $(DEMO_DEV)

test: setup
	$(BIN)/python -m pytest -n auto

setup: apt venv firmware nvidia-sources

# GPU firmware for the AM driver (and, seeded into its cache, tinygrad's): Debian's firmware-amd-graphics (component
# non-free-firmware) from the newest suite that carries it (sid and trixie-backports listed: apt takes the highest
# version; bookworm's has no gfx12 firmware), fetched with a private apt list of that component and unpacked into the
# cache with dpkg -x, never installed system-wide. The stamp names the suites, so a cache of an older list is redone.
CACHE := $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/usergpu
FIRMWARE := $(CACHE)/firmware
FW_APT := $(CACHE)/apt-non-free-firmware
FW_OPTS := -o Dir::Etc::sourcelist=$(FW_APT)/non-free-firmware.sources -o Dir::Etc::sourceparts=- \
           -o Dir::State::Lists=$(FW_APT)/lists -o Dir::Cache=$(FW_APT)/cache -o Dir::Cache::Archives=$(FW_APT)/archives
FW_SUITES := sid trixie-backports
FW_STAMP := $(FIRMWARE)/.stamp-$(subst $(eval) ,-,$(FW_SUITES))
firmware: $(FW_STAMP)

$(FW_STAMP):
	mkdir -p $(FW_APT)/lists/partial $(FW_APT)/archives/partial $(FW_APT)/cache
	printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: non-free-firmware\nSigned-By: %s\n' \
	    "$(FW_SUITES)" /usr/share/keyrings/debian-archive-keyring.gpg > $(FW_APT)/non-free-firmware.sources
	apt-get -qq $(FW_OPTS) update
	cd $(FW_APT) && rm -f firmware-amd-graphics_*.deb && apt-get -qq $(FW_OPTS) download firmware-amd-graphics
	rm -rf $(FIRMWARE) && dpkg -x $(FW_APT)/firmware-amd-graphics_*.deb $(FIRMWARE)
	touch $@

# NVIDIA's headers (NV.md) for the generator and its ABI tests, one tree per driver release bound: the RM SDK, UVM
# and ioctl headers of Debian's source package nvidia-open-gpu-kernel-modules (contrib) where Debian's mirror has
# the release (fetched with a private deb-src list), otherwise NVIDIA's own release tree from NV_HEADERS (one
# open-gpu-kernel-modules-<release>.tar.xz each, as ../shared/nvidia holds them: NVIDIA publishes them at
# github.com/NVIDIA/open-gpu-kernel-modules), and open-gpu-doc's class and QMD headers from the same folder. Only
# what the generator reads is unpacked into the cache. Only Debian's upstream tarballs are used: a mirror that
# lacks a package's .dsc or Debian patches fails apt-get's download but keeps the tarball, and tar stops where a
# tarball itself is missing.
NV_SOURCES := $(CACHE)/nvidia-sources
NV_APT := $(CACHE)/apt-nvidia-sources
NV_OPTS := -o Dir::Etc::sourcelist=$(NV_APT)/nvidia.sources -o Dir::Etc::sourceparts=- \
           -o Dir::State::Lists=$(NV_APT)/lists -o Dir::Cache=$(NV_APT)/cache
NV_DEBIAN := 535.261.03-1 555.58.02-2
NV_HEADERS ?= ../shared/nvidia
NV_UPSTREAM := 550.163.01 560.35.03 565.77 570.211.01 575.64.05 580.142 590.48.01 595.45.04
NV_DOC := open-gpu-doc-c8607fe
NV_TREE := src/common/sdk/nvidia/inc src/nvidia/arch/nvalloc/unix/include src/nvidia/generated/g_allclasses.h \
           src/nvidia/generated/g_gpu_class_list.c kernel-open/common/inc kernel-open/nvidia-uvm/uvm_ioctl.h \
           kernel-open/nvidia-uvm/uvm_linux_ioctl.h kernel-open/nvidia-uvm/uvm_types.h
NV_STAMP := $(NV_SOURCES)/.stamp-$(words $(NV_DEBIAN) $(NV_UPSTREAM))-$(NV_DOC)
.PHONY: nvidia-sources
nvidia-sources: $(NV_STAMP)

$(NV_STAMP):
	@test -f $(NV_HEADERS)/$(NV_DOC)-classes.tar.xz || { echo "NV_HEADERS=$(NV_HEADERS) holds no NVIDIA release" \
	    "trees (open-gpu-kernel-modules-<release>.tar.xz, $(NV_DOC)-classes.tar.xz; NVIDIA publishes them at" \
	    "github.com/NVIDIA/open-gpu-kernel-modules and github.com/NVIDIA/open-gpu-doc)"; exit 1; }
	mkdir -p $(NV_APT)/lists/partial $(NV_APT)/cache $(NV_APT)/src
	printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: %s\nSigned-By: %s\n' \
	    'bookworm experimental' contrib /usr/share/keyrings/debian-archive-keyring.gpg > $(NV_APT)/nvidia.sources
	apt-get -qq $(NV_OPTS) update
	cd $(NV_APT)/src && { apt-get -qq $(NV_OPTS) source --download-only \
	    $(NV_DEBIAN:%=nvidia-open-gpu-kernel-modules=%) || true; }
	rm -rf $(NV_SOURCES) && mkdir -p $(NV_SOURCES)
	for r in $(NV_DEBIAN); do v=$${r%-*}; d=$(NV_SOURCES)/nvidia-open-gpu-kernel-modules-$$v; mkdir -p $$d && \
	    tar -xJf $(NV_APT)/src/nvidia-open-gpu-kernel-modules_$$v.orig.tar.xz -C $$d --strip-components=1 \
	        $(NV_TREE:%=NVIDIA-kernel-module-source-$$v/%) || exit 1; done
	for v in $(NV_UPSTREAM); do d=$(NV_SOURCES)/nvidia-open-gpu-kernel-modules-$$v; mkdir -p $$d && \
	    tar -xJf $(NV_HEADERS)/open-gpu-kernel-modules-$$v.tar.xz -C $$d --strip-components=1 \
	        $(NV_TREE:%=open-gpu-kernel-modules-$$v/%) || exit 1; done
	tar -xJf $(NV_HEADERS)/$(NV_DOC)-classes.tar.xz -C $(NV_SOURCES)
	touch $@

apt:
	@missing=$$(for p in $(APT_PACKAGES); do \
	    dpkg-query -W -f='$${db:Status-Status}' $$p 2>/dev/null | grep -qx installed || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	    echo "apt-get install:" $$missing; \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

venv: $(VENV)/.stamp-installed

$(VENV)/.stamp-installed: pyproject.toml
	[ -x $(BIN)/python ] || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev,tinygrad,nv]'
	touch $@

lint: venv
	$(BIN)/ruff check .

autogen-check: setup
	$(BIN)/python -m usergpu.autogen --check
