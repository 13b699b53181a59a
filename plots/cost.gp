# cost.gp: what a task costs in CPU time, per mode: user + system seconds of
# the whole run (setup and merge included) / tasks, against the workers.
# A mode that redoes the setup per job (parallel-task, parallel-shard) pays
# it here; fork and omp should stay near serial's line.
#
# gnuplot -c cost.gp PARAMS OUTBASE (see speedup.gp); adv/cost.dat has a
# block per mode (serial first): n, median, min, max.
load "style.gp"
load ARG1
outbase = ARG2
cost = adv."/cost.dat"

set title title."\nCPU seconds per task: user + system of the whole run, setup and merge included, / tasks (".\
	(bars ? "median; bars: min..max" : "one run each").")"
set xlabel "workers (processes or threads, -j)"
set ylabel "CPU seconds per task"
set xrange [0.8:xmax + 0.2]
set yrange [0:*]
if (xmax <= 16) { set xtics 1 }
set key top left
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"

eval png_terminal
set output outbase.".png"
plot cost index 0 using (1):2 with points pt 7 ps 1.5 lc rgb mode_color("serial") title "serial", \
	for [i=1:words(modes)] cost index i using 1:2:3:4 with yerrorlines lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
eval svg_terminal
set output outbase.".svg"
replot
