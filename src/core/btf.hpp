// SPDX-License-Identifier: GPL-2.0
// A reader of BTF, the kernel's own type format (include/uapi/linux/btf.h):
// the raw bytes of vmlinux's .BTF, or a module's split BTF over them,
// indexed once and then asked what kprobe_events asks of the kernel's BTF
// (kernel/trace/trace_btf.c, trace_probe.c): a function's prototype by
// name, its parameters, a type with its modifiers skipped, a struct's or
// union's member by name, anonymous structs and unions searched as the
// kernel searches them.
//
// Pure: no kernel header; the index (a type's offset by its id) is its own
// allocation; every answer points into the bytes, which the caller keeps
// for as long as it asks.
#pragma once

#include "core/owned.hpp"

#include <stddef.h>
#include <stdint.h>

namespace okp::btf {

enum class Kind : uint8_t {
	unknown = 0,
	integer = 1,
	pointer = 2,
	array = 3,
	structure = 4,
	union_ = 5,
	enumeration = 6,
	forward = 7,
	typedef_ = 8,
	volatile_ = 9,
	const_ = 10,
	restrict_ = 11,
	function = 12,
	function_proto = 13,
	variable = 14,
	datasec = 15,
	floating = 16,
	decl_tag = 17,
	type_tag = 18,
	enumeration64 = 19,
};

// struct btf_type: the size of INT, ENUM, STRUCT, UNION, DATASEC, ENUM64;
// the type of the others.
struct Type {
	uint32_t name_off;
	uint32_t info;
	uint32_t size_or_type;

	Kind kind() const { return static_cast<Kind>((info >> 24) & 0x1f); }
	uint16_t vlen() const { return static_cast<uint16_t>(info & 0xffff); }
	bool kind_flag() const { return info >> 31; }
};

struct Param {
	uint32_t name_off;
	uint32_t type;
};

struct Member {
	uint32_t name_off;
	uint32_t type;
	uint32_t offset; // bits; with the struct's kind_flag: size << 24 | offset
};

struct Array {
	uint32_t type;
	uint32_t index_type;
	uint32_t count;
};

// An INT's encoding word (BTF_INT_*).
struct Integer {
	bool is_signed;
	uint8_t bit_offset;
	uint8_t bits;
};

// A member found by name: its record, the struct (or anonymous struct or
// union) that holds it, and the bit offset of that holder in the outer
// struct.
struct FoundMember {
	const Member *member = nullptr;
	const Type *holder = nullptr;
	uint32_t holder_bits = 0;
};

class Types {
public:
	Types() = default;
	Types(const Types &) = delete;
	Types &operator=(const Types &) = delete;

	// Indexes size bytes of BTF (kept by the caller). base: vmlinux's
	// types when raw is a module's split BTF, whose ids and names continue
	// base's. 0, or a positive errno: EINVAL for bytes that are not BTF,
	// ENOMEM.
	int load(const uint8_t *raw, size_t size, const Types *base = nullptr);

	// Ids run from 1 (0 is void) to count(), base's included.
	uint32_t count() const { return first_id_ + static_cast<uint32_t>(offsets_.size()) - 1; }
	// The type of id, nullptr for void and ids out of range.
	const Type *type(uint32_t id) const;
	// A name ("" for an offset past the strings).
	const char *name(uint32_t name_off) const;
	// The first type of kind named name, or 0.
	uint32_t find(const char *name, Kind kind) const;
	// The function's prototype (BTF_KIND_FUNC_PROTO), or nullptr.
	const Type *function_proto(const char *function) const;
	// id's type past typedefs, const, volatile, restrict and type tags
	// (btf_type_skip_modifiers()); *resolved gets its id.
	const Type *skip_modifiers(uint32_t id, uint32_t *resolved = nullptr) const;

	// The records after a type, by its kind.
	static const Param *params(const Type &proto) { return reinterpret_cast<const Param *>(&proto + 1); }
	static const Member *members(const Type &holder) { return reinterpret_cast<const Member *>(&holder + 1); }
	static const Array *array(const Type &array) { return reinterpret_cast<const Array *>(&array + 1); }
	static Integer integer(const Type &integer);
	// A member's bit offset and bitfield size (0 when not a bitfield).
	static uint32_t member_bit_offset(const Type &holder, const Member &member)
	{
		return holder.kind_flag() ? member.offset & 0xffffff : member.offset;
	}
	static uint32_t member_bitfield_size(const Type &holder, const Member &member)
	{
		return holder.kind_flag() ? member.offset >> 24 : 0;
	}
	// A found member's bit offset in the struct it was looked up in.
	static uint32_t bit_offset(const FoundMember &found)
	{
		return found.holder_bits + member_bit_offset(*found.holder, *found.member);
	}

	// A struct's or union's member named name, the anonymous ones searched
	// after the named ones, the last pushed first, as the kernel's
	// btf_find_struct_member() (at most 16 deep).
	FoundMember member(const Type &holder, const char *name) const;

private:
	const uint8_t *types_ = nullptr;
	const char *strings_ = nullptr;
	uint32_t strings_size_ = 0;
	uint32_t first_id_ = 1;
	const Types *base_ = nullptr;
	OwnedArray<uint32_t> offsets_; // of each own type, in types_
};

// Whether a type is a struct or a union (btf_type_is_struct()).
inline bool is_struct(const Type *type)
{
	return type && (type->kind() == Kind::structure || type->kind() == Kind::union_);
}

} // namespace okp::btf
