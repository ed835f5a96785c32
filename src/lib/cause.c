/* cause.c -- the cause an investigation names: its kinds, its operations, its evidence rows.
 *
 * Main invariant: an afd_cause owns every string it holds (copied out of the views it was decided
 * from), so it outlives the traces; afd_cause_finish frees them all and leaves the struct empty.
 * Workload: one cause and a few dozen evidence rows per investigation. */
#include "cause.h"
#include "afd.h"

#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *words, *css;
} kinds[] = {
    [AFD_CAUSE_NONE] = {NULL, NULL, NULL},
#define AFD_CAUSE_ROW_(e, name, words, css) [AFD_CAUSE_##e] = {name, words, css},
    AFD_CAUSE_KINDS(AFD_CAUSE_ROW_)
#undef AFD_CAUSE_ROW_
};

static const char *const accesses[] = {
#define AFD_CAUSE_ACCESS_ROW_(e, name) [AFD_CAUSE_ACCESS_##e] = name,
    AFD_CAUSE_ACCESSES(AFD_CAUSE_ACCESS_ROW_)
#undef AFD_CAUSE_ACCESS_ROW_
};

const char *afd_cause_kind_name(afd_cause_kind k)
{
    return (unsigned)k < AFD_CAUSE__COUNT ? kinds[k].name : NULL;
}

const char *afd_cause_kind_words(afd_cause_kind k)
{
    return (unsigned)k < AFD_CAUSE__COUNT ? kinds[k].words : NULL;
}

const char *afd_cause_kind_css(afd_cause_kind k)
{
    return (unsigned)k < AFD_CAUSE__COUNT ? kinds[k].css : NULL;
}

afd_cause_kind afd_cause_kind_parse(const char *name)
{
    for (int k = AFD_CAUSE_NONE + 1; name && k < AFD_CAUSE__COUNT; k++)
        if (strcmp(kinds[k].name, name) == 0)
            return (afd_cause_kind)k;
    return AFD_CAUSE_NONE;
}

const char *afd_cause_access_name(afd_cause_access a)
{
    return (unsigned)a < AFD_CAUSE_ACCESS__COUNT ? accesses[a] : NULL;
}

int afd_cause_access_parse(const char *name, afd_cause_access *out)
{
    for (int a = 0; name && a < AFD_CAUSE_ACCESS__COUNT; a++)
        if (strcmp(accesses[a], name) == 0) {
            *out = (afd_cause_access)a;
            return 0;
        }
    return AFD_EINVAL;
}

void afd_evidence_init(afd_evidence *self)
{
    memset(self, 0, sizeof *self);
}

void afd_evidence_finish(afd_evidence *self)
{
    if (!self)
        return;
    for (size_t i = 0; i < self->n; i++) {
        free(self->rows[i].claim);
        free(self->rows[i].measured);
        free(self->rows[i].strength);
    }
    free(self->rows);
    afd_evidence_init(self);
}

int afd_evidence_add(afd_evidence *self, const char *claim, const char *measured, const char *strength)
{
    if (self->n == self->cap) {
        size_t cap = self->cap ? self->cap * 2 : 8;
        afd_evidence_row *rows = realloc(self->rows, cap * sizeof *rows);
        if (!rows)
            return self->err = AFD_ENOMEM;
        self->rows = rows;
        self->cap = cap;
    }
    afd_evidence_row row = {strdup(claim ? claim : ""), strdup(measured ? measured : ""),
                            strdup(strength ? strength : "")};
    if (!row.claim || !row.measured || !row.strength) {
        free(row.claim);
        free(row.measured);
        free(row.strength);
        return self->err = AFD_ENOMEM;
    }
    self->rows[self->n++] = row;
    return 0;
}

void afd_cause_init(afd_cause *self)
{
    memset(self, 0, sizeof *self);
    self->kind = AFD_CAUSE_NONE;
    self->early = AFD_NOPOS;
}

static void op_finish(afd_cause_op *op)
{
    free(op->task);
    free(op->operation);
    free(op->resource);
    free(op->file);
    free(op->site);
}

void afd_cause_finish(afd_cause *self)
{
    if (!self)
        return;
    free(self->resource);
    free(self->await_site);
    free(self->summary);
    for (size_t i = 0; i < self->n_ops; i++)
        op_finish(&self->ops[i]);
    free(self->ops);
    for (size_t i = 0; i < self->n_races; i++) {
        free(self->races[i].resource);
        op_finish(&self->races[i].ops[0]);
        op_finish(&self->races[i].ops[1]);
    }
    free(self->races);
    afd_cause_init(self);
}

afd_cause_op *afd_cause_add_op(afd_cause *self)
{
    afd_cause_op *ops = realloc(self->ops, (self->n_ops + 1) * sizeof *ops);
    if (!ops)
        return NULL;
    self->ops = ops;
    memset(&ops[self->n_ops], 0, sizeof ops[0]);
    return &ops[self->n_ops++];
}

afd_cause_race *afd_cause_add_race(afd_cause *self)
{
    afd_cause_race *races = realloc(self->races, (self->n_races + 1) * sizeof *races);
    if (!races)
        return NULL;
    self->races = races;
    memset(&races[self->n_races], 0, sizeof races[0]);
    return &races[self->n_races++];
}
