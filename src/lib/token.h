/* token.h -- schedules and their one-line textual form, the token "afd1:...".
 *
 * A schedule is the complete, deterministic input of the controlled loop: a base strategy with its
 * seed and parameters, plus explicit delays addressed by (task label, step ordinal). Replaying a
 * token must reproduce a run exactly, so everything that steers a run lives here and nowhere else.
 *
 * Token text: "afd1:" followed by the payload in lowercase RFC 4648 base32 without padding
 * (selectable by double-click, safe in shells and URLs). The payload is
 *   u8 version (1 or 2) | u8 strategy | u64 seed | u32 pct_depth | u32 pct_steps | [u8 flags] |
 *   u32 n_delays | n_delays x (u32 label_len | label bytes | u32 ordinal | u64 cost_ns) | u32 crc32
 * little-endian, where crc32 covers every payload byte before it. Version 1 has no flags byte and
 * means exactly what it meant before deadlines were known: every token printed before keeps its
 * run. Version 2 carries the flags byte (AFD_SCHED_BELOW_DEADLINES), then with AFD_SCHED_SCALED a
 * u32 scale_ppb, and is written only when a flag is set, so a schedule without flags still encodes as the
 * same text; a version-2 payload with no flag set is not canonical and is refused. The "1" of the prefix
 * names the text form (prefix, base32, checksum), which both payload versions share. Decoding is
 * bounds-checked: a foreign prefix, another version, a bad checksum or trailing garbage is an error, never a
 * crash. */
#ifndef AFD_TOKEN_H
#define AFD_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define AFD_TOKEN_VERSION 2      /* the newest payload version; version 1 is decoded too */
#define AFD_TOKEN_TEXT_VERSION 1 /* the digit of the prefix */
#define AFD_TOKEN_PREFIX "afd1:"

/* Schedule flags (version-2 tokens). BELOW_DEADLINES: every step's cost is capped just below the
 * earliest pending deadline (a timer that guards something: a timeout, a TTL, a lease), and pct's
 * large delay outlasts the pending timers that are not deadlines rather than all of them. */
#define AFD_SCHED_BELOW_DEADLINES 0x01u
/* WELL_BELOW (with BELOW_DEADLINES): the margin kept below a deadline is a tenth of the distance,
 * not at most a millisecond, so that a real wait after a stall (a socket's answer, a thread's work)
 * does not carry the clock past it: the timing check of a failure a real wait carried past one. */
#define AFD_SCHED_WELL_BELOW 0x02u
/* SCALED: every step's cost and idle wake-up's lateness beyond its floor is multiplied by
 * scale_ppb / 1e9 (carried after the flags byte): the same schedule with less time in its delays,
 * the timing check of a failure no deadline explains (timing_clock.c). */
#define AFD_SCHED_SCALED 0x04u
#define AFD_SCALE_ONE 1000000000u
#define AFD_SCHED_FLAGS_KNOWN 0x07u
#define AFD_TOKEN_MAX_DELAYS 4096
#define AFD_TOKEN_MAX_LABEL 512

enum afd_strategy {
    AFD_STRAT_ZERO = 0,   /* every cost and lateness 0 */
    AFD_STRAT_JITTER = 1, /* i.i.d. heavy-tailed costs, epoll-rounded lateness */
    AFD_STRAT_PCT = 2,    /* pct_depth-1 steps among the first pct_steps get a large delay */
    AFD_STRAT__COUNT
};

typedef struct afd_delay {
    char *label;      /* Owned. A task label "qualname#n" or a callback's qualname. */
    uint32_t ordinal; /* The step of that task, counted from 0. */
    uint64_t cost_ns; /* The virtual cost given to that step instead of the base strategy's. */
} afd_delay;

typedef struct afd_schedule {
    uint8_t strategy; /* enum afd_strategy */
    uint64_t seed;    /* Seeds the strategy's randomness and the program's `random` module. */
    uint32_t pct_depth;
    uint32_t pct_steps;
    uint8_t flags;      /* AFD_SCHED_* bits; 0 in every version-1 token. */
    uint32_t scale_ppb; /* with AFD_SCHED_SCALED: the delays' scale in parts per 1e9 (at most 1e9) */
    uint32_t n_delays;
    afd_delay *delays; /* Owned array of n_delays. */
} afd_schedule;

/* Caller-allocated: init zeroes (the `zero` strategy, seed 0); finish frees the delays. */
void afd_schedule_init(afd_schedule *self);
void afd_schedule_finish(afd_schedule *self); /* Accepts NULL. */
/* Copies label. Returns AFD_EFULL past AFD_TOKEN_MAX_DELAYS, AFD_EINVAL for a label longer than
 * AFD_TOKEN_MAX_LABEL. */
int afd_schedule_add_delay(afd_schedule *self, const char *label, uint32_t ordinal, uint64_t cost_ns);
/* Deep copy into dst (dst must not hold delays; it is initialized here). */
int afd_schedule_copy(afd_schedule *dst, const afd_schedule *src);
/* The strategy's name: "zero", "jitter", "pct" (static string). */
const char *afd_strategy_name(int strategy);
/* Parses "zero" | "jitter" | "pct"; returns the enum value or AFD_EINVAL. */
int afd_strategy_parse(const char *name);
/* A short human description, e.g. "pct(seed=42, d=3)" or "zero + 2 delays" (caller frees). */
char *afd_schedule_describe(const afd_schedule *self);

/* Encodes self as a NUL-terminated token (*out is the caller's to free). */
int afd_token_encode(const afd_schedule *self, char **out);
/* Decodes a token into self (initialized here; on error self is left empty and finished).
 * Leading and trailing ASCII whitespace is ignored. Error codes: AFD_ETOKEN_PREFIX when the text
 * does not start with "afd" + digits + ":", AFD_ETOKEN_VERSION when it starts with "afdN:" for
 * another N, AFD_ETOKEN_CHECKSUM, AFD_ETOKEN_CORRUPT (bad base32, truncation, trailing bytes,
 * unknown strategy, bounds exceeded). */
int afd_token_decode(afd_schedule *self, const char *text);

#endif
