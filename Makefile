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

ARCH ?= $(shell uname -m)
# As kbuild's SRCARCH names it (DKMS may pass uname's x86_64).
override ARCH := $(subst x86_64,x86,$(subst riscv64,riscv,$(ARCH)))
ifeq ($(ARCH),riscv)
ifneq ($(shell uname -m),riscv64)
CROSS_COMPILE ?= riscv64-linux-gnu-
endif
endif
KDIR ?= /lib/modules/$(shell uname -r)/build
OKPROBE_CACHE ?= $(HOME)/.cache/okprobe
export OKPROBE_CACHE

# pahole cannot write BTF for C++ (it stops at DW_TAG_reference_type).
# Where KDIR's kernel makes module BTF (Debian 13's headers ship the
# vmlinux it needs) with a pahole that can leave languages out, kbuild is
# given its own pahole flags (tools/kbuild-pahole-flags.mk reads them from
# its scripts/Makefile.btf) with the C++ core's compile units left out at
# their end: pahole takes the last --lang_exclude. That is kbuild's
# command line, because Makefile.modfinal reads no Kbuild file, and the
# whole PAHOLE_FLAGS, because 6.x kernels add module flags of their own
# beside it (MODULE_PAHOLE_FLAGS) and 7.x ones pass modules only it.
okprobe-kconfig = $(shell sed -n 's/^$(1)="\{0,1\}\([^"]*\)"\{0,1\}$$/\1/p' $(KDIR)/include/config/auto.conf 2>/dev/null)
ifeq ($(call okprobe-kconfig,CONFIG_DEBUG_INFO_BTF_MODULES)$(call okprobe-kconfig,CONFIG_PAHOLE_HAS_LANG_EXCLUDE),yy)
OKPROBE_PAHOLE_FLAGS := $(shell $(MAKE) -s --no-print-directory \
	-f $(CURDIR)/tools/kbuild-pahole-flags.mk KDIR=$(KDIR)) \
	--lang_exclude=c++,c++03,c++11,c++14,rust
endif

KBUILD_MAKE = $(MAKE) -C $(KDIR) M=$(CURDIR) ARCH=$(ARCH) \
	CROSS_COMPILE=$(CROSS_COMPILE) \
	$(if $(OKPROBE_PAHOLE_FLAGS),PAHOLE_FLAGS="$(strip $(OKPROBE_PAHOLE_FLAGS))")

.PHONY: all modules clean demo check check-debug soak bench host-test fuzz format zydis-sources \
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
	KDIR=$(KDIR) tools/check-module-sections $(ARCH) $(CROSS_COMPILE)
	tools/check-handler-paths $(ARCH) $(CROSS_COMPILE)

# Zydis comes from Debian's source package, never from the repository. A
# DKMS source (make dkms-source) carries its copy, marked .okprobe-bundled:
# DKMS builds where Debian's source packages may not be reachable.
ZYDIS_DIR ?= $(shell tools/fetch-zydis)
zydis-sources:
ifeq ($(wildcard arch/x86/zydis/.okprobe-bundled),)
	@tools/prepare-zydis "$(ZYDIS_DIR)" arch/x86/zydis
endif

demo:
	tools/setup-host --demo
	tools/demo $(ARCH) $(KERNEL)

check:
	tools/setup-host
	tools/check

# The sanitizer kernels' whole suite (tools/check's x86-debug and
# riscv-debug): not in make check's 20 minutes yet.
check-debug:
	tools/setup-host
	tools/check --whole --only x86-debug --only riscv-debug

# okptest's soak on both sanitizer kernels at once, HOURS long (1 by
# default; fractions too: HOURS=0.1): random probe, event, sysctl, tracer
# and client-module operations under load, then nothing left and the text
# as it was (testing.md, "The soak").
HOURS ?= 1
soak:
	tools/setup-host
	tools/check --soak-hours $(HOURS) --only x86-debug --only riscv-debug

bench:
	tools/setup-host
	tools/bench $(ARCH) $(if $(KERNEL),--kernel $(KERNEL))

host-test:
	tools/setup-host
	tools/host-test

# The long fuzz runs (tools/fuzz): COUNT random encodings for the riscv
# decoder against objdump, from SEED (default: the time).
fuzz:
	tools/setup-host
	tools/fuzz $(if $(COUNT),--count $(COUNT)) $(if $(SEED),--seed $(SEED))

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp')

# Debian's headers do not ship the kernel's signing key: kbuild would try
# to sign each module with it anyway (CONFIG_MODULE_SIG_ALL) and print an
# error for each. Where the key is missing, modules are installed unsigned,
# as kbuild does for external modules after that error; DKMS signs with
# the machine's own key (MOK) instead.
okprobe-sig-key = $(call okprobe-kconfig,CONFIG_MODULE_SIG_KEY)
okprobe-unsigned = $(if $(filter y,$(call okprobe-kconfig,CONFIG_MODULE_SIG_ALL)),$(if \
	$(wildcard $(if $(filter /%,$(okprobe-sig-key)),,$(KDIR)/)$(okprobe-sig-key)),,CONFIG_MODULE_SIG_ALL=))

# Installed modules carry no debug information, as Debian's kernel
# packages' and DKMS's do (kbuild's INSTALL_MOD_STRIP: strip --strip-debug
# before signing and compressing): it is 5 of okprobe.ko's 6 MB, and a
# compressed module is decompressed on every load, 2 s of TCG time on
# Debian 13. The build tree's okprobe.ko keeps it for gdb and crash;
# "make install INSTALL_MOD_STRIP=" installs that one.
INSTALL_MOD_STRIP ?= 1

install: modules
	$(KBUILD_MAKE) INSTALL_MOD_DIR=extra INSTALL_MOD_STRIP=$(INSTALL_MOD_STRIP) \
		$(okprobe-unsigned) modules_install
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
	[ ! -d '$(DKMS_SOURCE)/arch/x86/zydis' ] || \
		touch '$(DKMS_SOURCE)/arch/x86/zydis/.okprobe-bundled'

dkms-install: dkms-source
	dkms add okprobe/$(OKPROBE_VERSION)
	dkms build okprobe/$(OKPROBE_VERSION)
	dkms install okprobe/$(OKPROBE_VERSION)

clean:
	-[ ! -d "$(KDIR)" ] || $(KBUILD_MAKE) clean
	rm -rf arch/x86/zydis build
