# r-fault.R - a cowrun R contract script (the example by default) with one
# task that calls stop(), for compare/bench-r's fault runs, so that the
# script itself stays as it is:
#
#   FAULT_SCRIPT=/abs/path/report.R FAULT_TASK=17 cowrun r compare/lib/r-fault.R ARGS
#   FAULT_SCRIPT=/abs/path/report.R FAULT_TASK=17 compare/r-peers --tool T ... compare/lib/r-fault.R ARGS
#
# FAULT_SCRIPT names the script to wrap (an absolute path: cowrun and the
# PSOCK workers may run from elsewhere); it is source()d here, so cowrun
# counts it as part of this script's identity.  Everything is its own code
# (setup, tasks, merge, finish, and run for every other task); with
# FAULT_TASK=K set, run() stops for task K (counted from 0) before it writes
# anything, so that task leaves no report.  Unset or empty, the output is
# the wrapped script's, byte for byte.

local({
    script <- Sys.getenv("FAULT_SCRIPT")
    if (!nzchar(script) || !startsWith(script, "/"))
        stop("FAULT_SCRIPT: the absolute path of the script to wrap expected")
    source(script, local = globalenv(), keep.source = TRUE)
})

fault_script_run <- run

run <- function(state, i, name) {
    k <- Sys.getenv("FAULT_TASK")
    if (nzchar(k)) {
        if (!grepl("^[0-9]+$", k))
            stop(sprintf("FAULT_TASK=%s: a task index (0, 1, ...) expected", k))
        if (i == as.integer(k))
            stop(sprintf("FAULT_TASK=%s: task %d (%s) fails on purpose", k, i, name))
    }
    fault_script_run(state, i, name)
}
