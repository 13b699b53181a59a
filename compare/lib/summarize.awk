# summarize.awk: medians per (mode, jobs) of a compare/compare results CSV.
# Shared by compare/compare (its closing table) and plots/plot (the small
# data file gnuplot draws), so both agree on what "median" and "speedup" mean.
#
#   awk -v format=table -f summarize.awk results.csv    a table for people
#   awk -v format=data  -f summarize.awk results.csv    gnuplot blocks
#
# Columns are found by their names in the header line, not by position.
# Speedup = median serial wall / median wall of the group; efficiency =
# speedup / jobs; fork/omp = median fork wall / median omp wall at the same
# jobs (below 1: fork was faster).  Task speedup = serial's median task_s /
# the group's median task_s: the task phase alone, without setup, merge and
# start-up (only where the CSV has task_s: serial, fork and omp rows).  A
# group is verified when every run in it exited 0 and matched the serial
# reference checksum.
#
# format=data writes one block per mode (serial, fork, omp, parallel-task,
# parallel-shard, then any other in the order of its first row), blocks separated by
# two blank lines so gnuplot can select them with `index`; each block starts
# with a comment "# block MODE".  Columns of a data line:
#   1 mode  2 jobs  3 runs  4 median_wall  5 min_wall  6 max_wall
#   7 speedup  8 speedup_lo (serial median / max wall)  9 speedup_hi
#   10 efficiency  11 fork_omp (NaN where not both)  12 verified (1 or 0)
#   13 median peak total PSS in MiB (NaN when the CSV has no peak_pss_kb)
#   14 median setup_s  15 median task_s  16 task speedup
#   17 task speedup lo (serial median task_s / max task_s)  18 task speedup hi
#   (14-18 NaN where the CSV has no such column or the rows leave it empty)
# Exits 1 with a message when the file has no header or no serial rows.

BEGIN { FS = ","; if (format == "") format = "table" }

/^#/ { next }

!have_header {
	for (i = 1; i <= NF; i++) col[$i] = i
	split("mode jobs wall_s exit_status verified", need, " ")
	for (i = 1; i in need; i++)
		if (!(need[i] in col)) fail("no '" need[i] "' column in the header line")
	have_header = 1
	next
}

NF > 1 {
	mode = $col["mode"]; jobs = $col["jobs"] + 0
	if (!(mode in seen_mode)) { seen_mode[mode] = 1; modes[++nmodes] = mode }
	key = mode SUBSEP jobs
	if (!(key in runs)) { runs[key] = 0; ok[key] = 0; jobs_of[mode] = jobs_of[mode] " " jobs }
	runs[key]++
	wall[key, runs[key]] = $col["wall_s"] + 0
	if ("peak_pss_kb" in col) pss[key, runs[key]] = $col["peak_pss_kb"] / 1024
	keep(setup, nsetup, key, "setup_s")
	keep(task, ntask, key, "task_s")
	if ($col["verified"] == "yes" && $col["exit_status"] == 0) ok[key]++
}

# keep(values, count, key, name): the row's value of column name, if the
# header has it and the row does not leave it empty, as the next of key's.
function keep(values, count, key, name) {
	if (!(name in col) || $col[name] !~ /^[0-9.]+$/) return
	values[key, ++count[key]] = $col[name] + 0
}

function fail(msg) { printf "summarize: %s\n", msg > "/dev/stderr"; failed = 1; exit 1 }

# Median of values[key, 1..n] (NaN when n is 0); sets lo and hi to the
# smallest and largest (insertion sort of a copy: a few reps at most).
function median(values, key, n,    i, j, v, a) {
	if (n == 0) { lo = hi = "NaN"; return "NaN" }
	for (i = 1; i <= n; i++) {
		v = values[key, i]
		for (j = i - 1; j >= 1 && a[j] > v; j--) a[j + 1] = a[j]
		a[j + 1] = v
	}
	lo = a[1]; hi = a[n]
	return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}

# The jobs values of one mode, ascending, into the array js; returns the count.
function sorted_jobs(mode, js,    n, i, j, v, parts) {
	n = split(jobs_of[mode], parts, " ")
	for (i = 1; i <= n; i++) {
		v = parts[i] + 0
		for (j = i - 1; j >= 1 && js[j] > v; j--) js[j + 1] = js[j]
		js[j + 1] = v
	}
	return n
}

