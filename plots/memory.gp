# memory.gp: the run's peak total PSS (every process summed, shared pages
# split between sharers) against the number of workers, one line per mode.
# Fork should stay near one copy of the setup; modes that start a process
# per job or per shard grow with the worker count.
#
# gnuplot -c memory.gp PARAMS OUTBASE (see speedup.gp).
load "style.gp"
load ARG1
outbase = ARG2

set title title."\npeak memory of the whole run: total PSS of all its processes (median)"
set xlabel "workers (processes or threads, -j)"
set ylabel "peak total PSS (MiB)"
set xrange [0.8:xmax + 0.2]
set yrange [0:*]
if (xmax <= 16) { set xtics 1 }
set key top left
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"

eval png_terminal
set output outbase.".png"
plot data index 0 using 2:13 with points pt 7 ps 1.5 lc rgb mode_color("serial") title "serial", \
	for [i=1:words(modes)] data index i using 2:13 with linespoints lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
eval svg_terminal
set output outbase.".svg"
replot
