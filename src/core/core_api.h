/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The boundary between okprobe's C glue and its C++ core, one header per
 * direction: core_entry.h (okp_core_*: C++ the glue calls) and
 * glue_services.h (okp_glue_*: C the core calls); each arch's own services
 * are in arch/<arch>/glue_services.h.
 */
#ifndef OKPROBE_CORE_API_H
#define OKPROBE_CORE_API_H

#include "core/core_entry.h"
#include "core/events_entry.h"
#include "core/glue_services.h"

#endif /* OKPROBE_CORE_API_H */
