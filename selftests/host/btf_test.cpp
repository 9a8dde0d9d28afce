// SPDX-License-Identifier: GPL-2.0
// The BTF reader (src/core/btf.cpp) on BTF made here (btf_builder.hpp):
// functions' prototypes by name, modifiers skipped, members found through
// anonymous unions as the kernel finds them, split BTF over a base, and
// bytes that are not BTF refused. btf_kernel_bytes_test.cpp reads a real
// kernel's.
#include "core/btf.hpp"

#include "btf_builder.hpp"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using okp::btf::Kind;
using okp::btf::Types;
using okp::host::BtfBuilder;

struct Sample {
	BtfBuilder b;
	uint32_t int_, uchar, char_ptr, ulong, size_t_, file, file_ptr, thing;
	std::vector<uint32_t> bytes;

	Sample()
	{
		int_ = b.integer("int", 4, true);
		uchar = b.integer("unsigned char", 1, false);
		char_ptr = b.pointer(uchar);
		ulong = b.integer("long unsigned int", 8, false);
		size_t_ = b.typedef_("size_t", ulong);
		const uint32_t mode = b.structure("", 4, {{"f_mode", int_, 0}}, true);
		file = b.structure("file", 24, {{"f_flags", int_, 0}, {"", mode, 32}, {"f_pos", ulong, 64}});
		file_ptr = b.pointer(b.const_(file));
		thing = b.function("vfs_thing", int_, {{"file", file_ptr}, {"buf", char_ptr}, {"count", size_t_}});
		bytes = b.bytes();
	}
	const uint8_t *raw() const { return reinterpret_cast<const uint8_t *>(bytes.data()); }
};

TEST(Btf, FindsAFunctionsPrototypeAndItsParameters)
{
	Sample s;
	Types types;
	ASSERT_EQ(types.load(s.raw(), s.b.size()), 0);
	EXPECT_EQ(types.count(), s.thing);
	const okp::btf::Type *proto = types.function_proto("vfs_thing");
	ASSERT_NE(proto, nullptr);
	EXPECT_EQ(proto->kind(), Kind::function_proto);
	ASSERT_EQ(proto->vlen(), 3);
	const okp::btf::Param *params = Types::params(*proto);
	EXPECT_STREQ(types.name(params[0].name_off), "file");
	EXPECT_STREQ(types.name(params[2].name_off), "count");
	EXPECT_EQ(proto->size_or_type, s.int_);
	EXPECT_EQ(types.function_proto("no_such_function"), nullptr);
	EXPECT_EQ(types.find("file", Kind::structure), s.file);
}

TEST(Btf, ModifiersAreSkippedToTheTypeBeneath)
{
	Sample s;
	Types types;
	ASSERT_EQ(types.load(s.raw(), s.b.size()), 0);
	uint32_t id = 0;
	const okp::btf::Type *count = types.skip_modifiers(s.size_t_, &id);
	ASSERT_NE(count, nullptr);
	EXPECT_EQ(id, s.ulong);
	EXPECT_EQ(count->kind(), Kind::integer);
	const okp::btf::Integer encoding = Types::integer(*count);
	EXPECT_FALSE(encoding.is_signed);
	EXPECT_EQ(encoding.bits, 64);
	EXPECT_TRUE(Types::integer(*types.type(s.int_)).is_signed);
	// The pointer's target is const struct file: struct file beneath.
	const okp::btf::Type *pointer = types.skip_modifiers(s.file_ptr);
	ASSERT_EQ(pointer->kind(), Kind::pointer);
	EXPECT_EQ(types.skip_modifiers(pointer->size_or_type, &id)->kind(), Kind::structure);
	EXPECT_EQ(id, s.file);
	EXPECT_EQ(types.type(0), nullptr);
	EXPECT_EQ(types.type(s.thing + 1), nullptr);
}

TEST(Btf, MembersAreFoundThroughAnonymousUnions)
{
	Sample s;
	Types types;
	ASSERT_EQ(types.load(s.raw(), s.b.size()), 0);
	const okp::btf::Type &file = *types.type(s.file);
	okp::btf::FoundMember pos = types.member(file, "f_pos");
	ASSERT_NE(pos.member, nullptr);
	EXPECT_EQ(Types::member_bit_offset(*pos.holder, *pos.member) + pos.holder_bits, 64u);
	okp::btf::FoundMember mode = types.member(file, "f_mode");
	ASSERT_NE(mode.member, nullptr);
	EXPECT_EQ(mode.holder_bits, 32u);
	EXPECT_EQ(types.member(file, "f_nothing").member, nullptr);
	// Not a struct: nothing.
	EXPECT_EQ(types.member(*types.type(s.int_), "f_pos").member, nullptr);
}

TEST(Btf, SplitBtfContinuesItsBasesIdsAndNames)
{
	Sample s;
	Types base;
	ASSERT_EQ(base.load(s.raw(), s.b.size()), 0);
	BtfBuilder module(base.count(), s.b.string_bytes());
	const uint32_t device = module.structure("okp_device", 8, {{"flags", s.int_, 0}});
	const uint32_t probe = module.function("okp_probe", s.int_, {{"dev", module.pointer(device)}});
	std::vector<uint32_t> bytes = module.bytes();
	Types types;
	ASSERT_EQ(types.load(reinterpret_cast<const uint8_t *>(bytes.data()), module.size(), &base), 0);
	EXPECT_EQ(types.count(), probe);
	const okp::btf::Type *proto = types.function_proto("okp_probe");
	ASSERT_NE(proto, nullptr);
	EXPECT_STREQ(types.name(Types::params(*proto)[0].name_off), "dev");
	// The base's functions and types through the module's view.
	EXPECT_NE(types.function_proto("vfs_thing"), nullptr);
	EXPECT_EQ(types.type(s.int_), base.type(s.int_));
	EXPECT_STREQ(types.name(types.type(device)->name_off), "okp_device");
}

TEST(Btf, BytesThatAreNotBtfAreRefused)
{
	Sample s;
	Types types;
	EXPECT_EQ(types.load(nullptr, 0), EINVAL);
	EXPECT_EQ(types.load(s.raw(), 10), EINVAL);
	std::vector<uint32_t> bad = s.bytes;
	bad[0] ^= 1; // the magic
	EXPECT_EQ(types.load(reinterpret_cast<const uint8_t *>(bad.data()), s.b.size()), EINVAL);
	// The type section cut inside the last record.
	bad = s.bytes;
	bad[3] -= 4; // type_len
	EXPECT_EQ(types.load(reinterpret_cast<const uint8_t *>(bad.data()), s.b.size()), EINVAL);
	// Strings past the end of the bytes.
	EXPECT_EQ(types.load(s.raw(), s.b.size() - 4), EINVAL);
	// An unknown kind stops the walk.
	bad = s.bytes;
	reinterpret_cast<uint8_t *>(bad.data())[24 + 7] = 31;
	EXPECT_EQ(types.load(reinterpret_cast<const uint8_t *>(bad.data()), s.b.size()), EINVAL);
}

} // namespace
