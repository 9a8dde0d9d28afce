# SPDX-License-Identifier: GPL-2.0
#
# Prints the pahole flags KDIR's kbuild gives every BTF it writes
# (PAHOLE_FLAGS, from its scripts/Makefile.btf and the kernel's config),
# so that okprobe's Makefile can pass kbuild the same flags with the C++
# compile units left out (see there).
#
#   make -s -f tools/kbuild-pahole-flags.mk KDIR=...
include $(KDIR)/include/config/auto.conf
include $(KDIR)/scripts/Kbuild.include
include $(KDIR)/scripts/Makefile.btf

print:
	@echo '$(PAHOLE_FLAGS)'
