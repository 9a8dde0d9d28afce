// SPDX-License-Identifier: GPL-2.0
/*
 * kernel_insn_reader.h over the kernel's insn.c: what the differential
 * test compares okprobe's x86 relocation rules with.
 */
#include <string.h>
#include <asm/insn.h>

#include "kernel_insn_reader.h"

void kernel_insn_read(const unsigned char *bytes, int available,
		      struct kernel_insn_reading *reading)
{
	struct insn insn;
	int i;

	memset(reading, 0, sizeof(*reading));
	if (insn_decode(&insn, bytes, available, INSN_MODE_64))
		return;
	reading->decoded = 1;
	reading->length = insn.length;
	reading->rip_relative = insn_rip_relative(&insn);
	if (insn.displacement.nbytes) {
		reading->displacement_offset = insn_offset_displacement(&insn);
		reading->displacement = (int)insn.displacement.value;
	}
	if (insn.immediate.nbytes) {
		reading->immediate_offset = insn_offset_immediate(&insn);
		reading->immediate_bytes = insn.immediate.nbytes;
		reading->immediate = (int)insn.immediate.value;
	}
	reading->vex = insn.vex_prefix.nbytes != 0;
	reading->opcode_bytes = insn.opcode.nbytes;
	for (i = 0; i < insn.opcode.nbytes && i < 3; i++)
		reading->opcode[i] = insn.opcode.bytes[i];
	for (i = 0; i < insn.prefixes.nbytes; i++)
		if (insn.prefixes.bytes[i] == 0x66 ||
		    insn.prefixes.bytes[i] == 0xf2 ||
		    insn.prefixes.bytes[i] == 0xf3)
			reading->mandatory_prefix = 1;
	reading->no_attribute = insn.attr == 0;
	if (insn.prefixes.nbytes)
		reading->last_prefix = insn.prefixes.bytes[3] ?
			insn.prefixes.bytes[3] :
			insn.prefixes.bytes[insn.prefixes.nbytes - 1];
}
