// SPDX-License-Identifier: GPL-2.0
// Linux 7.3's tools/testing/selftests/ftrace/test.d/kprobe/
// kprobe_syntax_errors.tc, its typecast block line by line: each line as
// the test marks it (^ where error_log's caret goes), the kernel's error
// class and errno. The host tests parse them on a BTF built in the test
// (probe_events_test.cpp) and on 6.12's and 7.3's own .BTF
// (btf_kernel_bytes_test.cpp).
#pragma once

#include "core/probe_events.hpp"

namespace okp::host {

struct SyntaxErrorCase {
	const char *marked;
	events::Error error;
	int error_number;
};

inline constexpr SyntaxErrorCase kprobe_syntax_typecast_errors_73[] = {
	{"p vfs_read arg1=(task_struct)file^", events::Error::typecast_required_field, 22},
	{"p vfs_read arg1=(a)((b)((c)((d)((e)((f)((g)((h)(^(i)file->i)->h)->g)->f)->e)->d)->c)->b)->a",
	 events::Error::too_many_nested, 7},
	{"p vfs_read arg1=(task_struct,^in_execve)file->comm", events::Error::typecast_not_aligned, 22},
	{"p vfs_read arg1=(task_struct,^foo_bar)file->pid", events::Error::no_btf_field, 2},
	{"p vfs_read arg1=(^task_struct1234)file->pid", events::Error::no_pointer_to_struct, 22},
	{"p vfs_read arg1=(task_struct,se^->group_node)file->comm", events::Error::typecast_bad_arrow, 22},
	{"p vfs_read arg1=(task_struct,^->pid)file->comm", events::Error::no_btf_field, 2},
	{"p vfs_read arg1=(task_struct,^.pid)file->comm", events::Error::no_btf_field, 2},
	{"p vfs_read arg1=(task_struct,^.)file->comm", events::Error::no_btf_field, 2},
	{"p vfs_read arg1=(task_struct)^@symbol+10->comm", events::Error::typecast_symbol_offset, 22},
};

} // namespace okp::host
