// SPDX-License-Identifier: GPL-2.0
// What a fallible writer-side operation returns: its value, or a refusal
// that carries both the errno and the one line the log and debugfs show.
// The C boundary turns it into a negative errno and a reason
// (okp_core_register), nowhere earlier.
#pragma once

namespace okp {

// A positive errno (errno.hpp) and why, for people.
struct Refusal {
	int error;
	const char *why;
};

constexpr Refusal refuse(int error, const char *why)
{
	return Refusal{error, why};
}

template <typename T> class [[nodiscard]] Result {
public:
	constexpr Result(const T &value) : value_(value) {}
	constexpr Result(Refusal refusal) : refusal_(refusal) {}

	constexpr bool ok() const { return refusal_.error == 0; }
	constexpr explicit operator bool() const { return ok(); }
	// The value; only meaningful when ok().
	constexpr const T &value() const { return value_; }
	constexpr const T *operator->() const { return &value_; }
	constexpr const Refusal &refusal() const { return refusal_; }
	constexpr int error() const { return refusal_.error; }
	constexpr const char *why() const { return refusal_.why; }

private:
	T value_{};
	Refusal refusal_{0, ""};
};

// A result with nothing to give back but success.
template <> class [[nodiscard]] Result<void> {
public:
	constexpr Result() = default;
	constexpr Result(Refusal refusal) : refusal_(refusal) {}

	constexpr bool ok() const { return refusal_.error == 0; }
	constexpr explicit operator bool() const { return ok(); }
	constexpr const Refusal &refusal() const { return refusal_; }
	constexpr int error() const { return refusal_.error; }
	constexpr const char *why() const { return refusal_.why; }

private:
	Refusal refusal_{0, ""};
};

using Status = Result<void>;

} // namespace okp
