/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C library functions Zydis's decoder calls, for the module and the
 * host tests alike: forced into each Zydis source with -include (Kbuild,
 * selftests/host/CMakeLists.txt).
 *
 * Without it Zycore's LibC.h (ZYAN_NO_LIBC) falls back to byte loops through
 * a volatile pointer. Every decode clears its state, its context and the
 * instruction record (about 700 bytes) that way: callgrind counted 2,100 of
 * the 2,900 instructions one decode took on Debian's 6.12 kernel text, and
 * a registration decodes its whole function. The compiler's builtins
 * inline these fixed-size clears and copies; any other size becomes a call
 * to the kernel's (or libc's) memset and memcpy.
 */
#ifndef OKP_ZYDIS_LIBC_H
#define OKP_ZYDIS_LIBC_H

#define ZYAN_CUSTOM_LIBC
#define ZYAN_MEMSET(dst, val, n) __builtin_memset((dst), (val), (n))
#define ZYAN_MEMCPY(dst, src, n) __builtin_memcpy((dst), (src), (n))

#endif /* OKP_ZYDIS_LIBC_H */
