// SPDX-License-Identifier: GPL-2.0
// The BTF reader (src/core/btf.cpp) over a Debian stock kernel's own .BTF
// (OKPROBE_X86_VMLINUX, tools/check's kernel-bytes stage: 6.1 and 6.12
// amd64): every function's prototype and parameter types resolve, and the
// answers kprobe_events' BTF grammar needs come out as the kernel's
// headers have them (vfs_read's parameters, ksys_read's ssize_t, struct
// file's f_pos, sk_buff's next inside its anonymous union); and 7.3's
// typecast and $current lines of okprobe_events read the kernel's own
// task_struct as its kprobe_syntax_errors.tc expects.
#include "core/btf.hpp"
#include "core/probe_events.hpp"
#include "kprobe_syntax_errors_73.hpp"

#include <gtest/gtest.h>

#include <elf.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

namespace {

using okp::btf::Kind;
using okp::btf::Types;

// The .BTF section of the vmlinux, 4-byte aligned; empty without one.
const std::vector<uint32_t> &kernel_btf(size_t *size)
{
	static std::vector<uint32_t> btf;
	static size_t bytes;
	static bool loaded;
	*size = bytes;
	if (loaded)
		return btf;
	loaded = true;
	const char *path = std::getenv("OKPROBE_X86_VMLINUX");
	if (!path)
		return btf;
	std::ifstream file(path, std::ios::binary);
	const std::vector<char> image((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
	if (image.size() < sizeof(Elf64_Ehdr))
		return btf;
	Elf64_Ehdr header;
	memcpy(&header, image.data(), sizeof(header));
	if (header.e_shoff + static_cast<uint64_t>(header.e_shnum) * sizeof(Elf64_Shdr) > image.size())
		return btf;
	std::vector<Elf64_Shdr> sections(header.e_shnum);
	memcpy(sections.data(), image.data() + header.e_shoff, header.e_shnum * sizeof(Elf64_Shdr));
	const Elf64_Shdr &names = sections.at(header.e_shstrndx);
	for (const Elf64_Shdr &section : sections) {
		if (names.sh_offset + section.sh_name >= image.size() ||
		    strcmp(image.data() + names.sh_offset + section.sh_name, ".BTF") ||
		    section.sh_offset + section.sh_size > image.size())
			continue;
		btf.resize((section.sh_size + 3) / 4);
		memcpy(btf.data(), image.data() + section.sh_offset, section.sh_size);
		bytes = *size = section.sh_size;
	}
	return btf;
}

const Types *kernel_types()
{
	static Types types;
	static int loaded = -1;
	if (loaded < 0) {
		size_t size;
		const std::vector<uint32_t> &btf = kernel_btf(&size);
		loaded = btf.empty() ? 1 : types.load(reinterpret_cast<const uint8_t *>(btf.data()), size);
	}
	return loaded == 0 ? &types : nullptr;
}

#define KERNEL_TYPES_OR_SKIP(types)                                                                                    \
	const Types *types = kernel_types();                                                                           \
	if (!types)                                                                                                    \
		GTEST_SKIP() << "no OKPROBE_X86_VMLINUX with a .BTF section";

TEST(KernelBtf, EveryFunctionsPrototypeAndParametersResolve)
{
	KERNEL_TYPES_OR_SKIP(types);
	unsigned functions = 0, params = 0;
	for (uint32_t id = 1; id <= types->count(); id++) {
		const okp::btf::Type *t = types->type(id);
		ASSERT_NE(t, nullptr) << id;
		if (t->kind() != Kind::function)
			continue;
		functions++;
		const okp::btf::Type *proto = types->type(t->size_or_type);
		ASSERT_NE(proto, nullptr) << types->name(t->name_off);
		ASSERT_EQ(proto->kind(), Kind::function_proto) << types->name(t->name_off);
		for (unsigned i = 0; i < proto->vlen(); i++, params++) {
			const okp::btf::Param &param = Types::params(*proto)[i];
			// A variadic function's last parameter is type 0, unnamed.
			if (param.type) {
				EXPECT_NE(types->skip_modifiers(param.type), nullptr) << types->name(t->name_off);
			}
		}
	}
	std::cout << "x86 BTF: " << types->count() << " types, " << functions << " functions, " << params
		  << " parameters\n";
	EXPECT_GT(functions, 20000u);
}

TEST(KernelBtf, AnswersAsTheKernelsHeaders)
{
	KERNEL_TYPES_OR_SKIP(types);
	// ssize_t vfs_read(struct file *file, char __user *buf, size_t count, loff_t *pos)
	const okp::btf::Type *vfs_read = types->function_proto("vfs_read");
	ASSERT_NE(vfs_read, nullptr);
	ASSERT_EQ(vfs_read->vlen(), 4);
	const char *expected[] = {"file", "buf", "count", "pos"};
	for (unsigned i = 0; i < 4; i++)
		EXPECT_STREQ(types->name(Types::params(*vfs_read)[i].name_off), expected[i]);
	const okp::btf::Type *count = types->skip_modifiers(Types::params(*vfs_read)[2].type);
	ASSERT_EQ(count->kind(), Kind::integer);
	EXPECT_EQ(Types::integer(*count).bits, 64);
	EXPECT_FALSE(Types::integer(*count).is_signed);
	const okp::btf::Type *returns = types->skip_modifiers(vfs_read->size_or_type);
	ASSERT_EQ(returns->kind(), Kind::integer);
	EXPECT_TRUE(Types::integer(*returns).is_signed);

	// file->f_pos: a pointer to struct file, which has f_pos.
	const okp::btf::Type *file = types->skip_modifiers(Types::params(*vfs_read)[0].type);
	ASSERT_EQ(file->kind(), Kind::pointer);
	const okp::btf::Type *structure = types->skip_modifiers(file->size_or_type);
	ASSERT_TRUE(okp::btf::is_struct(structure));
	EXPECT_NE(types->member(*structure, "f_pos").member, nullptr);
	EXPECT_EQ(types->member(*structure, "f_no_such_member").member, nullptr);

	// sk_buff's next lies in an anonymous union's anonymous struct.
	const okp::btf::Type *skb = types->type(types->find("sk_buff", Kind::structure));
	ASSERT_NE(skb, nullptr);
	const okp::btf::FoundMember next = types->member(*skb, "next");
	ASSERT_NE(next.member, nullptr);
	EXPECT_NE(next.holder, skb);
	EXPECT_EQ(Types::member_bit_offset(*next.holder, *next.member) + next.holder_bits, 0u);
}

// 7.3's grammar over the kernel's own BTF: its selftest's typecast lines
// get their class, errno and caret (in_execve is a bitfield, se a struct
// with group_node), and typecasts and $current load at task_struct's
// offsets.
TEST(KernelBtf, TypecastsAndCurrentReadTheKernelsTaskStruct)
{
	KERNEL_TYPES_OR_SKIP(types);
	using namespace okp::events;
	ParseContext context;
	context.btf_arguments = true;
	context.btf = types;
	context.return_arguments = true;
	context.nested_arguments = true;
	context.typecasts = true;
	context.current_task = true;
	auto parse = [&](const std::string &line, Definition &definition) {
		return parse_line(line.data(), line.size(), context, definition);
	};
	const auto definition = std::make_unique<Definition>();
	for (const auto &c : okp::host::kprobe_syntax_typecast_errors_73) {
		std::string line = c.marked;
		const size_t caret = line.find('^');
		line.erase(caret, 1);
		const ParseResult result = parse(line, *definition);
		EXPECT_EQ(result.error, c.error) << c.marked << ": " << error_text(result.error);
		EXPECT_EQ(result.error_number, c.error_number) << c.marked;
		EXPECT_EQ(result.column, caret) << c.marked;
	}

	const okp::btf::Type *task = types->type(types->find("task_struct", Kind::structure));
	ASSERT_NE(task, nullptr);
	auto offset_of = [&](const char *member) {
		const okp::btf::FoundMember found = types->member(*task, member);
		EXPECT_NE(found.member, nullptr) << member;
		return found.member ? static_cast<int64_t>(Types::bit_offset(found) / 8) : -1;
	};
	const int64_t pid = offset_of("pid"), tasks = offset_of("tasks");
	std::cout << "x86 BTF: task_struct's pid at " << pid << ", tasks at " << tasks << "\n";
	ASSERT_TRUE(parse("p vfs_read (task_struct)file->pid", *definition).ok());
	const Argument &cast = definition->args[0];
	ASSERT_EQ(cast.step_count, 2);
	EXPECT_EQ(cast.steps[0].op, Op::argument);
	EXPECT_EQ(cast.steps[1].op, Op::dereference);
	EXPECT_EQ(cast.steps[1].value, pid);
	EXPECT_EQ(cast.kind, okp::events::Kind::signed_integer); // pid_t
	EXPECT_EQ(cast.size, 4);
	ASSERT_TRUE(parse("p vfs_read (task_struct,tasks)file->pid", *definition).ok());
	EXPECT_EQ(definition->args[0].steps[1].value, pid - tasks);
	ASSERT_TRUE(parse("p vfs_read+4 $current->pid", *definition).ok());
	EXPECT_EQ(definition->args[0].steps[0].op, Op::current_task);
	EXPECT_EQ(definition->args[0].steps[1].value, pid);
	// in_execve: a bitfield member, its bit cut out of its type's bytes.
	ASSERT_TRUE(parse("p vfs_read $current->in_execve", *definition).ok());
	EXPECT_EQ(definition->args[0].bit_width, 1);
}

} // namespace
