# SPDX-License-Identifier: GPL-2.0
#
# okprobe: build the modules like any out-of-tree module, plus the project's
# two set-up-everything commands.
#
#   make                         okprobe.ko against KDIR (the running kernel)
#   make ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- KDIR=...   for riscv64
#   make demo [ARCH=riscv]       set up, build, boot a guest, show okprobe
#   make check                   every test; last line "N passed, N failed"
#   make bench [ARCH=riscv]      the per-hit cost table: okprobe against
#                                kprobes in one guest boot (not a test)
#   make host-test               the host unit tests only
#
# Big downloads and builds are cached in $(OKPROBE_CACHE), outside the tree.

ARCH ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/riscv64/riscv/')
ifeq ($(ARCH),riscv)
ifneq ($(shell uname -m),riscv64)
CROSS_COMPILE ?= riscv64-linux-gnu-
endif
endif
KDIR ?= /lib/modules/$(shell uname -r)/build
OKPROBE_CACHE ?= $(HOME)/.cache/okprobe
export OKPROBE_CACHE

KBUILD_MAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) ARCH=$(ARCH) \
	CROSS_COMPILE=$(CROSS_COMPILE)

.PHONY: all modules clean demo check bench host-test format zydis-sources

all: modules

modules: $(if $(filter x86,$(ARCH)),zydis-sources)
	$(KBUILD_MAKE) modules
	tools/check-module-sections $(ARCH) $(CROSS_COMPILE)
	tools/check-handler-paths $(ARCH) $(CROSS_COMPILE)

# Zydis comes from Debian's source package, never from the repository.
ZYDIS_DIR ?= $(shell tools/fetch-zydis)
zydis-sources:
	@tools/prepare-zydis "$(ZYDIS_DIR)" arch/x86/zydis

demo:
	tools/setup-host
	tools/demo $(ARCH)

check:
	tools/setup-host
	tools/check

bench:
	tools/setup-host
	tools/bench $(ARCH)

host-test:
	tools/setup-host
	tools/host-test

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

clean:
	-[ ! -d "$(KDIR)" ] || $(KBUILD_MAKE) clean
	rm -rf arch/x86/zydis build
