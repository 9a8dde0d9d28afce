// SPDX-License-Identifier: GPL-2.0
// IntrusiveList: a doubly linked list threaded through a ListLink member
// of its items, so that an item joins and leaves in O(1) without an
// allocation, and a list can be walked without touching the items not on
// it. The probe table's optimizer stages its work on such lists (the sites
// queued for a detour, the sites waiting for their jump), as the kernel's
// kprobe optimizer does on its optimizing_list and unoptimizing_list.
//
// Not thread-safe: one owner (the probe table's writer) changes and walks
// it. An item may be on several lists, one ListLink each.
#pragma once

#include <stddef.h>

namespace okp {

template <typename T> struct ListLink {
	T *next = nullptr, *prev = nullptr;
	bool linked = false;
};

template <typename T, ListLink<T> T::*Link> class IntrusiveList {
public:
	constexpr IntrusiveList() = default;
	IntrusiveList(const IntrusiveList &) = delete;
	IntrusiveList &operator=(const IntrusiveList &) = delete;

	// Appends item, unless it is on the list already.
	void push_back(T &item)
	{
		ListLink<T> &link = item.*Link;
		if (link.linked)
			return;
		link.linked = true;
		link.prev = last_;
		link.next = nullptr;
		(last_ ? (last_->*Link).next : first_) = &item;
		last_ = &item;
		++size_;
	}

	// Takes item off the list, if it is on it.
	void remove(T &item)
	{
		ListLink<T> &link = item.*Link;
		if (!link.linked)
			return;
		(link.prev ? (link.prev->*Link).next : first_) = link.next;
		(link.next ? (link.next->*Link).prev : last_) = link.prev;
		link = ListLink<T>{};
		--size_;
	}

	static bool contains(const T &item) { return (item.*Link).linked; }
	T *first() const { return first_; }
	// The item after item; read it before item may leave the list.
	static T *next(const T &item) { return (item.*Link).next; }
	bool empty() const { return first_ == nullptr; }
	size_t size() const { return size_; }

private:
	T *first_ = nullptr, *last_ = nullptr;
	size_t size_ = 0;
};

} // namespace okp