# pool_serial(values, count): serial's values at every jobs under the key
# "serial-all" (compare's serial runs are all jobs=1; pool them whatever
# jobs says); returns how many.
function pool_serial(values, count,    n, i, r, js, total) {
	n = sorted_jobs("serial", js)
	total = 0
	for (i = 1; i <= n; i++) for (r = 1; r <= count["serial" SUBSEP js[i]]; r++)
		values["serial-all", ++total] = values["serial" SUBSEP js[i], r]
	return total
}

# ratio(a, b): a / b, or NaN where either is NaN or b is 0.
function ratio(a, b) {
	return (a == "NaN" || b == "NaN" || b + 0 == 0) ? "NaN" : a / b
}

# num(v, fmt): v formatted, or the word NaN.
function num(v, fmt) {
	return v == "NaN" ? "NaN" : sprintf(fmt, v)
}

END {
	if (failed) exit 1
	if (!have_header) fail("no header line (is this a compare/compare CSV?)")
	if (!("serial" in seen_mode)) fail("no serial rows: speedups need the serial baseline")
	serial_median = median(wall, "serial-all", pool_serial(wall, runs))
	serial_task = median(task, "serial-all", pool_serial(task, ntask))

	for (k = 1; k <= nmodes; k++) {
		mode = modes[k]
		n = sorted_jobs(mode, js)
		for (i = 1; i <= n; i++) {
			key = mode SUBSEP js[i]
			med[key] = median(wall, key, runs[key]); min[key] = lo; max[key] = hi
			med_setup[key] = median(setup, key, nsetup[key])
			med_task[key] = median(task, key, ntask[key]); min_task[key] = lo; max_task[key] = hi
		}
	}
	if (format == "table")
		printf "%-15s %4s %5s %10s %10s %10s %8s %10s %8s %8s %8s %8s  %s\n", "mode", "jobs",
		    "runs", "median s", "min s", "max s", "speedup", "efficiency", "fork/omp",
		    "setup s", "task s", "task x", "verified"
	# compare's modes in its own order (serial first), then any other in
	# the order of its first run (compare shuffles the runs: the order of
	# first appearance would change from one CSV to the next)
	nb = split("serial fork omp parallel-task parallel-shard", known, " ")
	nk = nb; nb = 0
	for (i = 1; i <= nk; i++) if (known[i] in seen_mode) order[++nb] = known[i]
	for (k = 1; k <= nmodes; k++) {
		for (i = 1; i <= nk && known[i] != modes[k]; i++) ;
		if (i > nk) order[++nb] = modes[k]
	}
	for (b = 1; b <= nb; b++) {
		mode = order[b]
		n = sorted_jobs(mode, js)
		if (format == "data") printf "%s# block %s\n", (b > 1 ? "\n\n" : ""), mode
		for (i = 1; i <= n; i++) print_group(mode, js[i])
	}
}

function print_group(mode, jobs,    key, s, eff, fo, fkey, okey, verified, mem, ts) {
	key = mode SUBSEP jobs
	s = serial_median / med[key]
	eff = s / jobs
	fkey = "fork" SUBSEP jobs; okey = "omp" SUBSEP jobs
	fo = ((fkey in med) && (okey in med) && (mode == "fork" || mode == "omp")) ? \
	    med[fkey] / med[okey] : "NaN"
	verified = (ok[key] == runs[key])
	ts = ratio(serial_task, med_task[key])
	if (format == "data") {
		mem = (key SUBSEP 1) in pss ? sprintf("%.3f", median(pss, key, runs[key])) : "NaN"
		printf "%s %d %d %.6f %.6f %.6f %.6f %.6f %.6f %.6f %s %d %s %s %s %s %s %s\n", mode,
		    jobs, runs[key], med[key], min[key], max[key], s, serial_median / max[key],
		    serial_median / min[key], eff, num(fo, "%.6f"), verified, mem,
		    num(med_setup[key], "%.6f"), num(med_task[key], "%.6f"), num(ts, "%.6f"),
		    num(ratio(serial_task, max_task[key]), "%.6f"),
		    num(ratio(serial_task, min_task[key]), "%.6f")
		return
	}
	printf "%-15s %4d %5d %10.3f %10.3f %10.3f %8.2f %10.2f %8s %8s %8s %8s  %s\n", mode, jobs,
	    runs[key], med[key], min[key], max[key], s, eff, dash(fo, "%.3f"),
	    dash(med_setup[key], "%.3f"), dash(med_task[key], "%.3f"), dash(ts, "%.2f"),
	    verified ? "yes" : sprintf("NO (%d of %d)", ok[key], runs[key])
}

# dash(v, fmt): v formatted for the table, or "-" where there is none.
function dash(v, fmt) {
	return v == "NaN" ? "-" : sprintf(fmt, v)
}
