// SPDX-License-Identifier: GPL-2.0
#include "range_list.hpp"

namespace okp {

bool RangeList::grow()
{
	const size_t new_capacity = capacity_ ? capacity_ * 2 : 16;
	AddressRange *bigger = new AddressRange[new_capacity];
	if (!bigger) // -fcheck-new: the module's operator new returns nullptr
		return false;
	for (size_t i = 0; i < size_; ++i)
		bigger[i] = ranges_[i];
	delete[] ranges_;
	ranges_ = bigger;
	capacity_ = new_capacity;
	return true;
}

bool RangeList::add(uint64_t start, uint64_t end, const char *why)
{
	if (end <= start || (size_ == capacity_ && !grow()))
		return false;
	size_t position = size_;
	while (position > 0 && ranges_[position - 1].start > start) {
		ranges_[position] = ranges_[position - 1];
		--position;
	}
	ranges_[position] = AddressRange{start, end, why};
	++size_;
	if (end - start > longest_)
		longest_ = end - start;
	return true;
}

const AddressRange *RangeList::find(uint64_t address) const
{
	// Binary search for the first range starting after address; of those
	// before it, only ranges starting less than longest_ bytes before address
	// can contain it.
	size_t low = 0, high = size_;
	while (low < high) {
		const size_t middle = low + (high - low) / 2;
		if (ranges_[middle].start <= address)
			low = middle + 1;
		else
			high = middle;
	}
	const AddressRange *found = nullptr;
	for (size_t i = low; i > 0 && address - ranges_[i - 1].start < longest_; --i)
		if (ranges_[i - 1].contains(address))
			found = &ranges_[i - 1];
	return found;
}

bool RangeList::overlaps(uint64_t start, uint64_t end) const
{
	for (size_t i = 0; i < size_ && ranges_[i].start < end; ++i)
		if (ranges_[i].end > start)
			return true;
	return false;
}

void RangeList::clear()
{
	delete[] ranges_;
	ranges_ = nullptr;
	size_ = capacity_ = 0;
	longest_ = 0;
}

} // namespace okp
