/* The C entry of a library compiled by `stalingrad build --lib`: the part
 * of every library that is the same for all (crates/codegen/src/
 * lib_export.rs appends one small function per export).
 *
 * A call takes the library's lock (calls from several threads run one at
 * a time: the runtime's heap and buffers are the library's own) and runs
 * the export's compiled body on the library's own stack, a large mapping
 * reserved once (1 GiB of address space, pages touched only when used), so
 * that VLAD recursion goes as deep as in a compiled program whatever the
 * caller's thread has: `swapcontext` there and back, about a microsecond.
 * On that stack it arms a `setjmp`, tells the runtime where the arguments
 * and results are, how far down compiled code may go and where the stack
 * begins (the collector scans from there: the call's own frames are its
 * only roots), runs the body, and ends the call in the runtime, which
 * gives back every cell. A VLAD run-time error in the body ends in
 * `vlad_lib_throw`, which `longjmp`s back to that frame on the same stack:
 * between the two there are only frames of compiled code and of the
 * runtime's error path, none of which owns anything (runtime/src/
 * library.rs says why), and the runtime then resets what the call left
 * behind. The message is kept per thread for `PREFIX_last_error`. */

#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

void rt_lib_begin(const double *args, size_t n_args, double *results, size_t n_results,
                  uintptr_t stack_top, uintptr_t stack_limit, int dynamic);
int rt_lib_end(void);
size_t rt_lib_written(void);
void rt_lib_abandon(void);
void rt_lib_message(char *buf, size_t cap);

static pthread_mutex_t vlad_lib_lock = PTHREAD_MUTEX_INITIALIZER;
static jmp_buf vlad_lib_jump;
static __thread char vlad_lib_error[4096];

void vlad_lib_throw(void) { longjmp(vlad_lib_jump, 1); }

/* The library's stack: reserved on the first call, kept. */
static char *vlad_lib_stack;
static size_t vlad_lib_stack_size;
/* Stack kept free below the limit for the runtime's own calls (the error
 * message, libm) and a guard page below that. */
#define VLAD_LIB_MARGIN ((size_t)1 << 20)
/* The top of the stack kept resident between calls. */
#define VLAD_LIB_KEEP ((size_t)8 << 20)
/* How far below it `mincore` looks for pages a deep call touched. */
#define VLAD_LIB_PROBE ((size_t)64 << 10)

static int vlad_lib_reserve(void) {
    if (vlad_lib_stack)
        return 1;
    /* Under an address-space cap a smaller stack may still be had. */
    for (size_t size = (size_t)1 << 30; size >= ((size_t)16 << 20); size /= 4) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
        if (p != MAP_FAILED) {
            mprotect(p, 4096, PROT_NONE);
            vlad_lib_stack = p;
            vlad_lib_stack_size = size;
            return 1;
        }
    }
    return 0;
}

/* The call being made, for the function that runs on the library's stack. */
static struct {
    void (*body)(void);
    const double *args;
    size_t n_args;
    double *captured;
    size_t n_captured;
    /* An export over vectors: `n_captured` is the room the caller has. */
    int dynamic;
    size_t written;
    int rc;
} vlad_lib_job;
static ucontext_t vlad_lib_caller, vlad_lib_callee;

static void vlad_lib_run(void) {
    /* Above every frame of the call: where the collector's scan ends. */
    volatile char top = 0;
    if (setjmp(vlad_lib_jump) == 0) {
        rt_lib_begin(vlad_lib_job.args, vlad_lib_job.n_args, vlad_lib_job.captured,
                     vlad_lib_job.n_captured, (uintptr_t)&top,
                     (uintptr_t)vlad_lib_stack + VLAD_LIB_MARGIN, vlad_lib_job.dynamic);
        vlad_lib_job.body();
        vlad_lib_job.written = rt_lib_written();
        vlad_lib_job.rc = rt_lib_end();
    } else {
        rt_lib_abandon();
        vlad_lib_job.rc = 1;
    }
    (void)top;
    /* Returning resumes `vlad_lib_caller` (`uc_link`). */
}

static int vlad_lib_call(void (*body)(void), const double *args, size_t n_args,
                         double *captured, size_t n_captured, int dynamic, size_t *written) {
    int rc = 1;
    pthread_mutex_lock(&vlad_lib_lock);
    if (!vlad_lib_reserve()) {
        strcpy(vlad_lib_error, "error: out of memory: no stack for the call");
        pthread_mutex_unlock(&vlad_lib_lock);
        return 1;
    }
    vlad_lib_job.body = body;
    vlad_lib_job.args = args;
    vlad_lib_job.n_args = n_args;
    vlad_lib_job.captured = captured;
    vlad_lib_job.n_captured = n_captured;
    vlad_lib_job.dynamic = dynamic;
    vlad_lib_job.written = 0;
    vlad_lib_job.rc = 1;
    if (getcontext(&vlad_lib_callee) == 0) {
        vlad_lib_callee.uc_stack.ss_sp = vlad_lib_stack;
        vlad_lib_callee.uc_stack.ss_size = vlad_lib_stack_size;
        vlad_lib_callee.uc_link = &vlad_lib_caller;
        makecontext(&vlad_lib_callee, vlad_lib_run, 0);
        if (swapcontext(&vlad_lib_caller, &vlad_lib_callee) == 0)
            rc = vlad_lib_job.rc;
    }
    /* Memory a deep recursion touched goes back to the system; the top of
     * the stack, which every call uses, stays. Whether the call went below
     * the top is seen on the pages just below it (`mincore`, a fraction of
     * the cost of `madvise` over the whole stack); a failed call may have
     * run out of stack, so it always gives back. */
    if (vlad_lib_stack_size > VLAD_LIB_KEEP + VLAD_LIB_PROBE) {
        char *edge = vlad_lib_stack + vlad_lib_stack_size - VLAD_LIB_KEEP;
        unsigned char resident[VLAD_LIB_PROBE / 4096];
        int deep = rc != 0 || mincore(edge - VLAD_LIB_PROBE, VLAD_LIB_PROBE, resident) != 0;
        for (size_t i = 0; !deep && i < sizeof resident; i++)
            deep = resident[i] & 1;
        if (deep)
            madvise(vlad_lib_stack, vlad_lib_stack_size - VLAD_LIB_KEEP, MADV_DONTNEED);
    }
    if (written)
        *written = vlad_lib_job.written;
    if (rc != 0)
        rt_lib_message(vlad_lib_error, sizeof vlad_lib_error);
    else
        vlad_lib_error[0] = 0;
    pthread_mutex_unlock(&vlad_lib_lock);
    return rc;
}

__attribute__((unused)) static double vlad_lib_bits(uint64_t u) {
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
