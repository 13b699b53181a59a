# speedup.gp: speedup over the serial median against the number of workers,
# one line per mode (with min..max bars), the ideal line, and Amdahl's law
# fitted to the fork medians.
#
# gnuplot -c speedup.gp PARAMS OUTBASE writes OUTBASE.png and OUTBASE.svg.
# PARAMS (written by plots/plot) sets: data (summarize.awk's blocks; block 0
# is serial), title, modes (the names of blocks 1..n, in order), fork_index
# (fork's block, 0 if none), cores, xmax (largest -j), dofit (1 when fork has
# a point with 1 < jobs <= cores), text (1: also draw it as text on stdout).
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

set title title."\nspeedup over serial (median; bars: min..max over repetitions)"
set xlabel "workers (processes or threads, -j)"
set ylabel "speedup (serial median wall time / median wall time)"
set xrange [0.8:xmax + 0.2]
set yrange [0:*]
if (xmax <= 16) { set xtics 1 }
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"
set samples 200

eval png_terminal
set output outbase.".png"
plot x title "ideal (speedup = workers)" with lines dt 2 lw 1.5 lc rgb "#999999", \
	(dofit ? S(x) : NaN) title (dofit ? fit_title : "") with lines dt 4 lw 2 lc rgb mode_color("fork"), \
	for [i=1:words(modes)] data index i using 2:7:8:9 with yerrorlines lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
eval svg_terminal
set output outbase.".svg"
replot
if (text) {
	set terminal dumb size 100,40 noenhanced
	set output
	unset label 1
	set key below nobox
	# text has no room for error bars: medians only
	set title title."\nspeedup over serial (medians)"
	plot x title "ideal (speedup = workers)" with lines, \
		(dofit ? S(x) : NaN) title (dofit ? fit_title : "") with lines, \
		for [i=1:words(modes)] data index i using 2:7 with linespoints title word(modes, i)
}
