// SPDX-License-Identifier: GPL-2.0
// The BTF reader (btf.hpp): the header checked, each type's record found
// once (its size follows from its kind and vlen, as the kernel's
// btf_type_size()), then lookups over the index.
#include "core/btf.hpp"

#include "core/errno.hpp"

namespace okp::btf {

namespace {

constexpr uint16_t magic = 0xeb9f;

struct Header {
	uint16_t magic;
	uint8_t version;
	uint8_t flags;
	uint32_t header_length;
	uint32_t type_offset, type_length;
	uint32_t string_offset, string_length;
};

uint32_t read32(const uint8_t *at)
{
	return static_cast<uint32_t>(at[0]) | static_cast<uint32_t>(at[1]) << 8 | static_cast<uint32_t>(at[2]) << 16 |
	       static_cast<uint32_t>(at[3]) << 24;
}

// The bytes of a type's record, the btf_type included; 0 for a kind this
// reader does not know (the bytes are then not read further).
size_t record_size(const Type &type)
{
	const size_t base = sizeof(Type), n = type.vlen();
	switch (type.kind()) {
	case Kind::integer:
	case Kind::variable:
	case Kind::decl_tag:
		return base + 4;
	case Kind::pointer:
	case Kind::forward:
	case Kind::typedef_:
	case Kind::volatile_:
	case Kind::const_:
	case Kind::restrict_:
	case Kind::function:
	case Kind::floating:
	case Kind::type_tag:
		return base;
	case Kind::array:
		return base + sizeof(Array);
	case Kind::structure:
	case Kind::union_:
	case Kind::datasec:
	case Kind::enumeration64:
		return base + n * 12;
	case Kind::enumeration:
	case Kind::function_proto:
		return base + n * 8;
	default:
		return 0;
	}
}

bool is_modifier(const Type *type)
{
	if (!type)
		return false;
	switch (type->kind()) {
	case Kind::typedef_:
	case Kind::volatile_:
	case Kind::const_:
	case Kind::restrict_:
	case Kind::type_tag:
		return true;
	default:
		return false;
	}
}

bool same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

} // namespace

int Types::load(const uint8_t *raw, size_t size, const Types *base)
{
	if (!raw || size < sizeof(Header) || (reinterpret_cast<uintptr_t>(raw) & 3))
		return error::einval;
	Header header;
	header.magic = static_cast<uint16_t>(raw[0] | raw[1] << 8);
	header.header_length = read32(raw + 4);
	header.type_offset = read32(raw + 8);
	header.type_length = read32(raw + 12);
	header.string_offset = read32(raw + 16);
	header.string_length = read32(raw + 20);
	const uint64_t body = size - static_cast<uint64_t>(header.header_length);
	if (header.magic != magic || header.header_length < sizeof(Header) || header.header_length > size ||
	    (header.header_length & 3) || (header.type_offset & 3) ||
	    static_cast<uint64_t>(header.type_offset) + header.type_length > body ||
	    static_cast<uint64_t>(header.string_offset) + header.string_length > body || !header.string_length ||
	    raw[header.header_length + header.string_offset + header.string_length - 1] != '\0')
		return error::einval;
	types_ = raw + header.header_length + header.type_offset;
	strings_ = reinterpret_cast<const char *>(raw + header.header_length + header.string_offset);
	strings_size_ = header.string_length;
	base_ = base;
	first_id_ = base ? base->count() + 1 : 1;

	// Twice over the records: how many, then where each one is.
	size_t count = 0;
	for (size_t at = 0; at < header.type_length; count++) {
		if (header.type_length - at < sizeof(Type))
			return error::einval;
		const size_t length = record_size(*reinterpret_cast<const Type *>(types_ + at));
		if (!length || length > header.type_length - at)
			return error::einval;
		at += length;
	}
	offsets_ = OwnedArray<uint32_t>::make(count);
	if (count && !offsets_)
		return error::enomem;
	for (size_t at = 0, i = 0; i < count; i++) {
		offsets_[i] = static_cast<uint32_t>(at);
		at += record_size(*reinterpret_cast<const Type *>(types_ + at));
	}
	return 0;
}

const Type *Types::type(uint32_t id) const
{
	if (id < first_id_)
		return base_ ? base_->type(id) : nullptr;
	if (id - first_id_ >= offsets_.size())
		return nullptr;
	return reinterpret_cast<const Type *>(types_ + offsets_[id - first_id_]);
}

const char *Types::name(uint32_t name_off) const
{
	// A split BTF's names continue its base's.
	if (base_) {
		if (name_off < base_->strings_size_)
			return base_->name(name_off);
		name_off -= base_->strings_size_;
	}
	return name_off < strings_size_ ? strings_ + name_off : "";
}

uint32_t Types::find(const char *wanted, Kind kind) const
{
	if (base_)
		if (const uint32_t id = base_->find(wanted, kind))
			return id;
	for (size_t i = 0; i < offsets_.size(); i++) {
		const Type *t = reinterpret_cast<const Type *>(types_ + offsets_[i]);
		if (t->kind() == kind && same(name(t->name_off), wanted))
			return first_id_ + static_cast<uint32_t>(i);
	}
	return 0;
}

const Type *Types::function_proto(const char *function) const
{
	const Type *f = type(find(function, Kind::function));
	if (!f)
		return nullptr;
	const Type *proto = type(f->size_or_type);
	return proto && proto->kind() == Kind::function_proto ? proto : nullptr;
}

const Type *Types::skip_modifiers(uint32_t id, uint32_t *resolved) const
{
	const Type *t = type(id);
	// At most as many hops as there are types: a cycle is not followed.
	for (uint32_t hops = 0; is_modifier(t) && hops <= count(); hops++) {
		id = t->size_or_type;
		t = type(id);
	}
	if (resolved)
		*resolved = id;
	return t;
}

Integer Types::integer(const Type &integer)
{
	const uint32_t word = read32(reinterpret_cast<const uint8_t *>(&integer + 1));
	return Integer{((word >> 24) & 0xf & 1) != 0, static_cast<uint8_t>((word >> 16) & 0xff),
		       static_cast<uint8_t>(word & 0xff)};
}

FoundMember Types::member(const Type &outer, const char *wanted) const
{
	struct Anonymous {
		uint32_t id;
		uint32_t bits;
	};
	constexpr int stack_max = 16; // BTF_ANON_STACK_MAX
	Anonymous stack[stack_max];
	int top = 0;
	const Type *holder = &outer;
	uint32_t holder_bits = 0;
	FoundMember found;
	if (!is_struct(holder))
		return found;
	for (;;) {
		const Member *m = members(*holder);
		for (unsigned i = 0; i < holder->vlen(); i++) {
			if (!m[i].name_off) {
				uint32_t id;
				const Type *inner = skip_modifiers(m[i].type, &id);
				if (is_struct(inner) && top < stack_max)
					stack[top++] = Anonymous{id, holder_bits + member_bit_offset(*holder, m[i])};
			} else if (same(name(m[i].name_off), wanted)) {
				found.member = &m[i];
				found.holder = holder;
				found.holder_bits = holder_bits;
				return found;
			}
		}
		if (top == 0)
			return found;
		--top;
		holder = type(stack[top].id);
		holder_bits = stack[top].bits;
		if (!is_struct(holder))
			return found;
	}
}

} // namespace okp::btf
