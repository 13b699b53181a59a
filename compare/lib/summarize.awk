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
# jobs (below 1: fork was faster).  A group is verified when every run in it
# exited 0 and matched the serial reference checksum.
#
# format=data writes one block per mode (serial first), blocks separated by
# two blank lines so gnuplot can select them with `index`; each block starts
# with a comment "# block MODE".  Columns of a data line:
#   1 mode  2 jobs  3 runs  4 median_wall  5 min_wall  6 max_wall
#   7 speedup  8 speedup_lo (serial median / max wall)  9 speedup_hi
#   10 efficiency  11 fork_omp (NaN where not both)  12 verified (1 or 0)
#   13 median peak total PSS in MiB (NaN when the CSV has no peak_pss_kb)
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
	if ($col["verified"] == "yes" && $col["exit_status"] == 0) ok[key]++
}

function fail(msg) { printf "summarize: %s\n", msg > "/dev/stderr"; failed = 1; exit 1 }

# Median of wall[key, 1..n] (or of pss when of_pss): sorts a copy
# (insertion sort: a few reps at most).
function median(key, n, of_pss,    i, j, v, a) {
	for (i = 1; i <= n; i++) {
		v = of_pss ? pss[key, i] : wall[key, i]
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

END {
	if (failed) exit 1
	if (!have_header) fail("no header line (is this a compare/compare CSV?)")
	if (!("serial" in seen_mode)) fail("no serial rows: speedups need the serial baseline")
	n = sorted_jobs("serial", js)
	# Serial runs are all jobs=1 in compare's CSVs; pool them whatever jobs says.
	total = 0
	for (i = 1; i <= n; i++) for (r = 1; r <= runs["serial" SUBSEP js[i]]; r++)
		wall["serial-all", ++total] = wall["serial" SUBSEP js[i], r]
	serial_median = median("serial-all", total)

	for (k = 1; k <= nmodes; k++) {
		mode = modes[k]
		n = sorted_jobs(mode, js)
		for (i = 1; i <= n; i++) {
			key = mode SUBSEP js[i]
			med[key] = median(key, runs[key]); min[key] = lo; max[key] = hi
		}
	}
	if (format == "table")
		printf "%-15s %4s %5s %10s %10s %10s %8s %10s %8s  %s\n", "mode", "jobs", "runs",
		    "median s", "min s", "max s", "speedup", "efficiency", "fork/omp", "verified"
	# serial first, then the others in the order they were run
	nb = 0
	for (k = 1; k <= nmodes; k++) if (modes[k] == "serial") order[++nb] = "serial"
	for (k = 1; k <= nmodes; k++) if (modes[k] != "serial") order[++nb] = modes[k]
	for (b = 1; b <= nb; b++) {
		mode = order[b]
		n = sorted_jobs(mode, js)
		if (format == "data") printf "%s# block %s\n", (b > 1 ? "\n\n" : ""), mode
		for (i = 1; i <= n; i++) print_group(mode, js[i])
	}
}

function print_group(mode, jobs,    key, s, eff, ratio, fkey, okey, verified) {
	key = mode SUBSEP jobs
	s = serial_median / med[key]
	eff = s / jobs
	fkey = "fork" SUBSEP jobs; okey = "omp" SUBSEP jobs
	ratio = ((fkey in med) && (okey in med) && (mode == "fork" || mode == "omp")) ? \
	    med[fkey] / med[okey] : "NaN"
	verified = (ok[key] == runs[key])
	if (format == "data") {
		lo_keep = lo; hi_keep = hi  # median() of pss must not clobber the wall range
		mem = (key SUBSEP 1) in pss ? sprintf("%.3f", median(key, runs[key], 1)) : "NaN"
		lo = lo_keep; hi = hi_keep
		printf "%s %d %d %.6f %.6f %.6f %.6f %.6f %.6f %.6f %s %d %s\n", mode, jobs, runs[key],
		    med[key], min[key], max[key], s, serial_median / max[key],
		    serial_median / min[key], eff, ratio == "NaN" ? "NaN" : sprintf("%.6f", ratio),
		    verified, mem
		return
	}
	printf "%-15s %4d %5d %10.3f %10.3f %10.3f %8.2f %10.2f %8s  %s\n", mode, jobs, runs[key],
	    med[key], min[key], max[key], s, eff,
	    ratio == "NaN" ? "-" : sprintf("%.3f", ratio),
	    verified ? "yes" : sprintf("NO (%d of %d)", ok[key], runs[key])
}
