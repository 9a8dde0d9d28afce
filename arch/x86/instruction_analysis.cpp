// SPDX-License-Identifier: GPL-2.0
// What a probe does with the x86-64 instruction it displaces, from Zydis's
// decoding (instruction_analysis.hpp says what each answer means): a
// refusal, an emulation (every branch, ret and flag instruction), or a copy
// run out of line; the instruction as the exit census sees it (exit_step);
// and each refusal's text.
#include "x86/instruction_analysis.hpp"

#include "x86/instruction_decoder.hpp"
#include "x86/plain_instructions.hpp"
#include "x86/zydis_decode.hpp"

namespace okp::x86 {
namespace {

constexpr uint8_t rm_rip_relative = 5;

Analysis refused(Refusal refusal, uint8_t length = 0)
{
	Analysis analysis;
	analysis.length = length;
	analysis.execution = Execution::refuse;
	analysis.refusal = refusal;
	return analysis;
}

Analysis emulated(uint8_t length)
{
	Analysis analysis;
	analysis.length = length;
	analysis.execution = Execution::emulate;
	analysis.refusal = Refusal::none;
	return analysis;
}

Analysis flag_instruction(uint8_t length, FlagOperation operation)
{
	Analysis analysis = emulated(length);
	analysis.flag_operation = operation;
	return analysis;
}

bool may_be_thunk(const Thunks &thunks, uint64_t target)
{
	return target >= thunks.lowest && target <= thunks.highest;
}

// Register number (0-15) of a thunk at target, or -1.
int indirect_thunk_register(const Thunks &thunks, uint64_t target)
{
	if (!may_be_thunk(thunks, target))
		return -1;
	for (int reg = 0; reg < 16; ++reg)
		if (thunks.indirect_thunk[reg] != 0 && thunks.indirect_thunk[reg] == target)
			return reg;
	return -1;
}

// Register number (0-15) of a jump-only thunk variant at target, or -1.
int indirect_jump_thunk_register(const Thunks &thunks, uint64_t target)
{
	if (!may_be_thunk(thunks, target))
		return -1;
	for (const auto &variant : thunks.indirect_jump_thunk_variants)
		for (int reg = 0; reg < 16; ++reg)
			if (variant[reg] != 0 && variant[reg] == target)
				return reg;
	return -1;
}

// A relative jump (conditional or not): into a thunk it is a return or an
// indirect jump in disguise.
void set_jump_target(Analysis &analysis, const Thunks &thunks, uint64_t target)
{
	int reg = indirect_thunk_register(thunks, target);
	if (reg < 0)
		reg = indirect_jump_thunk_register(thunks, target);
	if (thunks.return_thunk != 0 && target == thunks.return_thunk) {
		analysis.transfer = Transfer::ret;
	} else if (reg >= 0) {
		analysis.transfer = Transfer::jump_register;
		analysis.reg = static_cast<uint8_t>(reg);
	} else {
		analysis.transfer = Transfer::jump;
		analysis.target = target;
	}
}

// A relative jmp or call to target (64-bit operand): a call into an
// indirect thunk calls through its register.
Analysis relative_jump_or_call(uint8_t length, bool is_call, uint64_t target, const Thunks &thunks)
{
	Analysis analysis = emulated(length);
	analysis.relative_branch = true;
	if (is_call) {
		const int reg = indirect_thunk_register(thunks, target);
		analysis.transfer = reg >= 0 ? Transfer::call_register : Transfer::call;
		analysis.reg = reg >= 0 ? static_cast<uint8_t>(reg) : 0;
		analysis.target = reg >= 0 ? 0 : target;
	} else {
		set_jump_target(analysis, thunks, target);
	}
	return analysis;
}

// A jcc to target: emulated on the flags' condition.
Analysis conditional_jump(uint8_t length, uint8_t condition_code, uint64_t target, const Thunks &thunks)
{
	Analysis analysis = emulated(length);
	analysis.relative_branch = true;
	analysis.condition = Condition::flags;
	analysis.condition_code = condition_code;
	set_jump_target(analysis, thunks, target);
	return analysis;
}

// ret, ret imm16 (near only): emulated, popping imm16 more bytes.
Analysis analyze_return(const ZydisDecodedInstruction &insn)
{
	const uint8_t length = insn.length;
	const bool legacy_map = insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
	if (legacy_map && (insn.opcode == 0xcb || insn.opcode == 0xca))
		return refused(Refusal::far_transfer, length);
	if (insn.operand_width != 64)
		return refused(Refusal::unsupported_prefix, length);
	Analysis analysis = emulated(length);
	analysis.transfer = Transfer::ret;
	analysis.ret_pop = insn.opcode == 0xc2 ? static_cast<uint16_t>(insn.raw.imm[0].value.u) : 0;
	return analysis;
}

// jmp and call: relative ones (through a thunk they are indirect, or a
// return), and indirect ones through a register; far or through memory
// refused.
Analysis analyze_jump_or_call(const ZydisDecodedInstruction &insn, uint64_t next, const Thunks &thunks)
{
	const uint8_t length = insn.length;
	const bool legacy_map = insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
	const bool has_modrm = insn.attributes & ZYDIS_ATTRIB_HAS_MODRM;
	const bool is_call = insn.mnemonic == ZYDIS_MNEMONIC_CALL;
	if (insn.raw.imm[0].is_relative) {
		if (insn.operand_width != 64)
			return refused(Refusal::unsupported_prefix, length);
		return relative_jump_or_call(length, is_call, next + insn.raw.imm[0].value.s, thunks);
	}
	// ff /2 call, ff /3 call far, ff /4 jmp, ff /5 jmp far
	if (!(legacy_map && insn.opcode == 0xff && has_modrm))
		return refused(Refusal::far_transfer, length);
	if (insn.raw.modrm.reg == 3 || insn.raw.modrm.reg == 5)
		return refused(Refusal::far_transfer, length);
	if (insn.raw.modrm.mod != 3) {
		// Which kind it is matters to the jump optimizer: an
		// indirect jump may land anywhere in the function.
		Analysis through_memory = refused(Refusal::indirect_through_memory, length);
		through_memory.transfer = is_call ? Transfer::call_register : Transfer::jump_register;
		return through_memory;
	}
	Analysis analysis = emulated(length);
	analysis.transfer = is_call ? Transfer::call_register : Transfer::jump_register;
	analysis.reg = static_cast<uint8_t>(insn.raw.modrm.rm | (insn.raw.rex.B << 3));
	return analysis;
}

// jcc: emulated on the flags' condition (the opcode's low nibble).
Analysis analyze_conditional_jump(const ZydisDecodedInstruction &insn, uint64_t next, const Thunks &thunks)
{
	if (insn.operand_width != 64)
		return refused(Refusal::unsupported_prefix, insn.length);
	return conditional_jump(insn.length, insn.opcode & 0x0f, next + insn.raw.imm[0].value.s, thunks);
}

// loop, loope, loopne, jrcxz: emulated on rcx (and the flags).
Analysis analyze_loop(const ZydisDecodedInstruction &insn, uint64_t next)
{
	// With an address-size prefix they count in ecx: never emitted by
	// the kernel, not emulated.
	if (insn.address_width != 64)
		return refused(Refusal::unsupported_prefix, insn.length);
	Analysis analysis = emulated(insn.length);
	analysis.relative_branch = true;
	analysis.transfer = Transfer::jump;
	analysis.target = next + insn.raw.imm[0].value.s;
	analysis.condition = insn.mnemonic == ZYDIS_MNEMONIC_LOOP     ? Condition::loop
			     : insn.mnemonic == ZYDIS_MNEMONIC_LOOPE  ? Condition::loope
			     : insn.mnemonic == ZYDIS_MNEMONIC_LOOPNE ? Condition::loopne
								      : Condition::jrcxz;
	return analysis;
}

// Any other instruction runs as a copy; one addressing relative to rip
// has its displacement fixed for where the copy is.
Analysis analyze_copied(const ZydisDecodedInstruction &insn, uint64_t next)
{
	const uint8_t length = insn.length;
	const bool has_modrm = insn.attributes & ZYDIS_ATTRIB_HAS_MODRM;
	// Anything else that is relative to ip (xbegin, ...) is not handled.
	if (insn.raw.imm[0].is_relative || insn.raw.imm[1].is_relative)
		return refused(Refusal::unsupported_relative, length);

	Analysis analysis;
	analysis.length = length;
	analysis.refusal = Refusal::none;
	analysis.execution = Execution::copy;
	if (has_modrm && insn.raw.modrm.mod == 0 && insn.raw.modrm.rm == rm_rip_relative) {
		if (insn.address_width != 64 || insn.raw.disp.size != 32)
			return refused(Refusal::unsupported_prefix, length);
		analysis.execution = Execution::copy_rip_relative;
		analysis.disp_offset = insn.raw.disp.offset;
		analysis.target = next + insn.raw.disp.value;
	}
	return analysis;
}

// The refusals and the flag instructions are decided here; every branch
// and the copied rest by the steps above.
Analysis analyze_decoded(const ZydisDecodedInstruction &insn, uint64_t address, const Thunks &thunks)
{
	const uint8_t length = insn.length;
	const bool legacy_map = insn.opcode_map == ZYDIS_OPCODE_MAP_DEFAULT;
	const uint64_t next = address + length;

	switch (insn.mnemonic) {
	case ZYDIS_MNEMONIC_INT3:
		return refused(Refusal::breakpoint, length);
	// Under IBT an indirect call or jump must land on the endbr itself:
	// an int3 or a jump over it would fault (#CP) on the next indirect
	// call. The probe moves past a function's entry pad (probe_rules).
	case ZYDIS_MNEMONIC_ENDBR64:
	case ZYDIS_MNEMONIC_ENDBR32:
		return refused(Refusal::landing_pad, length);
	case ZYDIS_MNEMONIC_INT:
	case ZYDIS_MNEMONIC_INT1:
	case ZYDIS_MNEMONIC_INTO:
		return refused(Refusal::interrupt, length);
	case ZYDIS_MNEMONIC_UD0:
	case ZYDIS_MNEMONIC_UD1:
	case ZYDIS_MNEMONIC_UD2:
		return refused(Refusal::undefined_opcode, length);
	case ZYDIS_MNEMONIC_HLT:
	case ZYDIS_MNEMONIC_IRET:
	case ZYDIS_MNEMONIC_IRETD:
	case ZYDIS_MNEMONIC_IRETQ:
	case ZYDIS_MNEMONIC_SYSRET:
	case ZYDIS_MNEMONIC_SYSEXIT:
	case ZYDIS_MNEMONIC_SYSCALL:
	case ZYDIS_MNEMONIC_SYSENTER:
		return refused(Refusal::privileged_flow, length);
	case ZYDIS_MNEMONIC_PUSHF:
	case ZYDIS_MNEMONIC_PUSHFD:
	case ZYDIS_MNEMONIC_PUSHFQ:
		return insn.operand_width == 64 ? flag_instruction(length, FlagOperation::pushf)
						: refused(Refusal::unsupported_prefix, length);
	case ZYDIS_MNEMONIC_POPF:
	case ZYDIS_MNEMONIC_POPFD:
	case ZYDIS_MNEMONIC_POPFQ:
		return insn.operand_width == 64 ? flag_instruction(length, FlagOperation::popf)
						: refused(Refusal::unsupported_prefix, length);
	case ZYDIS_MNEMONIC_CLI:
		return flag_instruction(length, FlagOperation::cli);
	case ZYDIS_MNEMONIC_STI:
		return flag_instruction(length, FlagOperation::sti);
	case ZYDIS_MNEMONIC_POP:
	case ZYDIS_MNEMONIC_MOV:
		// mov ss, r/m (8e /2) delays interrupts by one instruction: the
		// breakpoint after it in the slot would land in the shadow.
		if (legacy_map && insn.opcode == 0x8e && insn.raw.modrm.reg == 2)
			return refused(Refusal::interrupt_shadow, length);
		break;
	case ZYDIS_MNEMONIC_RET:
		return analyze_return(insn);
	case ZYDIS_MNEMONIC_JMP:
	case ZYDIS_MNEMONIC_CALL:
		return analyze_jump_or_call(insn, next, thunks);
	case ZYDIS_MNEMONIC_JO:
	case ZYDIS_MNEMONIC_JNO:
	case ZYDIS_MNEMONIC_JB:
	case ZYDIS_MNEMONIC_JNB:
	case ZYDIS_MNEMONIC_JZ:
	case ZYDIS_MNEMONIC_JNZ:
	case ZYDIS_MNEMONIC_JBE:
	case ZYDIS_MNEMONIC_JNBE:
	case ZYDIS_MNEMONIC_JS:
	case ZYDIS_MNEMONIC_JNS:
	case ZYDIS_MNEMONIC_JP:
	case ZYDIS_MNEMONIC_JNP:
	case ZYDIS_MNEMONIC_JL:
	case ZYDIS_MNEMONIC_JNL:
	case ZYDIS_MNEMONIC_JLE:
	case ZYDIS_MNEMONIC_JNLE:
		return analyze_conditional_jump(insn, next, thunks);
	case ZYDIS_MNEMONIC_LOOP:
	case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
	case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_JECXZ:
	case ZYDIS_MNEMONIC_JRCXZ:
		return analyze_loop(insn, next);
	default:
		break;
	}
	return analyze_copied(insn, next);
}

} // namespace

void bound_thunks(Thunks &thunks)
{
	uint64_t lowest = ~uint64_t(0), highest = 0;
	const auto include = [&](uint64_t address) {
		if (!address)
			return;
		lowest = address < lowest ? address : lowest;
		highest = address > highest ? address : highest;
	};
	include(thunks.return_thunk);
	for (const uint64_t address : thunks.indirect_thunk)
		include(address);
	for (const uint64_t address : thunks.return_thunk_variants)
		include(address);
	for (const auto &variant : thunks.indirect_jump_thunk_variants)
		for (const uint64_t address : variant)
			include(address);
	thunks.lowest = lowest;
	thunks.highest = highest;
}

Analysis analyze_instruction(const uint8_t *bytes, size_t available, uint64_t address, const Thunks &thunks)
{
	// A fifth of a function's instructions, four in five of those Zydis
	// would decode: the opcode says all (plain_instructions.hpp).
	const PlainBranch branch = plain_relative_branch(bytes, available);
	const uint64_t next = address + branch.length;
	switch (branch.kind) {
	case PlainBranch::Kind::none:
		break;
	case PlainBranch::Kind::jump:
	case PlainBranch::Kind::call:
		return relative_jump_or_call(branch.length, branch.kind == PlainBranch::Kind::call,
					     next + branch.displacement, thunks);
	case PlainBranch::Kind::conditional_jump:
		return conditional_jump(branch.length, branch.condition_code, next + branch.displacement, thunks);
	}
	return analyze_instruction_by_zydis(bytes, available, address, thunks);
}

Analysis analyze_instruction_by_zydis(const uint8_t *bytes, size_t available, uint64_t address, const Thunks &thunks)
{
	ZydisDecodedInstruction insn;
	if (!decode_instruction(bytes, available, &insn))
		return refused(Refusal::undecodable);
	// The #UD handler emulates it from its own address (as kprobes, okprobe
	// refuses it; the exit census sees a trap that goes on).
	if (has_emulate_prefix(bytes, available))
		return refused(Refusal::emulate_prefix, insn.length);
	return analyze_decoded(insn, address, thunks);
}

namespace {

// nop, xchg ax,ax and the multi-byte 0f 1f nops, behind 66/2e prefixes:
// what alignment pads with.
bool is_nop(const uint8_t *bytes, size_t length)
{
	size_t i = 0;
	while (i < length && (bytes[i] == 0x66 || bytes[i] == 0x2e))
		++i;
	return (i + 1 == length && bytes[i] == 0x90) || (i + 1 < length && bytes[i] == 0x0f && bytes[i + 1] == 0x1f);
}

bool is_return_thunk(const Thunks &thunks, uint64_t target)
{
	if (thunks.return_thunk && target == thunks.return_thunk)
		return true;
	for (uint64_t variant : thunks.return_thunk_variants)
		if (variant && target == variant)
			return true;
	return false;
}

} // namespace

void exit_step(const CodeRange &code, size_t offset, const Thunks &thunks, ExitStep &step)
{
	step = ExitStep{};
	if (offset >= code.size)
		return;
	const size_t left = code.size - offset;
	const uint8_t *bytes = code.bytes + offset;
	const Analysis a = analyze_instruction(bytes, left < max_instruction_length ? left : max_instruction_length,
					       code.address + offset, thunks);
	if (a.length == 0 || a.refusal == Refusal::undecodable)
		return;
	step.length = a.length;
	const bool conditional = a.condition != Condition::always;
	switch (a.transfer) {
	case Transfer::ret:
		// A jcc to the return thunk returns only when taken: an exit
		// that must evaluate flags, seen as a branch out.
		step.flow = conditional ? ExitFlow::branch : ExitFlow::returns;
		step.target = conditional ? thunks.return_thunk : 0;
		return;
	case Transfer::jump:
		if (a.refusal == Refusal::indirect_through_memory || !a.relative_branch) {
			step.flow = ExitFlow::indirect_jump;
			return;
		}
		if (!conditional && is_return_thunk(thunks, a.target)) {
			step.flow = ExitFlow::returns;
			return;
		}
		step.flow = conditional ? ExitFlow::branch : ExitFlow::jump;
		step.target = a.target;
		return;
	case Transfer::jump_register:
		step.flow = ExitFlow::indirect_jump;
		return;
	case Transfer::call:
	case Transfer::call_register:
		step.flow = ExitFlow::call;
		return;
	case Transfer::none:
		break;
	}
	switch (a.refusal) {
	case Refusal::breakpoint:
		step.flow = ExitFlow::padding;
		return;
	case Refusal::undefined_opcode:
	case Refusal::interrupt:
		step.flow = ExitFlow::trap;
		return;
	case Refusal::privileged_flow:
	case Refusal::far_transfer:
		// iret, sysret, far returns: an exit no probe can stand for.
		step.flow = ExitFlow::indirect_jump;
		return;
	default:
		break;
	}
	step.flow = is_nop(bytes, a.length) ? ExitFlow::padding : ExitFlow::next;
}

const char *refusal_text(Refusal refusal)
{
	switch (refusal) {
	case Refusal::none:
		return "probeable";
	case Refusal::undecodable:
		return "the bytes do not decode as an instruction";
	case Refusal::breakpoint:
		return "the instruction is an int3 (another breakpoint or padding)";
	case Refusal::interrupt:
		return "the instruction raises an interrupt";
	case Refusal::undefined_opcode:
		return "the instruction is a ud0/ud1/ud2 (a bug or warning trap)";
	case Refusal::privileged_flow:
		return "the instruction changes privilege or halts";
	case Refusal::far_transfer:
		return "the instruction is a far transfer";
	case Refusal::interrupt_shadow:
		return "the instruction loads ss (interrupt shadow)";
	case Refusal::indirect_through_memory:
		return "the instruction is an indirect branch through memory";
	case Refusal::rip_relative_unreachable:
		return "a rebased rip-relative displacement does not fit in 32 bits";
	case Refusal::unsupported_prefix:
		return "the instruction has an operand- or address-size prefix okprobe does not emulate";
	case Refusal::unsupported_relative:
		return "the instruction is ip-relative in a way okprobe does not handle";
	case Refusal::landing_pad:
		return "the instruction is an endbr, where indirect branches land under IBT";
	case Refusal::emulate_prefix:
		return "the instruction has a Xen or KVM emulate prefix (ud2 \"xen\"/\"kvm\")";
	}
	return "unknown refusal";
}

} // namespace okp::x86
