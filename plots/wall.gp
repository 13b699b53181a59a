# wall.gp: median wall time of the whole batch against the number of workers,
# one line per mode (bars: min..max, where there are repetitions), serial's
# median as a flat line.
#
# gnuplot -c wall.gp PARAMS OUTBASE (see speedup.gp); also uses serial_median
# and logy (1: log scale, when the slowest mode would squash the others).
load "style.gp"
load ARG1
outbase = ARG2

set title title."\nwall time of the whole batch, setup included (".\
	(bars ? "median; bars: min..max over repetitions" : "one run each: no spread shown").")"
set xlabel "workers (processes or threads, -j)"
set ylabel "wall time (s)"
set xrange [0.8:xmax + 0.2]
if (logy) { set logscale y; set ylabel "wall time (s, log scale)" } else { set yrange [0:*] }
if (xmax <= 16) { set xtics 1 }
set key top right
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"

eval png_terminal
set output outbase.".png"
plot serial_median title sprintf("serial (median %.3f s)", serial_median) with lines dt 2 lw 1.5 \
		lc rgb mode_color("serial"), \
	for [i=1:words(modes)] data index i using 2:4:5:6 with yerrorlines lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
eval svg_terminal
set output outbase.".svg"
replot
