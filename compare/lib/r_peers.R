# r_peers.R - the worker side of compare/r-peers, a file of its own so that
# every tool can reach it: mclapply's and future's forks inherit it, and
# parLapply's PSOCK workers start empty and source() it.
#
# It loads a cowrun R contract script (setup, tasks, run, merge, finish:
# docs/r.md) into the global environment, as `Rscript SCRIPT.R` would, with
# stand-ins for the functions `cowrun r` gives a script:
#
#   cowrun_report()   the running task's report: a connection on a temporary
#                     file in the output directory (text, its bytes written
#                     as given, no re-encoding; binary with binary = TRUE),
#                     the same one for every call in a task, closed and
#                     renamed to the task's name when run() returns; a task
#                     that fails leaves no report (no fsync: base R has
#                     none, cowrun fsyncs)
#   cowrun_task()     list(index, name) of the running task (index from 0);
#                     NULL outside a task
#   cowrun_verbosity()  0
#   cowrun_seed()     the running task's seed: (run seed * 1000003 + index)
#                     modulo 2^31 - 1; the generator is set to it, kind
#                     L'Ecuyer-CMRG, before each run(): a fixed rule, the same
#                     for every tool, so a draw is the same under each
#                     (cowrun r's own rule may differ: the example draws
#                     nothing)
#   cowrun_input()    cowrun records a declared input; nothing to do here
#
# Nothing here catches an error of the script's: each tool shows it its own
# way (lapply stops, mclapply returns a try-error, parLapply and future stop).

.rp <- new.env()  # this process's outdir, run seed, running task, open report

rp_task_seed <- function(i) {
    as.integer((as.double(.rp$run_seed) * 1000003 + i) %% 2147483647)
}

cowrun_report <- function(binary = FALSE) {
    t <- .rp$task
    if (is.null(t))
        stop("cowrun_report() outside a task")
    if (!is.null(.rp$report))
        return(.rp$report$con)
    final <- file.path(.rp$outdir, t$name)
    tmp <- file.path(.rp$outdir, sprintf(".%s.%d.tmp", t$name, Sys.getpid()))
    con <- file(tmp, open = if (binary) "wb" else "w")
    .rp$report <- list(con = con, tmp = tmp, final = final)
    con
}

cowrun_task <- function() .rp$task  # NULL outside a task, as cowrun's

cowrun_verbosity <- function() 0L

cowrun_seed <- function() {
    if (is.null(.rp$task))
        stop("cowrun_seed() outside a task")
    rp_task_seed(.rp$task$index)
}

cowrun_input <- function(path) invisible(path)

# The report of the task that just ran: renamed to its final name when
# commit is TRUE, else removed.
rp_end_report <- function(commit) {
    r <- .rp$report
    .rp$report <- NULL
    .rp$task <- NULL
    if (is.null(r))
        return(invisible())
    close(r$con)
    if (!commit)
        unlink(r$tmp)
    else if (!file.rename(r$tmp, r$final))
        stop(sprintf("cannot rename '%s' to '%s'", r$tmp, r$final))
    invisible()
}

# One task, as every tool runs it: run()'s value, its report committed.
rp_run_task <- function(state, i, name) {
    .rp$task <- list(index = i, name = name)
    done <- FALSE
    on.exit(if (!done) rp_end_report(FALSE))
    set.seed(rp_task_seed(i), kind = "L'Ecuyer-CMRG")
    value <- run(state, i, name)
    done <- TRUE
    rp_end_report(TRUE)
    value
}

# Sources the script into the global environment; its setup(), tasks(),
# run() must be there afterwards.
rp_load <- function(script, outdir, run_seed) {
    .rp$outdir <- outdir
    .rp$run_seed <- run_seed
    source(script, local = globalenv(), keep.source = TRUE)
    for (fn in c("setup", "tasks", "run"))
        if (!exists(fn, envir = globalenv(), mode = "function", inherits = FALSE))
            stop(sprintf("%s: no function %s()", script, fn))
}

# Task names are report file names, as cowrun requires them.
rp_check_names <- function(names) {
    if (!is.character(names) || anyNA(names))
        stop("tasks() must return a character vector without NA")
    bad <- names %in% c("", ".", "..") | grepl("/", names, fixed = TRUE) |
        nchar(names, type = "bytes") >= 128
    if (any(bad))
        stop(sprintf("task %d: bad task name '%s' (a file name under 128 bytes)",
                     which(bad)[1] - 1L, names[bad][1]))
    if (anyDuplicated(names))
        stop(sprintf("task name '%s' twice", names[anyDuplicated(names)]))
}

# A PSOCK worker: sources this file and the script, runs setup() itself
# (what a parLapply user pays: the state is not shipped) and checks that
# its task names are the master's.
rp_psock_init <- function(lib, script, args, outdir, run_seed, names) {
    source(lib, local = globalenv())
    rp_load(script, outdir, run_seed)
    .rp$state <- setup(args)
    mine <- as.character(tasks(.rp$state))
    if (!identical(mine, names))
        stop("a PSOCK worker's tasks() differ from the master's")
    .rp$names <- names
    Sys.getpid()
}

rp_psock_task <- function(i) rp_run_task(.rp$state, i, .rp$names[[i + 1L]])
