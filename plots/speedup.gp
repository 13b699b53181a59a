# speedup.gp: speedup over the serial median against the number of workers,
# one line per mode (with min..max bars), the ideal line, and Amdahl's law
# fitted to the fork medians; below it, when the CSV has task_s, a second
# panel with the task phase's speedup alone (serial's median task_s / the
# mode's), so that the gap between the two panels shows the serial part
# (setup, merge, start-up).
#
# gnuplot -c speedup.gp PARAMS OUTBASE writes OUTBASE.png, OUTBASE.svg and
# OUTBASE.txt (the fit, as "key: value" lines for scripts).
# PARAMS (written by plots/plot) sets: data (summarize.awk's blocks; block 0
# is serial), title, modes (the names of blocks 1..n, in order), fork_index
# (fork's block, 0 if none), cores, io (1: I/O-bound, ideal = workers; 0:
# ideal = min(workers, cores)), bound ("cpu" or "io", and where it came
# from), xmax (largest -j), ymax (top of both panels' y axis), dofit (1 when
# fork has a point with 1 < jobs <= cores), task_blocks (the blocks with
# task-phase medians, e.g. "1 2"; "" when the CSV has none: one panel),
# text (1: also draw it as text on stdout).
load "style.gp"
load ARG1
outbase = ARG2

# Amdahl's law: speedup on n workers when a fraction f of the serial run
# cannot be parallelised.  Fitted only to points with n <= cores: beyond the
# core count extra workers add no processors, which the law does not model.
f = 0.1
S(n) = 1.0 / (f + (1.0 - f) / n)
set fit quiet nolog
if (dofit) { fit [1:cores] S(x) data index fork_index using 2:7 via f }
fit_title = sprintf("Amdahl fit to fork (n ≤ %d): serial fraction f = %.3f", cores, f)

# The fit for scripts (a benchmark reads it here, not from an image).
set print outbase.".txt"
print "# speedup.gp: Amdahl's law fitted to the fork medians of the whole run"
print sprintf("serial_fraction: %s", dofit ? sprintf("%.6f", f) : "NaN")
print sprintf("fit: %s", dofit ? sprintf("fork medians, 1 <= workers <= %d", cores) : \
	"none (no fork point with 1 < workers <= cores)")
print sprintf("cores: %d", cores)
print sprintf("bound: %s", bound)
print sprintf("bound_from: %s", bound_from)
print sprintf("ideal: %s", ideal_title(cores)[8:])
print sprintf("task_panel: %s", task_blocks eq "" ? "no (the CSV has no task_s)" : "yes")
unset print

two = (task_blocks ne "")
panel1 = "whole run, setup and merge included: speedup over serial"
panel2 = "task phase only, no setup or merge: speedup over serial's task phase"
panel2_note = strstrt(modes, "parallel-") > 0 ? \
	"\nGNU Parallel modes have no task-phase time (their jobs overlap): not drawn" : ""


set xlabel "workers (processes or threads, -j)"
set xrange [0.8:xmax + 0.2]
set yrange [0:ymax]
if (xmax <= 16) { set xtics 1 }
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.03 left tc rgb "#666666"  # under the key: at the foot
set samples 200

# speedup-panels.gp draws the panel(s) on each terminal in turn (gnuplot
# 5.4 cannot replot a multiplot); bars = 0 for text: no room for error bars.
bars = 1
eval sprintf("set terminal pngcairo size 1100,%d font 'DejaVu Sans,11' noenhanced", two ? 1300 : 700)
set output outbase.".png"
load "speedup-panels.gp"
eval sprintf("set terminal svg size 1100,%d font 'DejaVu Sans,11' noenhanced background rgb 'white'", \
	two ? 1300 : 700)
set output outbase.".svg"
load "speedup-panels.gp"
if (text) {
	eval sprintf("set terminal dumb size 100,%d noenhanced", two ? 80 : 40)
	set output
	unset label 1
	set key below nobox
	bars = 0
	load "speedup-panels.gp"
}
