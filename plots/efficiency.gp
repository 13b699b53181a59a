# efficiency.gp: parallel efficiency (speedup / workers) against the number
# of workers, one line per mode, and the ideal by the same rule as the
# speedup plot's (style.gp's ideal(n) / n): 1 for an I/O-bound workload;
# for a CPU-bound one 1 up to the core count, then cores / workers.
#
# gnuplot -c efficiency.gp PARAMS OUTBASE (see speedup.gp).
load "style.gp"
load ARG1
outbase = ARG2

set title title."\nparallel efficiency = speedup / workers (medians)"
set xlabel "workers (processes or threads, -j)"
set ylabel "efficiency (speedup / workers)"
set xrange [0.8:xmax + 0.2]
set yrange [0:*]
if (xmax <= 16) { set xtics 1 }
set key top right
set offsets 0, 0, graph 0.3, 0  # room for the key above the lines
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"

eval png_terminal
set output outbase.".png"
set samples 200
plot ideal(x) / x title (io ? "ideal: efficiency 1 (I/O-bound: speedup = workers)" : \
		ideal_title(cores)." / workers") with lines dt 2 lw 1.5 lc rgb "#999999", \
	for [i=1:words(modes)] data index i using 2:10 with linespoints lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
eval svg_terminal
set output outbase.".svg"
replot
