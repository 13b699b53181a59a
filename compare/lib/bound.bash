# shellcheck shell=bash
# bound.bash: which resource a workload's tasks wait on, and so which ideal
# speedup line is fair to it.  Sourced by compare/compare (the CSV's
# "# bound:" line) and plots/plot (for older CSVs without that line): the
# one place that names the I/O-bound workloads.
#
#   cpu  tasks compute: n workers on c cores can at best be min(n, c) times
#        faster than one
#   io   tasks mostly wait (printer waits on its simulated line printer):
#        n workers can be n times faster, whatever the core count

# default_bound WORKLOAD: "io" for the built-in I/O-bound workloads, "cpu"
# for every other, plugins (a path) included: compare/compare --bound io
# says otherwise for one.
default_bound() {
	case $1 in
	printer) echo io ;;
	*) echo cpu ;;
	esac
}
