/* closure.h -- when no schedule can change a run: the zero schedule's run, measured step by step,
 * proves that every schedule explore could make runs the same interleaving.
 *
 * The argument. A schedule decides step costs (never below the floor the zero schedule gives every
 * step), the lateness of idle wake-ups and the seed of the program's `random`; nothing else
 * (schedule.h). The loop's behaviour depends on costs only through its time comparisons, and every
 * comparison it makes is monotone in the costs: a larger cost can only make more time pass before a
 * comparison (slots.c's model). A step's slot is the smallest increase of its cost that flips one
 * comparison made after it; when no step of the zero run has one (margin UINT64_MAX), no increase of
 * one cost flips any comparison, and since each comparison weighs the costs of the steps between its
 * two sides with positive weights, an increase of several costs at once cannot either: every cost
 * vector makes the zero run's comparisons come out the same, so the loop makes the same decisions in
 * the same order (by induction on the decisions). The program sees the schedule in three more ways,
 * each ruled out by what the run recorded: loop.time() read after a step whose cost moves it (the
 * slot's read count), `random` drawn from (AFD_TRACE_RANDOM), and an idle wake-up whose lateness a
 * schedule sets (AFD_EV_IDLE; an idle jump is itself a comparison with a slot unless no measured step
 * came before it, so this only closes that corner).
 *
 * What it does not say: sources no schedule controls are not varied by any schedule (a thread started
 * and joined inside one step, the wall clock, os.urandom); a run that recorded one calling back into
 * the loop (AFD_TRACE_UNCONTROLLED) is never closed, and every measuring repeat of the zero schedule
 * must run the same interleaving as the first (AFD_CLOSURE_DIFFERS otherwise).
 *
 * Deadlines. A step whose every comparison is a deadline the program armed (a timeout, a TTL, a
 * lease: any timer but a sleeping task's wake-up), left unexpired (AFD_SLOT_CROSSING), changes
 * nothing until the costs carry the clock to that deadline: the first comparison any schedule flips
 * is then one of those, so a schedule either runs the zero run or makes the test outlast one of its
 * own deadlines -- a threshold a slow machine crosses, never a race (AFD_CLOSURE_DEADLINES).
 *
 * The measure. One run measures a window of AFD_SYS_WINDOW steps (the runtime's mask width); a run of
 * more steps needs repeats of the zero schedule, each measuring the next window. */
#ifndef AFD_CLOSURE_H
#define AFD_CLOSURE_H

#include "trace.h"

#include <stdint.h>

enum afd_closure_state {
    AFD_CLOSURE_PENDING = 0, /* every window so far closed; the next starts at `measured` */
    AFD_CLOSURE_CLOSED,      /* every step measured, none open: every schedule runs the zero run */
    AFD_CLOSURE_DEADLINES,   /* the same, but some steps' costs move deadlines the program armed and
                                nothing else (AFD_SLOT_CROSSING): every schedule runs the zero run
                                unless it carries the clock to one of those deadlines */
    /* open, with the first reason found: */
    AFD_CLOSURE_SLOT,         /* a step's delay flips a time comparison (or moves a program deadline) */
    AFD_CLOSURE_CLOCK_READ,   /* the program read loop.time() after a step whose cost moves it */
    AFD_CLOSURE_RANDOM,       /* the program drew from `random`, which each schedule seeds */
    AFD_CLOSURE_UNCONTROLLED, /* threads, real I/O or waits, a foreign loop called into the run */
    AFD_CLOSURE_IDLE,         /* the loop went idle: a wake-up's lateness is a schedule's */
    AFD_CLOSURE_UNMEASURED,   /* no trace, a truncated one, a step limit, or a step without its slot */
    AFD_CLOSURE_DIFFERS,      /* a repeat of the zero schedule ran another interleaving */
    AFD_CLOSURE__COUNT
};

typedef struct afd_closure {
    int state;          /* enum afd_closure_state */
    uint64_t steps;     /* the zero run's steps (from the first run taken) */
    uint64_t measured;  /* steps of the windows measured and closed */
    uint64_t deadlines; /* of those, steps whose cost moves only deadlines left unexpired */
    uint64_t order;     /* the first run's order digest: every repeat must have it */
    uint32_t runs;      /* runs taken */
} afd_closure;

/* Zeroes self: PENDING, nothing taken. */
void afd_closure_init(afd_closure *self);
/* Takes a run of the zero schedule that measured the window of AFD_SYS_WINDOW steps from step lo
 * (a multiple of it; the first run taken: 0; the others in any order, each window once) and
 * returns the new state. A state other than PENDING is final: later calls return it unchanged. */
int afd_closure_take(afd_closure *self, const afd_trace *tr, uint64_t lo);
/* Runs (of AFD_SYS_WINDOW steps each) the whole zero run needs measured; 0 before the first take. */
uint64_t afd_closure_windows(const afd_closure *self);
/* The reason's short name for JSON ("closed", "pending", "slot", "clock_read", "random",
 * "uncontrolled", "idle", "unmeasured", "differs"), and its words for text. Static. */
const char *afd_closure_name(int state);
const char *afd_closure_words(int state);

#endif
