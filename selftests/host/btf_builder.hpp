// SPDX-License-Identifier: GPL-2.0
// BTF bytes made in a test: types and names appended one by one, then the
// header put before them (include/uapi/linux/btf.h's layout), as pahole
// writes a kernel's .BTF. For tests of the BTF reader and of what the
// okprobe_events grammar does with a function's BTF.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace okp::host {

class BtfBuilder {
public:
	// base_types/base_strings: a split BTF's base (0 for vmlinux's own).
	explicit BtfBuilder(uint32_t base_types = 0, uint32_t base_strings = 0)
	    : next_id_(base_types + 1), base_strings_(base_strings)
	{
		if (!base_strings)
			strings_.push_back('\0');
	}

	uint32_t name(const std::string &text)
	{
		if (text.empty())
			return 0;
		const uint32_t offset = base_strings_ + static_cast<uint32_t>(strings_.size());
		strings_.insert(strings_.end(), text.begin(), text.end());
		strings_.push_back('\0');
		return offset;
	}
	uint32_t integer(const std::string &n, uint32_t bytes, bool is_signed, uint32_t bits = 0)
	{
		type(name(n), 1, 0, bytes);
		word((is_signed ? 1u << 24 : 0) | (bits ? bits : bytes * 8));
		return next_id_++;
	}
	uint32_t pointer(uint32_t to) { return simple(2, to); }
	uint32_t typedef_(const std::string &n, uint32_t to) { return simple(8, to, n); }
	uint32_t const_(uint32_t to) { return simple(10, to); }
	uint32_t array(uint32_t element, uint32_t index, uint32_t count)
	{
		type(0, 3, 0, 0);
		word(element);
		word(index);
		word(count);
		return next_id_++;
	}
	struct Field {
		std::string name;
		uint32_t type;
		uint32_t bits; // offset in bits (with bitfield_size << 24 when kind_flag)
	};
	uint32_t structure(const std::string &n, uint32_t bytes, const std::vector<Field> &fields,
			   bool is_union = false, bool kind_flag = false)
	{
		std::vector<uint32_t> names;
		for (const Field &f : fields)
			names.push_back(name(f.name));
		type(name(n), is_union ? 5 : 4, static_cast<uint32_t>(fields.size()), bytes, kind_flag);
		for (size_t i = 0; i < fields.size(); i++) {
			word(names[i]);
			word(fields[i].type);
			word(fields[i].bits);
		}
		return next_id_++;
	}
	struct Parameter {
		std::string name;
		uint32_t type;
	};
	uint32_t function(const std::string &n, uint32_t returns, const std::vector<Parameter> &params)
	{
		std::vector<uint32_t> names;
		for (const Parameter &p : params)
			names.push_back(name(p.name));
		type(0, 13, static_cast<uint32_t>(params.size()), returns);
		for (size_t i = 0; i < params.size(); i++) {
			word(names[i]);
			word(params[i].type);
		}
		const uint32_t proto = next_id_++;
		type(name(n), 12, 0, proto);
		return next_id_++;
	}

	// The whole BTF: header, types, strings (4-byte aligned storage).
	std::vector<uint32_t> bytes() const
	{
		std::vector<uint8_t> out(24);
		const uint32_t header[] = {0x0001eb9fu,
					   24,
					   0,
					   static_cast<uint32_t>(types_.size()),
					   static_cast<uint32_t>(types_.size()),
					   static_cast<uint32_t>(strings_.size())};
		memcpy(out.data(), header, sizeof(header));
		out.insert(out.end(), types_.begin(), types_.end());
		out.insert(out.end(), strings_.begin(), strings_.end());
		std::vector<uint32_t> aligned((out.size() + 3) / 4);
		memcpy(aligned.data(), out.data(), out.size());
		size_ = out.size();
		return aligned;
	}
	size_t size() const { return size_; }
	uint32_t string_bytes() const { return static_cast<uint32_t>(strings_.size()); }
	uint32_t last_id() const { return next_id_ - 1; }

private:
	uint32_t simple(uint32_t kind, uint32_t to, const std::string &n = "")
	{
		type(name(n), kind, 0, to);
		return next_id_++;
	}
	void type(uint32_t name_off, uint32_t kind, uint32_t vlen, uint32_t size_or_type, bool kind_flag = false)
	{
		word(name_off);
		word((kind_flag ? 1u << 31 : 0) | kind << 24 | vlen);
		word(size_or_type);
	}
	void word(uint32_t value)
	{
		const uint8_t *bytes = reinterpret_cast<const uint8_t *>(&value);
		types_.insert(types_.end(), bytes, bytes + 4);
	}

	uint32_t next_id_;
	uint32_t base_strings_;
	std::vector<uint8_t> types_;
	std::vector<char> strings_;
	mutable size_t size_ = 0;
};

} // namespace okp::host
