/*
 * process.h - child processes and signals by name: reap a child, say how
 * it ended, name a signal and read one's name, and make a process that
 * waits for work fault its pages in before the work comes.
 */
#ifndef COWRUN_PROCESS_H
#define COWRUN_PROCESS_H

#include <stddef.h>
#include <sys/types.h>

/* "SIGSEGV" for SIGSEGV; "signal 77" for an unknown number.  Returns a
 * pointer to a static buffer for unknown numbers: not thread-safe then. */
const char *signal_name(int sig);

/* Signal number for "SEGV", "SIGSEGV", "sigsegv" or "11"; -1 if unknown. */
int signal_from_name(const char *name);

/* Wait for the child `child` to end and reap it (EINTR retried); its
 * status in *status unless NULL.  Returns child, or -1 with errno (not
 * our child: nothing to reap). */
pid_t reap_child(pid_t child, int *status);

/* In a process forked to wait for work (a spare leader, a standby
 * worker): make now the private pages the work will write first, so that
 * it meets no page fault on the request's path: stack_kb below the
 * current stack, heap_kb where malloc() will carve its next blocks, and
 * the writable data of every loaded object (the program's, the
 * libraries') whose segment is at most small_kb.  Each page is a copy of
 * the parent's (copy-on-write) or a new one.  Errors are ignored: this
 * only moves work earlier.  Single-threaded callers only (before Linux
 * 5.14 a data page is faulted by writing its own byte back). */
void prefault_private_pages(size_t stack_kb, size_t heap_kb, size_t small_kb);

/* What a spare leader and a standby worker make ready while they wait.
 * On the 2-core VM, from a warm 1 GiB setup (interleaved A/B): a served
 * request 0.12 ms sooner, for 0.16 ms more of the server's CPU per
 * request and 132 KiB more private memory in each (188 KiB, was 56). */
#define PREFAULT_STACK_KB 64
#define PREFAULT_HEAP_KB 64
#define PREFAULT_SMALL_KB 64

/* Describe a waitpid() status: "exited with status 3", "killed by SIGKILL
 * (Killed)".  Writes into buf, returns buf. */
char *describe_wait_status(int status, char *buf, size_t size);

#endif
