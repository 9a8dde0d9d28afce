// SPDX-License-Identifier: GPL-2.0
// Owned<T>: the one owner of a heap object, freed when the owner goes
// (std::unique_ptr without libstdc++). new returns nullptr when memory is
// short (-fcheck-new, no exceptions): test the owner before use.
#pragma once

#include <stddef.h>

namespace okp {

template <typename T> class Owned {
public:
	constexpr Owned() = default;
	explicit Owned(T *object) : object_(object) {}
	Owned(const Owned &) = delete;
	Owned &operator=(const Owned &) = delete;
	Owned(Owned &&other) : object_(other.release()) {}
	Owned &operator=(Owned &&other)
	{
		reset(other.release());
		return *this;
	}
	~Owned() { delete object_; }

	// A new, value-initialized T, or an empty owner when memory is short.
	static Owned make() { return Owned(new T()); }

	T *get() const { return object_; }
	T &operator*() const { return *object_; }
	T *operator->() const { return object_; }
	explicit operator bool() const { return object_ != nullptr; }

	// Hands the object over to a new owner (an intrusive list, a table).
	T *release()
	{
		T *object = object_;
		object_ = nullptr;
		return object;
	}
	void reset(T *object = nullptr)
	{
		T *old = object_;
		object_ = object;
		delete old;
	}

private:
	T *object_ = nullptr;
};

// OwnedArray<T>: the one owner of a heap array of count Ts.
template <typename T> class OwnedArray {
public:
	constexpr OwnedArray() = default;
	OwnedArray(const OwnedArray &) = delete;
	OwnedArray &operator=(const OwnedArray &) = delete;
	~OwnedArray() { delete[] objects_; }

	// count new Ts, or an empty owner when memory is short.
	static OwnedArray make(size_t count)
	{
		OwnedArray array;
		array.objects_ = count ? new T[count] : nullptr;
		array.count_ = array.objects_ ? count : 0;
		return array;
	}
	OwnedArray(OwnedArray &&other) : objects_(other.objects_), count_(other.count_)
	{
		other.objects_ = nullptr;
		other.count_ = 0;
	}
	OwnedArray &operator=(OwnedArray &&other)
	{
		if (this != &other) {
			delete[] objects_;
			objects_ = other.objects_;
			count_ = other.count_;
			other.objects_ = nullptr;
			other.count_ = 0;
		}
		return *this;
	}

	T *get() const { return objects_; }
	T &operator[](size_t i) const { return objects_[i]; }
	size_t size() const { return count_; }
	explicit operator bool() const { return objects_ != nullptr; }

private:
	T *objects_ = nullptr;
	size_t count_ = 0;
};

// GrowingArray<T>: the one owner of an array that grows as items are
// pushed (std::vector without libstdc++), for trivially copyable T.
template <typename T> class GrowingArray {
public:
	constexpr GrowingArray() = default;
	GrowingArray(const GrowingArray &) = delete;
	GrowingArray &operator=(const GrowingArray &) = delete;
	~GrowingArray() { delete[] items_; }

	// False when memory is short (the array is unchanged).
	bool push(const T &item)
	{
		if (count_ == capacity_ && !reserve(capacity_ ? 2 * capacity_ : 16))
			return false;
		items_[count_++] = item;
		return true;
	}
	// Room for capacity items in all, so that pushes up to there cannot
	// fail: a caller that knows its bound allocates once, up front. False
	// when memory is short (the array is unchanged).
	bool reserve(size_t capacity)
	{
		if (capacity <= capacity_)
			return true;
		T *items = new T[capacity];
		if (!items)
			return false;
		for (size_t i = 0; i < count_; ++i)
			items[i] = items_[i];
		delete[] items_;
		items_ = items;
		capacity_ = capacity;
		return true;
	}
	// Drops the items from count on (an undo of the last pushes); keeps
	// the storage.
	void truncate(size_t count)
	{
		if (count < count_)
			count_ = count;
	}
	void clear() { count_ = 0; }
	// Empties the array and frees its storage.
	void reset()
	{
		delete[] items_;
		items_ = nullptr;
		count_ = capacity_ = 0;
	}

	T *get() const { return items_; }
	T &operator[](size_t i) const { return items_[i]; }
	size_t size() const { return count_; }
	size_t capacity() const { return capacity_; }

private:
	T *items_ = nullptr;
	size_t count_ = 0, capacity_ = 0;
};

} // namespace okp
