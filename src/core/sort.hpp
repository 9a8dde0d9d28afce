// SPDX-License-Identifier: GPL-2.0
// Sorting addresses without <algorithm>: heap sort, in place, O(n log n)
// whatever the order (a large function has thousands of branch targets).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace okp {

namespace sort_detail {

inline void sift_down(uint64_t *values, size_t root, size_t count)
{
	for (size_t child; (child = 2 * root + 1) < count; root = child) {
		if (child + 1 < count && values[child + 1] > values[child])
			++child;
		if (values[root] >= values[child])
			return;
		const uint64_t swap = values[root];
		values[root] = values[child];
		values[child] = swap;
	}
}

} // namespace sort_detail

inline void sort_addresses(uint64_t *values, size_t count)
{
	for (size_t i = count / 2; i-- > 0;)
		sort_detail::sift_down(values, i, count);
	for (size_t end = count; end-- > 1;) {
		const uint64_t swap = values[0];
		values[0] = values[end];
		values[end] = swap;
		sort_detail::sift_down(values, 0, end);
	}
}

} // namespace okp
