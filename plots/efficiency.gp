# efficiency.gp: parallel efficiency (speedup / workers) against the number
# of workers, one line per mode; 1 is perfect use of every worker.
#
# gnuplot -c efficiency.gp PARAMS OUTBASE (see speedup.gp).
load "style.gp"
load ARG1
outbase = ARG2

set title title."\nparallel efficiency = speedup / workers (medians)"
set xlabel "workers (processes or threads, -j)"
set ylabel "efficiency (speedup / workers; 1 = ideal)"
set xrange [0.8:xmax + 0.2]
set yrange [0:*]
if (xmax <= 16) { set xtics 1 }
set key top right
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"

eval png_terminal
set output outbase.".png"
plot 1 title "ideal" with lines dt 2 lw 1.5 lc rgb "#999999", \
	for [i=1:words(modes)] data index i using 2:10 with linespoints lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
eval svg_terminal
set output outbase.".svg"
replot
