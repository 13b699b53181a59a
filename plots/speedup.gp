# speedup.gp: speedup over the serial median against the number of workers,
# one line per mode (with min..max bars when there are repetitions), the
# ideal line, the advice (compare/advice's -j, an arrow) and, where the
# points can carry it, the Universal Scalability Law fitted to fork's runs;
# a point above the ideal is labelled noise with its spread.  Below it, when
# the CSV has task_s, a second panel with the task phase's speedup alone
# (serial's median task_s / the mode's), so that the gap between the two
# panels shows the rest (setup, merge, start-up).
#
# gnuplot -c speedup.gp PARAMS OUTBASE writes OUTBASE.png and OUTBASE.svg.
# PARAMS (written by plots/plot) sets: data (summarize.awk's blocks; block 0
# is serial), title, modes (the names of blocks 1..n, in order), cores, io
# (1: I/O-bound, ideal = workers; 0: ideal = min(workers, cores)), xmax
# (largest -j), ymax (top of both panels' y axis), bars (1: some group has
# several runs), task_blocks (the blocks with task-phase medians, e.g. "1 2";
# "" when the CSV has none: one panel), text (1: also draw it as text on
# stdout), serial_median, adv (compare/advice's plot directory) and its
# advice.gp: usl_ok, usl_sigma, usl_kappa, usl_t1, usl_top, usl_title,
# usl_tasks, amdahl_title, advice_jobs, advice_title.
load "style.gp"
load ARG1
outbase = ARG2

# The fitted curve, as a speedup over the serial median: the USL's wall time
# T1 (1 + sigma (n - 1) + kappa n (n - 1)) / n, drawn over the fitted range,
# times the last round's idle workers, ceil(N / n) n / N for N tasks.
T(n) = usl_t1 * (1 + usl_sigma * (n - 1) + usl_kappa * n * (n - 1)) / n * \
	(usl_tasks > 0 ? ceil(usl_tasks / n) * n / usl_tasks : 1)
S(n) = serial_median / T(n)
noise = adv."/noise.dat"
has_noise = system(sprintf("test -s '%s' && echo 1 || echo 0", noise)) + 0

two = (task_blocks ne "")
panel1 = "whole run, setup and merge included: speedup over serial"
panel2 = "task phase only, no setup or merge: speedup over serial's task phase"
panel2_note = strstrt(modes, "parallel-") > 0 ? \
	"\nGNU Parallel modes have no task-phase time (their jobs overlap): not drawn" : ""

set xlabel "workers (processes or threads, -j)" offset 0,0.5
set xrange [0.8:xmax + 0.2]
set yrange [0:ymax]
if (xmax <= 16) { set xtics 1 }
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.03 left tc rgb "#666666"  # under the key: at the foot
set samples 200
set key below left Left reverse  # the key would hide the ideal line's top

# speedup-panels.gp draws the panel(s) on each terminal in turn (gnuplot
# 5.4 cannot replot a multiplot); draw_bars = 0 for text: no room for bars.
draw_bars = bars
eval sprintf("set terminal pngcairo size 1100,%d font 'DejaVu Sans,11' noenhanced", two ? 1300 : 750)
set output outbase.".png"
load "speedup-panels.gp"
eval sprintf("set terminal svg size 1100,%d font 'DejaVu Sans,11' noenhanced background rgb 'white'", \
	two ? 1300 : 750)
set output outbase.".svg"
load "speedup-panels.gp"
if (text) {
	eval sprintf("set terminal dumb size 120,%d noenhanced", two ? 80 : 40)
	set output
	unset label 1
	set xlabel offset 0,0
	set key below nobox
	draw_bars = 0
	load "speedup-panels.gp"
}
