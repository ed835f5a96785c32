/* inv_verify.c -- the verify stage (--fix): each candidate, smallest first, made the proposal
 * (its regression test, its diff, the policy gate) and, when the gate passes, verified in a mirror
 * of the project; then --apply.
 *
 * The tiers, each counted: the minimal failing token R times after the patch; M exploration
 * schedules after, next to the same M before; N natural runs after; the median run time before
 * and after; the regression test with pytest before and after. The patched program's runs are the
 * verification's, not the incident's: they are counted in v->tier_runs, never in the run log. */
#include "afd.h"
#include "apply.h"
#include "fix.h"
#include "gate.h"
#include "inv.h"
#include "runs.h"
#include "stats.h"
#include "udiff.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- verification: the patched source in a mirror of the project ---- */

/* A directory that looks like the working directory: every entry a symlink to the original,
 * except along the path of the patched file, whose directories are real and whose file holds the
 * patched text. Workers started there import the patch; the user's files are never written. */
static int mirror_entries(const char *src_dir, const char *dst_dir, const char *rel, const char *text,
                          size_t len)
{
    const char *slash = strchr(rel, '/');
    size_t first_len = slash ? (size_t)(slash - rel) : strlen(rel);
    DIR *d = opendir(src_dir);
    if (!d)
        return AFD_EIO;
    struct dirent *e;
    int rc = 0;
    char a[PATH_MAX], b[PATH_MAX];
    while (rc == 0 && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (strlen(e->d_name) == first_len && !strncmp(e->d_name, rel, first_len))
            continue;
        snprintf(a, sizeof a, "%s/%s", src_dir, e->d_name);
        snprintf(b, sizeof b, "%s/%s", dst_dir, e->d_name);
        if (symlink(a, b) < 0)
            rc = AFD_EIO;
    }
    closedir(d);
    if (rc)
        return rc;
    snprintf(a, sizeof a, "%s/%.*s", src_dir, (int)first_len, rel);
    snprintf(b, sizeof b, "%s/%.*s", dst_dir, (int)first_len, rel);
    if (slash) {
        if (mkdir(b, 0700) < 0)
            return AFD_EIO;
        return mirror_entries(a, b, slash + 1, text, len);
    }
    FILE *f = fopen(b, "wb");
    if (!f)
        return AFD_EIO;
    size_t wrote = fwrite(text, 1, len, f);
    if (fclose(f) != 0 || wrote != len)
        return AFD_EIO;
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    /* FTW_PHYS: symlinks are removed, never followed */
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void remove_mirror(const char *dir)
{
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

typedef struct portfolio_ctx {
    uint64_t seed;
    uint32_t est_steps;
    uint64_t failed;
} portfolio_ctx;

static int make_portfolio_plain(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    portfolio_ctx *c = ctx;
    return afd_runs_portfolio_token(c->seed, i, c->est_steps, -1, mode, token);
}

static int take_count(void *ctx, uint64_t i, afd_run_result *res, afd_trace *tr)
{
    portfolio_ctx *c = ctx;
    c->failed += afd_runs_is_failure(res->outcome);
    return 0;
}

static int make_same_token(void *ctx, uint64_t i, uint8_t *mode, char **token)
{
    *mode = AFD_MODE_CONTROLLED;
    *token = strdup((const char *)ctx);
    return *token ? 0 : AFD_ENOMEM;
}

/* The tiers, each counted: the minimal failing token R times after the patch; M exploration
 * schedules after, next to the same M before; N natural runs after; the median run time before
 * and after. A tier that could not run is left at zero runs and reported as not attempted. */
/* A new verification mirror's directory in $TMPDIR (default /tmp): its path in dir, or -1. */
static int make_mirror_dir(char *dir, size_t len)
{
    const char *tmp = getenv("TMPDIR");
    int n = snprintf(dir, len, "%s/affidavit-verify-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    return n > 0 && (size_t)n < len && mkdtemp(dir) ? 0 : -1;
}

/* Counts a tier's runs (the patched program's, and the same schedules run before the patch)
 * and makes t ready for the tier's next batch. */
static void tier_count(inv *v, tally *t)
{
    v->tier_runs += t->runs;
    afd_tally_finish(t);
    memset(t, 0, sizeof *t);
    t->spans = v->spans;
}

/* The span of the tier that started at *start with *start_runs tier runs made; the next tier
 * starts now. */
static void tier_span(inv *v, const char *name, uint64_t *start, uint64_t *start_runs)
{
    uint64_t now = afd_runs_now_ns();
    char args[64];
    snprintf(args, sizeof args, "{\"runs\": %" PRIu64 "}", v->tier_runs - *start_runs);
    afd_spans_add(v->spans, name, "verify", *start, now, args);
    *start = now;
    *start_runs = v->tier_runs;
}

/* The systematic tier: every schedule with at most K delays (twice --verify-runs at most on each
 * side), run before the fix to count how many fail (once per investigation: the original program
 * is the same for every candidate) and after it, stopped at the first failure. */
static int verify_systematic(inv *v, outcome *o, afd_pool *after, tally *t)
{
    const afd_cli *cli = v->cli;
    afd_sys_opts so = {.max_delays = cli->max_delays_set ? cli->max_delays : AFD_SYS_DEFAULT_DELAYS,
                       .prune_classes = cli->prune_classes,
                       .seed = v->seed,
                       .max_runs = 2 * cli->verify_runs};
    int rc = 0;
    if (!o->v_sys_before_ran) {
        rc = afd_systematic(v->pool, &so, &v->prog, t, &o->v_sys_before);
        tier_count(v, t);
        if (rc < 0)
            return rc;
        o->v_sys_before_ran = 1;
    }
    so.stop_on_failure = 1;
    afd_sys_result_finish(&o->v_sys_after);
    rc = afd_systematic(after, &so, &v->prog, t, &o->v_sys_after);
    if (rc == 0)
        o->v_sys_ran = 1;
    o->v_sys_opts = so;
    return rc;
}

static void verify_fix(inv *v, outcome *o, const afd_cli *cli, uint32_t est_steps)
{
    char cwd[PATH_MAX], dir[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd) || make_mirror_dir(dir, sizeof dir) < 0) {
        snprintf(o->v_error, sizeof o->v_error, "cannot make the verification directory");
        return;
    }
    if (mirror_entries(cwd, dir, o->fix_file, (const char *)o->fix_text.data, o->fix_text.len) < 0) {
        snprintf(o->v_error, sizeof o->v_error, "cannot mirror the project to verify the patch");
        remove_mirror(dir);
        return;
    }
    afd_pool *after = NULL;
    if (afd_runs_start_pool_in(cli, &after, dir) != 0) {
        snprintf(o->v_error, sizeof o->v_error, "the patched test cannot be collected");
        remove_mirror(dir);
        return;
    }
    o->verified_ran = 1;
    tally t = {.spans = v->spans};
    uint64_t m = cli->verify_runs;
    uint64_t start = afd_runs_now_ns(), start_runs = v->tier_runs;
    /* 1. the minimal failing token */
    int rc = afd_runs_batch_alone(after, 0, cli->replays, 0, make_same_token, afd_runs_take_none,
                                  (void *)o->token, &v->prog, &t);
    o->v_replay_runs = t.runs;
    o->v_replay_passed = t.by_outcome[AFD_OUT_PASS];
    tier_count(v, &t);
    tier_span(v, "verify: replay", &start, &start_runs);
    /* 2. exploration, the same schedules before and after */
    portfolio_ctx pb = {.seed = v->seed ^ 0xf1eULL, .est_steps = est_steps ? est_steps : 1};
    portfolio_ctx pa = pb;
    if (rc == 0)
        rc = afd_runs_batch(v->pool, 0, m, 0, make_portfolio_plain, take_count, &pb, &v->prog, &t);
    tier_count(v, &t);
    if (rc == 0)
        rc = afd_runs_batch(after, 0, m, 0, make_portfolio_plain, take_count, &pa, &v->prog, &t);
    if (rc == 0) {
        o->v_explore_n = t.runs;
        o->v_explore_failed_before = pb.failed;
        o->v_explore_failed_after = pa.failed;
    }
    tier_count(v, &t);
    tier_span(v, "verify: explore", &start, &start_runs);
    /* 2b. the systematic tier */
    if (rc == 0)
        rc = verify_systematic(v, o, after, &t);
    tier_count(v, &t);
    tier_span(v, "verify: systematic", &start, &start_runs);
    /* 3. natural runs after, and the run time */
    if (rc == 0)
        rc = afd_runs_batch(after, 0, cli->natural, 0, afd_runs_make_natural, afd_runs_take_none, NULL,
                            &v->prog, &t);
    if (rc == 0) {
        o->v_natural_runs = t.runs;
        o->v_natural_failed = t.failed;
        double before_ms = 0, after_ms = 0;
        afd_stats_median_u64(o->natural.wall, o->natural.runs, &before_ms);
        afd_stats_median_u64(t.wall, t.runs, &after_ms);
        o->v_wall_before_ms = before_ms / 1e6;
        o->v_wall_after_ms = after_ms / 1e6;
    }
    tier_count(v, &t);
    tier_span(v, "verify: natural", &start, &start_runs);
    afd_pool_free(after);
    remove_mirror(dir);
}

/* Runs `python -m pytest -q NODE` in dir, quietly, with a time limit: its exit code, or -1. */
static int run_pytest(const afd_cli *cli, const char *dir, const char *node)
{
    char pybuf[4096], abs_py[2 * PATH_MAX + 2], here[PATH_MAX];
    const char *python = afd_runs_find_python(cli, pybuf, sizeof pybuf);
    if (python[0] != '/' && strchr(python, '/') && getcwd(here, sizeof here)) {
        snprintf(abs_py, sizeof abs_py, "%s/%s", here, python);
        python = abs_py;
    }
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        int devnull = open("/dev/null", O_RDWR);
        if (devnull >= 0) {
            dup2(devnull, 0);
            dup2(devnull, 1);
            dup2(devnull, 2);
        }
        if (chdir(dir) < 0)
            _exit(127);
        setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
        if (!getenv("PYTHONHASHSEED"))
            setenv("PYTHONHASHSEED", "0", 1);
        execlp(python, python, "-m", "pytest", "-q", "-p", "no:cacheprovider", node, (char *)NULL);
        _exit(127);
    }
    for (int waited = 0; waited < 1200; waited++) { /* 120 s */
        int status;
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        if (r < 0 || afd_interrupted)
            break;
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* The regression test, run with pytest: against the original code (it must fail) and against the
 * fix (it must pass), each in its own mirror of the project. */
static void verify_regression_test(inv *v, outcome *o, const afd_cli *cli)
{
    if (!o->regression_node)
        return;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return;
    uint64_t start = afd_runs_now_ns(), start_runs = v->tier_runs;
    for (int fixed = 0; fixed < 2; fixed++) {
        char dir[PATH_MAX];
        if (make_mirror_dir(dir, sizeof dir) < 0)
            break;
        const afd_buf *text = fixed ? &o->fix_text : &o->buggy_with_test;
        if (mirror_entries(cwd, dir, o->fix_file, (const char *)text->data, text->len) == 0) {
            int rc = run_pytest(cli, dir, o->regression_node);
            if (fixed)
                o->reg_passes_after = rc == 0;
            else
                o->reg_fails_before = rc == 1;
            o->reg_ran = 1;
        }
        remove_mirror(dir);
    }
    tier_span(v, "verify: regression test", &start, &start_runs);
}

static void finish_proposal(outcome *o, const afd_cli *cli, const char *kind, const char *file,
                            const char *before, size_t len, const afd_buf *after)
{
    o->fix_kind = kind;
    o->fix_file = strdup(file);
    afd_buf_put(&o->fix_text, after->data, after->len);
    afd_buf_put(&o->fix_before, before, len);
    /* the regression test is part of the diff when the fix is in the test's own file */
    const char *sep = strstr(cli->nodeid, "::");
    size_t flen = sep ? (size_t)(sep - cli->nodeid) : 0;
    if (sep && strlen(file) == flen && !strncmp(file, cli->nodeid, flen) && !strstr(sep + 2, "::") &&
        o->token) {
        afd_buf with, bug;
        afd_buf_init(&with);
        afd_buf_init(&bug);
        char why[256];
        const char *summary = o->c.summary ? o->c.summary : "";
        if (afd_fix_regression_test((const char *)after->data, after->len, sep + 2, o->token, summary, &with,
                                    why, sizeof why) == 0 &&
            afd_fix_regression_test(before, len, sep + 2, o->token, summary, &bug, why, sizeof why) == 0) {
            o->fix_text.len = 0;
            afd_buf_put(&o->fix_text, with.data, with.len);
            afd_buf_put(&o->buggy_with_test, bug.data, bug.len);
            size_t nl = strlen(cli->nodeid) + 32;
            o->regression_node = malloc(nl);
            if (o->regression_node)
                snprintf(o->regression_node, nl, "%s_affidavit_replay", cli->nodeid);
        } else {
            snprintf(o->regression_why, sizeof o->regression_why, "no regression test: %s", why);
        }
        afd_buf_finish(&with);
        afd_buf_finish(&bug);
    } else {
        snprintf(o->regression_why, sizeof o->regression_why,
                 "no regression test: the fix is not in the test's file");
    }
    afd_udiff_make(file, before, len, (const char *)o->fix_text.data, o->fix_text.len, &o->fix_diff);
    afd_gate_file gf = {file, before, len, (const char *)o->fix_text.data, o->fix_text.len};
    o->gate_ran = afd_gate_run(&gf, 1, cli->allow_src, o->gate) == 0;
}

/* The candidates in order of size (lines changed), each gated and, when the gate passes,
 * verified; the first verified one is the proposal. When none is, the proposal is the smallest
 * that passed the gate (verified again only if a later one replaced its results), else the
 * smallest. */
static void reset_proposal(outcome *o)
{
    o->fix_kind = NULL;
    free(o->fix_file);
    o->fix_file = NULL;
    o->fix_diff.len = o->fix_text.len = o->buggy_with_test.len = o->fix_before.len = 0;
    free(o->regression_node);
    o->regression_node = NULL;
    o->regression_why[0] = 0;
    o->reg_ran = o->reg_fails_before = o->reg_passes_after = 0;
    o->gate_ran = 0;
    o->verified_ran = 0;
    o->v_replay_runs = o->v_replay_passed = o->v_explore_n = o->v_explore_failed_before = 0;
    o->v_explore_failed_after = o->v_natural_runs = o->v_natural_failed = 0;
    o->v_wall_before_ms = o->v_wall_after_ms = 0;
    o->v_sys_ran = 0;
    afd_sys_result_finish(&o->v_sys_after);
    memset(&o->v_sys_after, 0, sizeof o->v_sys_after);
    o->v_error[0] = 0;
}

static void try_candidates(inv *v, outcome *o, const afd_cli *cli)
{
    for (size_t i = 1; i < o->n_cand; i++) /* stable insertion sort by size */
        for (size_t j = i; j > 0 && o->cand[j].changed < o->cand[j - 1].changed; j--) {
            struct candidate t = o->cand[j];
            o->cand[j] = o->cand[j - 1];
            o->cand[j - 1] = t;
        }
    for (size_t i = 0; i < o->n_cand; i++) {
        struct candidate *c = &o->cand[i];
        reset_proposal(o);
        finish_proposal(o, cli, c->kind, c->file, c->before, c->len, &c->after);
        c->tried = 1;
        c->gate_passed = o->gate_ran && afd_gate_passed(o->gate);
        if (c->gate_passed && o->token) {
            verify_fix(v, o, cli, v->est_steps);
            verify_regression_test(v, o, cli);
        }
        c->verified = inv_fix_verified(o);
        if (c->verified || afd_interrupted)
            return;
    }
    /* none verified: show the smallest that passed the gate (its tiers run again), else the smallest */
    size_t pick = 0;
    for (size_t i = 0; i < o->n_cand; i++)
        if (o->cand[i].gate_passed) {
            pick = i;
            break;
        }
    if (o->n_cand > 1 && pick != o->n_cand - 1) {
        struct candidate *c = &o->cand[pick];
        reset_proposal(o);
        finish_proposal(o, cli, c->kind, c->file, c->before, c->len, &c->after);
        if (c->gate_passed && o->token) {
            verify_fix(v, o, cli, v->est_steps);
            verify_regression_test(v, o, cli);
        }
    }
}

/* --apply: only a verified fix, and only onto the very text it was computed from (apply.c). */
static void apply_fix(outcome *o)
{
    if (!inv_fix_verified(o)) {
        snprintf(o->apply_note, sizeof o->apply_note, "not applied: the fix is not verified");
        return;
    }
    afd_apply_req req = {
        .file = o->fix_file,
        .analysed = o->fix_before.data ? (const char *)o->fix_before.data : "",
        .analysed_len = o->fix_before.len,
        .first_seen = o->first_seen,
        .first_seen_len = o->first_seen_len,
        .first_path = o->first_path,
        .text = (const char *)o->fix_text.data,
        .text_len = o->fix_text.len,
    };
    o->applied = !o->fix_before.err && afd_apply_fix(&req, o->apply_note, sizeof o->apply_note) == 0;
}

/* The proposal passed every tier that ran, and its regression test (when one was written) fails
 * before the fix and passes after. */
int inv_fix_verified(const outcome *o)
{
    if (o->regression_node && !(o->reg_ran && o->reg_fails_before && o->reg_passes_after))
        return 0;
    return o->verified_ran && o->v_replay_runs && o->v_replay_passed == o->v_replay_runs && o->v_explore_n &&
           o->v_explore_failed_after == 0 && o->v_natural_runs && o->v_natural_failed == 0 &&
           (!o->v_sys_ran || o->v_sys_after.fail_run == 0);
}

/* 7. verify, and --apply */
int inv_verify(inv *v, outcome *o)
{
    try_candidates(v, o, v->cli);
    if (v->cli->apply && o->fix_kind)
        apply_fix(o);
    return 0;
}
