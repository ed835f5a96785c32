/* harness.h -- a tiny unit-test runner for the C library (after libuv's runner).
 *
 * Each test runs in its own child process with a timeout, so a crash or a hang in one test is
 * reported as that test's failure and the others still run. Assertions print both operands.
 *
 *   TEST(name) { CHECK_EQ_INT(1 + 1, 2); }
 *   int main(void) { RUN_TESTS("suite", T(name), T(other)); }
 *
 * A test binary runs every test; `./test_x --list` lists them and `./test_x name ...` runs only
 * those named (an unknown name exits with status 2 and says so). */
#ifndef AFD_TEST_HARNESS_H
#define AFD_TEST_HARNESS_H

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define TEST_TIMEOUT_S 20

#define TEST(name) static void test_##name(void)

#define FAIL_AT(...)                                                                                         \
    do {                                                                                                     \
        fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__);                                                    \
        fprintf(stderr, __VA_ARGS__);                                                                        \
        fputc('\n', stderr);                                                                                 \
        exit(1);                                                                                             \
    } while (0)

#define CHECK(cond)                                                                                          \
    do {                                                                                                     \
        if (!(cond))                                                                                         \
            FAIL_AT("CHECK(%s) failed", #cond);                                                              \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                                                   \
    do {                                                                                                     \
        long long va_ = (long long)(a), vb_ = (long long)(b);                                                \
        if (va_ != vb_)                                                                                      \
            FAIL_AT("%s == %s failed: %lld != %lld", #a, #b, va_, vb_);                                      \
    } while (0)

#define CHECK_EQ_U64(a, b)                                                                                   \
    do {                                                                                                     \
        uint64_t va_ = (uint64_t)(a), vb_ = (uint64_t)(b);                                                   \
        if (va_ != vb_)                                                                                      \
            FAIL_AT("%s == %s failed: %" PRIu64 " != %" PRIu64, #a, #b, va_, vb_);                           \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                                                   \
    do {                                                                                                     \
        const char *va_ = (a), *vb_ = (b);                                                                   \
        if (!va_ || !vb_ || strcmp(va_, vb_) != 0)                                                           \
            FAIL_AT("%s == %s failed: \"%s\" != \"%s\"", #a, #b, va_ ? va_ : "(null)",                       \
                    vb_ ? vb_ : "(null)");                                                                   \
    } while (0)

#define CHECK_NEAR(a, b, eps)                                                                                \
    do {                                                                                                     \
        double va_ = (double)(a), vb_ = (double)(b);                                                         \
        if (!(va_ - vb_ <= (eps) && vb_ - va_ <= (eps)))                                                     \
            FAIL_AT("%s ~= %s failed: %.9g != %.9g", #a, #b, va_, vb_);                                      \
    } while (0)

typedef struct test_entry {
    const char *name;
    void (*fn)(void);
} test_entry;

/* The command line's arguments after the program name, read from /proc/self/cmdline so that every
 * test file keeps its `int main(void)` (Linux only, like the engine). Returns their number, at
 * most cap, pointing into buf; 0 when the file cannot be read. */
static inline int harness_args(char *buf, size_t size, const char **args, int cap)
{
    FILE *f = fopen("/proc/self/cmdline", "rb");
    if (!f)
        return 0;
    size_t len = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[len] = 0;
    int n = 0;
    size_t i = strlen(buf) + 1; /* the program's own name is not an argument */
    while (i < len && n < cap) {
        args[n++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    return n;
}

static inline int run_one(const char *suite, const test_entry *t)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        alarm(TEST_TIMEOUT_S);
        t->fn();
        exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
        printf("ok   %s.%s\n", suite, t->name);
        return 0;
    }
    if (WIFSIGNALED(st))
        printf("FAIL %s.%s (signal %d%s)\n", suite, t->name, WTERMSIG(st),
               WTERMSIG(st) == SIGALRM ? ": timed out" : "");
    else
        printf("FAIL %s.%s\n", suite, t->name);
    return 1;
}

/* Runs every test, or with arguments: `--list` prints the tests' names, one a line; `NAME ...`
 * runs only those (an unknown name is an error, exit status 2, before any test runs). */
static inline int run_tests(const char *suite, const test_entry *tests, size_t n)
{
    char buf[8192];
    const char *args[64];
    int n_args = harness_args(buf, sizeof buf, args, 64);
    if (n_args == 1 && strcmp(args[0], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", tests[i].name);
        return 0;
    }
    for (int a = 0; a < n_args; a++) {
        size_t i = 0;
        while (i < n && strcmp(tests[i].name, args[a]) != 0)
            i++;
        if (i == n) {
            fprintf(stderr, "%s: no test named '%s' (--list lists them)\n", suite, args[a]);
            return 2;
        }
    }
    int failed = 0;
    size_t ran = 0;
    for (size_t i = 0; i < n; i++) {
        int wanted = n_args == 0;
        for (int a = 0; a < n_args && !wanted; a++)
            wanted = strcmp(tests[i].name, args[a]) == 0;
        if (!wanted)
            continue;
        int rc = run_one(suite, &tests[i]);
        if (rc < 0)
            return 1;
        failed += rc;
        ran++;
    }
    printf("%zu passed, %d failed\n", ran - (size_t)failed, failed);
    return failed ? 1 : 0;
}

#define T(name)                                                                                              \
    {                                                                                                        \
#name, test_##name                                                                                   \
    }
#define RUN_TESTS(suite, ...)                                                                                \
    do {                                                                                                     \
        static const test_entry tests_[] = {__VA_ARGS__};                                                    \
        return run_tests(suite, tests_, sizeof tests_ / sizeof tests_[0]);                                   \
    } while (0)

#endif
