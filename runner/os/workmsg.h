/*
 * workmsg.h - the workload's messages: cowrun_error() and
 * cowrun_verbosity() of the contract, the workload name the messages carry
 * and the -v level, set by the run's steps.  Here, in os/, below engine/
 * (whose task.c once held them) and workload/ (whose options.c prints
 * through them), so neither calls the other for a message.
 */
#ifndef COWRUN_WORKMSG_H
#define COWRUN_WORKMSG_H

/* The workload named in messages by cowrun_error() ("cowrun" until set). */
void workmsg_set_workload(const char *name);

/* The -v level cowrun_verbosity() tells the workload. */
void workmsg_set_verbosity(int verbose);

/* How many messages cowrun_error() has printed in this process so far: a
 * caller compares the counts before and after a workload's call. */
unsigned long workmsg_errors_reported(void);

#endif
