// SPDX-License-Identifier: GPL-2.0
// Words shared between okprobe's one writer (under the glue's probe mutex)
// and its lock-free readers (handlers in breakpoint context, NMI-like; the
// sysctl and debugfs readers). A shared word is an Atomic<T> in the type,
// so it cannot be read or written plainly by mistake, and every access
// names its ordering, as the kernel's READ_ONCE/smp_load_acquire do.
//
// The writer's own reads of a word only it writes are relaxed; what a
// handler must see complete before it sees a pointer is published with
// release and read with acquire (see probe_table.hpp for each word).
//
// Every access is always inlined: handlers call them, and everything a
// handler runs must be in .kprobes.text (tools/check-handler-paths).
#pragma once

namespace okp {

enum class Order : int {
	relaxed = __ATOMIC_RELAXED,
	acquire = __ATOMIC_ACQUIRE,
	release = __ATOMIC_RELEASE,
};

// A word okprobe owns. Not copyable: a copy would be a torn snapshot.
template <typename T> class Atomic {
public:
	constexpr Atomic() = default;
	constexpr explicit Atomic(T value) : value_(value) {}
	Atomic(const Atomic &) = delete;
	Atomic &operator=(const Atomic &) = delete;

	[[gnu::always_inline]] T load(Order order) const { return __atomic_load_n(&value_, static_cast<int>(order)); }
	[[gnu::always_inline]] void store(T value, Order order)
	{
		__atomic_store_n(&value_, value, static_cast<int>(order));
	}
	[[gnu::always_inline]] T fetch_add(T delta, Order order)
	{
		return __atomic_fetch_add(&value_, delta, static_cast<int>(order));
	}

private:
	T value_{};
};

// A word okprobe does not own but shares with handlers: a field of the
// client's struct okprobe (flags, nmissed), which is C. Like C++20's
// std::atomic_ref.
template <typename T> class AtomicRef {
public:
	[[gnu::always_inline]] explicit AtomicRef(T &word) : word_(word) {}

	[[gnu::always_inline]] T load(Order order) const { return __atomic_load_n(&word_, static_cast<int>(order)); }
	[[gnu::always_inline]] void store(T value, Order order) const
	{
		__atomic_store_n(&word_, value, static_cast<int>(order));
	}
	[[gnu::always_inline]] T fetch_add(T delta, Order order) const
	{
		return __atomic_fetch_add(&word_, delta, static_cast<int>(order));
	}

private:
	T &word_;
};

} // namespace okp
