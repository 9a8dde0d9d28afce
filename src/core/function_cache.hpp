// SPDX-License-Identifier: GPL-2.0
// The writer's memory of the last function it decoded, for the next
// registration in the same function: the proof made again after the claim,
// the jump plan that follows, register_many() of a function's lines, a
// script probing every line of one function. Decoding a large function is
// most of what a registration costs under QEMU, and a sample uniform over
// instructions lands mostly in large functions.
//
// Each arch keeps what decoding told it (Decoded), keyed by the function's
// address, the length read and a digest of its bytes as read (okprobe's own
// patches undone): any change of the text is a miss. Owned by the arch's
// writer state; used only under okp_probe_mutex.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

// FNV-1a over 8-byte words (the tail bytewise): a cheap fingerprint of a
// function's text, to see that it did not change between two reads.
inline uint64_t text_digest(const uint8_t *bytes, size_t size)
{
	constexpr uint64_t prime = 0x100000001b3ull;
	uint64_t hash = 0xcbf29ce484222325ull ^ size;
	size_t at = 0;
	for (; at + 8 <= size; at += 8) {
		uint64_t word;
		__builtin_memcpy(&word, bytes + at, sizeof(word));
		hash = (hash ^ word) * prime;
	}
	for (; at < size; ++at)
		hash = (hash ^ bytes[at]) * prime;
	return hash;
}

struct TextKey {
	uint64_t address = 0;
	size_t size = 0;
	uint64_t digest = 0;

	static TextKey of(const uint8_t *bytes, size_t size, uint64_t address)
	{
		return TextKey{address, size, text_digest(bytes, size)};
	}
	bool operator==(const TextKey &other) const
	{
		return address == other.address && size == other.size && digest == other.digest;
	}
};

// No destructor: it lives in a module's global state (no global
// destructors there); its owner clears it when it releases its resources.
template <typename Decoded> class LastFunction {
public:
	constexpr LastFunction() = default;
	LastFunction(const LastFunction &) = delete;
	LastFunction &operator=(const LastFunction &) = delete;

	// What was decoded from the text key names, or nullptr.
	Decoded *find(const TextKey &key) const { return decoded_ && key_ == key ? decoded_ : nullptr; }
	// A new, value-initialized Decoded for key (the last one is freed
	// first), or nullptr when memory is short.
	Decoded *replace(const TextKey &key)
	{
		clear();
		decoded_ = new Decoded();
		key_ = key;
		return decoded_;
	}
	void clear()
	{
		delete decoded_;
		decoded_ = nullptr;
	}

private:
	TextKey key_;
	Decoded *decoded_ = nullptr;
};

} // namespace okp
