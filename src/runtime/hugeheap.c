/* hugeheap.c -- the worker's memory on transparent huge pages, so that a fork costs less.
 *
 * A fork copies one page-table entry for every 4 KB the worker holds, and the child's exit tears
 * them down again: with pytest imported that is ~8,000 entries. In a system-wide profile of a
 * trivial test's runs, fork and exit took a quarter of the CPU time (10% and 16%); fork + exit of a
 * bare child costs 2.2 ms against a whole run's 7.3 ms (bench/forkcost.py). Memory on a 2 MB huge
 * page costs one entry instead of 512 (1.4 ms and 5.7 ms). Two things put the worker's memory
 * there:
 *
 * - afd_worker_heap_install(), called by the module's init when the engine started this process
 *   as a worker (AFFIDAVIT_WORKER_HEAP=1), before pytest is imported: pymalloc's arenas (and the
 *   interpreter's frame stack chunks, which come from the same allocator) are carved from
 *   2 MB-aligned regions marked MADV_HUGEPAGE instead of one mmap each, scattered between
 *   shared libraries where no huge page fits;
 * - afd_worker_collapse(), called by trim_heap() before the worker's first fork: MADV_COLLAPSE turns
 *   what was allocated before (the early arenas, glibc's heap) into huge pages where a whole
 *   aligned 2 MB lies inside one mapping.
 *
 * A child's first write to a huge page it shares with the worker splits its own mapping of it and
 * copies 4 KB, as before; the worker's mapping stays huge as long as the worker does not write to
 * it while a child lives, which is why the fork server runs the interpreter's after-fork hooks in
 * the worker only once the child is gone. Nothing here changes what a program can observe: where
 * pymalloc's arenas lie is not part of any interface, and where THP is disabled the advice is a
 * no-op and the cost is what it was. */
#include "runtime.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

#define HUGE_SIZE ((size_t)2 << 20)
#define REGION_SIZE ((size_t)64 << 20) /* address space; pages are touched only as used */
#define MAX_REGIONS 64

typedef struct free_block {
    struct free_block *next;
    size_t size;
} free_block;

static struct {
    char *base, *top, *end;
} regions[MAX_REGIONS];
static int n_regions;
static free_block *free_blocks; /* arenas given back, kept for the next request of their size */
static PyObjectArenaAllocator prev_arena;
static int installed;

static int in_regions(const void *p)
{
    for (int i = 0; i < n_regions; i++)
        if ((const char *)p >= regions[i].base && (const char *)p < regions[i].end)
            return 1;
    return 0;
}

static int new_region(void)
{
    if (n_regions == MAX_REGIONS)
        return -1;
    size_t span = REGION_SIZE + HUGE_SIZE;
    char *m = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return -1;
    char *base = (char *)(((uintptr_t)m + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1));
    char *end = base + REGION_SIZE;
    if (base > m)
        munmap(m, (size_t)(base - m));
    if (m + span > end)
        munmap(end, (size_t)(m + span - end));
    madvise(base, REGION_SIZE, MADV_HUGEPAGE); /* advice: EINVAL where THP is compiled out */
    regions[n_regions].base = regions[n_regions].top = base;
    regions[n_regions].end = end;
    n_regions++;
    return 0;
}

static void *arena_alloc(void *ctx, size_t size)
{
    (void)ctx;
    size_t need = (size + 4095) & ~(size_t)4095;
    for (free_block **pp = &free_blocks; *pp; pp = &(*pp)->next)
        if ((*pp)->size == need) {
            free_block *b = *pp;
            *pp = b->next;
            return b;
        }
    if (need <= REGION_SIZE / 4) {
        if (!n_regions || (size_t)(regions[n_regions - 1].end - regions[n_regions - 1].top) < need)
            new_region();
        if (n_regions && (size_t)(regions[n_regions - 1].end - regions[n_regions - 1].top) >= need) {
            void *p = regions[n_regions - 1].top;
            regions[n_regions - 1].top += need;
            return p;
        }
    }
    return prev_arena.alloc(prev_arena.ctx, size);
}

static void arena_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    if (!in_regions(p)) {
        prev_arena.free(prev_arena.ctx, p, size);
        return;
    }
    free_block *b = p;
    b->size = (size + 4095) & ~(size_t)4095;
    b->next = free_blocks;
    free_blocks = b;
}

void afd_worker_heap_install(void)
{
    PyObject_GetArenaAllocator(&prev_arena);
    PyObjectArenaAllocator a = {NULL, arena_alloc, arena_free};
    PyObject_SetArenaAllocator(&a);
    installed = 1;
}

int afd_worker_heap_installed(void)
{
    return installed;
}

long afd_worker_collapse(void)
{
    FILE *f = fopen("/proc/self/maps", "re");
    if (!f)
        return 0;
    char line[4352];
    long kb = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi, off, ino;
        char perms[8], dev[16], name[4096] = "";
        int n = sscanf(line, "%lx-%lx %7s %lx %15s %lu %4095s", &lo, &hi, perms, &off, dev, &ino, name);
        /* private anonymous read-write memory: the heap and anonymous mappings, not the stack */
        if (n < 6 || strcmp(perms, "rw-p") != 0 || ino != 0 || (name[0] && strcmp(name, "[heap]") != 0))
            continue;
        uintptr_t a = ((uintptr_t)lo + HUGE_SIZE - 1) & ~(uintptr_t)(HUGE_SIZE - 1);
        uintptr_t b = (uintptr_t)hi & ~(uintptr_t)(HUGE_SIZE - 1);
        if (a < b && madvise((void *)a, b - a, MADV_COLLAPSE) == 0)
            kb += (long)((b - a) >> 10);
    }
    fclose(f);
    return kb;
}
