/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's own x86 instruction decoder (tools/arch/x86/lib/insn.c,
 * from Debian's linux-source-6.1 through tools/fetch-kernel-insn) behind a
 * plain C struct, so that C++ tests can read an instruction as the
 * kernel's kprobes and objtool read it without its headers.
 */
#ifndef OKPROBE_KERNEL_INSN_READER_H
#define OKPROBE_KERNEL_INSN_READER_H

#ifdef __cplusplus
extern "C" {
#endif

struct kernel_insn_reading {
	int decoded;		  /* insn_decode() returned 0 */
	int length;
	int rip_relative;	  /* insn_rip_relative() */
	int displacement_offset;  /* insn_offset_displacement() */
	long long displacement;	  /* sign-extended */
	int immediate_offset;	  /* insn_offset_immediate() */
	int immediate_bytes;
	long long immediate;	  /* sign-extended, the first immediate */
	unsigned char opcode[3];
	int opcode_bytes;
	int vex;		  /* a VEX, EVEX or XOP prefix: opcode[] lacks its map */
	int mandatory_prefix;	  /* a 66, f2 or f3 prefix before the opcode */
	unsigned char last_prefix; /* the legacy prefix nearest the opcode */
	int no_attribute;	  /* insn.c's map has no entry for the opcode */
};

/* Reads the 64-bit-mode instruction at bytes (at most available of them). */
void kernel_insn_read(const unsigned char *bytes, int available,
		      struct kernel_insn_reading *reading);

#ifdef __cplusplus
}
#endif

#endif
