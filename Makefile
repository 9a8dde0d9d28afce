# SPDX-License-Identifier: GPL-2.0
#
# okprobe: build the modules like any out-of-tree module, plus the project's
# two set-up-everything commands.
#
#   make                         okprobe.ko against KDIR (the running kernel)
#   make ARCH=riscv CROSS_COMPILE=riscv64-linux-gnu- KDIR=...   for riscv64
#   make demo [ARCH=riscv]       set up, build, boot a guest, show okprobe
#                                (Debian 13's stock kernel; KERNEL=x86,
#                                x86-rt, riscv-preempt, ... picks another)
#   make check                   every test; last line "N passed, N failed"
#   make bench [ARCH=riscv]      the per-hit cost table: okprobe against
#                                kprobes in one guest boot (not a test)
#   make host-test               the host unit tests only
#   make install                 okprobe.ko and the test modules into
#                                /lib/modules/KREL/extra (kbuild's
#                                modules_install; INSTALL_MOD_PATH=root),
#                                okprobe.h and Module.symvers for clients
#                                into $(OKPROBE_DEV_DIR)
#   make dkms-install            the tree into /usr/src/okprobe-VERSION,
#                                then dkms add, build and install
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

.PHONY: all modules clean demo check bench host-test format zydis-sources \
	install dkms-source dkms-install

# Where clients find okprobe.h and, per kernel release, okprobe's
# Module.symvers (Documentation/building.md shows a client's Kbuild).
OKPROBE_DEV_DIR ?= /usr/share/okprobe
# The release modules built against KDIR carry (Debian's headers keep the
# upstream version in include/config/kernel.release).
KERNELRELEASE_OF_KDIR = $(shell sed -n 's/.*UTS_RELEASE "\(.*\)"/\1/p' \
	$(KDIR)/include/generated/utsrelease.h)
OKPROBE_VERSION := $(shell sed -n 's/^\#define OKPROBE_API_VERSION //p' \
	include/okprobe.h).0
DKMS_SOURCE ?= /usr/src/okprobe-$(OKPROBE_VERSION)

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
	tools/demo $(ARCH) $(KERNEL)

check:
	tools/setup-host
	tools/check

bench:
	tools/setup-host
	tools/bench $(ARCH) $(if $(KERNEL),--kernel $(KERNEL))

host-test:
	tools/setup-host
	tools/host-test

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

install: modules
	$(KBUILD_MAKE) INSTALL_MOD_DIR=extra modules_install
	install -D -m 644 include/okprobe.h \
		$(INSTALL_MOD_PATH)$(OKPROBE_DEV_DIR)/include/okprobe.h
	install -D -m 644 Module.symvers \
		$(INSTALL_MOD_PATH)$(OKPROBE_DEV_DIR)/$(KERNELRELEASE_OF_KDIR)/Module.symvers

# The source DKMS builds from: the tree without git's files, Zydis's
# sources copied in (DKMS builds where Debian's source package may not be
# reachable), the version filled in.
dkms-source: $(if $(filter x86,$(ARCH)),zydis-sources)
	rm -rf '$(DKMS_SOURCE)'
	mkdir -p '$(DKMS_SOURCE)'
	cp -r Kbuild Makefile include src arch samples selftests tools \
		'$(DKMS_SOURCE)/'
	find '$(DKMS_SOURCE)' \( -name '*.o' -o -name '*.ko' -o -name '*.cmd' \
		-o -name '*.mod*' -o -name '.*.d' \) -delete
	sed 's/@VERSION@/$(OKPROBE_VERSION)/' dkms.conf > '$(DKMS_SOURCE)/dkms.conf'

dkms-install: dkms-source
	dkms add okprobe/$(OKPROBE_VERSION)
	dkms build okprobe/$(OKPROBE_VERSION)
	dkms install okprobe/$(OKPROBE_VERSION)

clean:
	-[ ! -d "$(KDIR)" ] || $(KBUILD_MAKE) clean
	rm -rf arch/x86/zydis build
