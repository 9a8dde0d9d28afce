// SPDX-License-Identifier: GPL-2.0
// Freestanding string helpers for the core: no libc, no libstdc++.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

// A non-owning view of characters, like std::string_view.
struct Text {
	const char *data = nullptr;
	size_t size = 0;

	constexpr Text() = default;
	constexpr Text(const char *begin, size_t length) : data(begin), size(length) {}
	// Views a NUL-terminated string (nullptr gives the empty view).
	static constexpr Text of(const char *string)
	{
		size_t length = 0;
		while (string && string[length])
			++length;
		return Text(string, length);
	}

	constexpr bool empty() const { return size == 0; }
	constexpr char operator[](size_t index) const { return data[index]; }
	constexpr Text prefix(size_t length) const { return Text(data, length < size ? length : size); }
	constexpr Text drop(size_t length) const
	{
		return length < size ? Text(data + length, size - length) : Text(data + size, 0);
	}
	constexpr bool starts_with(Text other) const { return other.size <= size && prefix(other.size) == other; }
	// Index of the first c, or size when there is none.
	constexpr size_t find(char c) const
	{
		for (size_t i = 0; i < size; ++i)
			if (data[i] == c)
				return i;
		return size;
	}
	constexpr bool operator==(Text other) const
	{
		if (size != other.size)
			return false;
		for (size_t i = 0; i < size; ++i)
			if (data[i] != other.data[i])
				return false;
		return true;
	}
};

// Parses "0x" followed by at least one hex digit and nothing else.
constexpr bool parse_hex(Text text, uint64_t &value)
{
	if (!text.starts_with(Text("0x", 2)) || text.size == 2 || text.size > 18)
		return false;
	uint64_t result = 0;
	for (size_t i = 2; i < text.size; ++i) {
		const char c = text[i];
		unsigned digit;
		if (c >= '0' && c <= '9')
			digit = c - '0';
		else if (c >= 'a' && c <= 'f')
			digit = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			digit = c - 'A' + 10;
		else
			return false;
		result = result << 4 | digit;
	}
	value = result;
	return true;
}

// Copies text into buffer, truncating, always NUL-terminating (size > 0).
constexpr void copy_text(char *buffer, size_t buffer_size, Text text)
{
	if (buffer_size == 0)
		return;
	const size_t length = text.size < buffer_size - 1 ? text.size : buffer_size - 1;
	for (size_t i = 0; i < length; ++i)
		buffer[i] = text[i];
	buffer[length] = '\0';
}

} // namespace okp
