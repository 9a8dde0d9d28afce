/* SPDX-License-Identifier: GPL-2.0 */
/*
 * okprobe_events' entry points into the C++ core (src/core/events_api.cpp):
 * the kprobe_events grammar (probe_events.hpp) and the fetch programs at a
 * hit (event_fetch.hpp), for the glue in src/kernel/probe_events.c. Plain
 * C types only, as in core_entry.h.
 */
#ifndef OKPROBE_EVENTS_ENTRY_H
#define OKPROBE_EVENTS_ENTRY_H

#ifdef __cplusplus
extern "C" {
#endif

/* A parsed line (okp::events::Definition), opaque: the glue allocates it. */
struct okp_event_definition;

/* Bytes to allocate for parsing into; bytes of a parsed one's copy. */
unsigned long okp_core_event_size(void);
unsigned long okp_core_event_compact_size(const struct okp_event_definition *event);

/* What the kernel says of a probe place (okp::events::Place). */
enum okp_event_place {
	OKP_EVENT_FUNCTION_ENTRY,
	OKP_EVENT_INSIDE_FUNCTION,
	OKP_EVENT_UNKNOWN_SYMBOL,
	OKP_EVENT_NOT_UNIQUE,
};

/* The place the glue is asked about: a symbol (not NUL-terminated). */
struct okp_event_place_query {
	const char *symbol;
	unsigned long symbol_length;
	unsigned int offset;
};

/* Why a line was refused: error_log's text and caret column. */
struct okp_event_error {
	unsigned int index;	/* into okp_core_event_error_texts() */
	unsigned int column;	/* in the normalized line */
};

/*
 * The grammar of the running kernel's kprobe_events, told once by the glue
 * (okp_core_event_parse() follows it; okp::events::ParseContext says what
 * each part is).
 */
struct okp_event_grammar {
	int validate_symbols;	/* 6.8 and later's symbol check */
	int btf_arguments;	/* 6.6 and later's BTF grammar */
	int char_type;		/* the char type */
	int dentry_types;	/* the %pd and %pD types */
	int return_arguments;	/* $argN and names in r events */
	int nested_arguments;	/* 7.3's this_cpu_*() and nesting limit */
	int typecasts;		/* 7.3's (STRUCT[,FIELD]) typecasts */
	int current_task;	/* 7.3's $current */
	int eprobe_typecasts;	/* 7.x's typecasts for eprobes only */
	const void *btf;	/* vmlinux's BTF, btf_size bytes; NULL: none */
	unsigned long btf_size;
};

/* 0, or -errno when the BTF cannot be read (the grammar stays, typeless). */
int okp_core_event_grammar(const struct okp_event_grammar *grammar);
void okp_core_event_grammar_exit(void);

/*
 * Parses a line into event; 0 or -errno, and on error *error. place
 * answers for a symbol (NULL: every place is an entry).
 */
int okp_core_event_parse(struct okp_event_definition *event, const char *line,
			 unsigned long length,
			 enum okp_event_place (*place)(const struct okp_event_place_query *query),
			 struct okp_event_error *error);
/*
 * Every error text, indexed by okp_event_error.index (tracing_log_err),
 * then NULL.
 */
const char **okp_core_event_error_texts(void);

/* What the glue finds after a line parsed, as error text indexes. */
enum okp_event_glue_error {
	OKP_EVENT_ERROR_REGISTRATION,	/* the probe was refused */
	OKP_EVENT_ERROR_INSTRUCTION_BOUNDARY,
	OKP_EVENT_ERROR_BAD_PLACE,	/* no such symbol */
	OKP_EVENT_ERROR_EXISTS,		/* GROUP/EVENT is taken */
	OKP_EVENT_ERROR_BAD_MEMORY,	/* an @SYM that is not there */
	OKP_EVENT_ERROR_SAME_PROBE,	/* appended: the event has it */
};
unsigned int okp_core_event_glue_error(enum okp_event_glue_error error);

/*
 * A line for an existing event appends a probe to it (the kernel's
 * rules, okp::events::check_join()): 0, or -EEXIST with error set when
 * added is of the other kind or its arguments differ from event's. Then
 * okp_core_event_same_probe() of each probe the event has: nonzero when
 * added is that probe again (-EEXIST, OKP_EVENT_ERROR_SAME_PROBE).
 */
int okp_core_event_check_join(const struct okp_event_definition *event,
			      const struct okp_event_definition *added,
			      struct okp_event_error *error);
int okp_core_event_same_probe(const struct okp_event_definition *probe,
			      const struct okp_event_definition *added);

/*
 * An r line's maxactive as registration made it (the kernel's
 * register_kretprobe() sets 0 to its default), which okprobe_events then
 * reads back as kprobe_events does ("r10:...").
 */
void okp_core_event_set_maxactive(struct okp_event_definition *event,
				  unsigned int maxactive);

enum okp_event_command {
	OKP_EVENT_EMPTY,
	OKP_EVENT_PROBE,
	OKP_EVENT_REMOVE,
};

/* A parsed line's parts; strings point into event. */
struct okp_event_summary {
	enum okp_event_command command;
	const char *line;		/* normalized, NUL-terminated */
	const char *group;		/* "" in a removal: any */
	const char *event;		/* "" in a removal: every one */
	int is_return;
	unsigned int maxactive;
	int has_address;
	unsigned long address;
	const char *symbol;		/* not NUL-terminated */
	unsigned long symbol_length;
	unsigned int offset;
	const char *rest;		/* a removal's other words */
	unsigned long rest_length;
	unsigned int arg_count;
	unsigned int record_size;	/* bytes of the fixed fields */
	unsigned int entry_arguments;	/* an r event's, saved at entry */
};

void okp_core_event_summary(const struct okp_event_definition *event,
			    struct okp_event_summary *summary);

/* How a field shows (okp::events::Kind). */
enum okp_event_field_kind {
	OKP_FIELD_UNSIGNED,
	OKP_FIELD_SIGNED,
	OKP_FIELD_HEX,
	OKP_FIELD_SYMBOL,
	OKP_FIELD_STRING,
	OKP_FIELD_CHAR,		/* a u8 printed as '%c' */
};

/* Field index, as trace_define_field() and the output want it. */
struct okp_event_field {
	char type[32];		/* "u32", "s8[4]", "__data_loc char[]" */
	const char *name;
	unsigned int offset;	/* in the fixed fields */
	unsigned int size;	/* of the whole field */
	unsigned int element_size;
	unsigned int count;	/* elements; 0: a scalar */
	int is_signed;
	enum okp_event_field_kind kind;
};

void okp_core_event_field(const struct okp_event_definition *event,
			  unsigned int index, struct okp_event_field *field);

/*
 * The n-th @SYM of the arguments, to resolve: its name (not
 * NUL-terminated); 0 past the last. okp_core_event_set_symbol gives its
 * address (the offset written after it is added).
 */
int okp_core_event_symbol(const struct okp_event_definition *event,
			  unsigned int n, const char **name,
			  unsigned long *length);
void okp_core_event_set_symbol(struct okp_event_definition *event,
			       unsigned int n, unsigned long address);

/* The canonical line (okprobe_events read), NUL-terminated; its length. */
unsigned long okp_core_event_format(const struct okp_event_definition *event,
				    char *buffer, unsigned long size);
/*
 * The format file's print fmt: "\"(%lx) a=0x%Lx\", REC->__probe_ip, REC->a",
 * for fields after header (the ip at REC->__probe_ip); its length.
 */
unsigned long okp_core_event_print_fmt(const struct okp_event_definition *event,
				       char *buffer, unsigned long size);

/*
 * What a hit offers the fetch programs (okp::events::FetchEnvironment):
 * the handler's pt_regs, or an argument-only hit's struct okprobe_args,
 * read where the arch port says, and the task's comm. Memory is read
 * through okp_glue_event_* (glue_services.h).
 */
struct okp_event_environment {
	const void *regs;
	int args_record;	/* regs is a struct okprobe_args */
	const char *comm;
	const void *task;	/* current, for $current */
	/* An r event's arguments its entry saved; NULL: none. */
	const unsigned long *entry_arguments;
};

/*
 * At an r event's entry (its okretprobe's entry_handler): the arguments
 * the return fetches, into to (the summary's entry_arguments of them).
 */
void okp_core_event_save_entry(const struct okp_event_definition *event,
			       const struct okp_event_environment *environment,
			       unsigned long *to);

/*
 * Whether the event's fetch programs read only what an argument-only
 * hit's record holds (event_record_layout.hpp): its probe can then be an
 * argument-only one.
 */
int okp_core_event_reads_only_args(const struct okp_event_definition *event);

/* At a hit: the bytes of strings to reserve, then the store. */
unsigned long okp_core_event_dynamic_size(const struct okp_event_definition *event,
					  const struct okp_event_environment *environment);
void okp_core_event_store(const struct okp_event_definition *event,
			  const struct okp_event_environment *environment,
			  void *record, void *fields, unsigned long dynamic);

#ifdef __cplusplus
}
#endif

#endif /* OKPROBE_EVENTS_ENTRY_H */
