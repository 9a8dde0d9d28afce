// SPDX-License-Identifier: GPL-2.0
// The errno values the core returns: the same on every Linux architecture,
// spelled here because the core includes no kernel header.
#pragma once

namespace okp::error {

constexpr int eperm = 1, enoent = 2, eio = 5, e2big = 7, enomem = 12, ebusy = 16, einval = 22, eilseq = 84,
	      eopnotsupp = 95;

} // namespace okp::error
