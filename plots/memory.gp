# memory.gp: what the batch costs in memory, against the number of workers.
# Above: the run's peak total PSS (every process summed, shared pages split
# between sharers), one line per mode, and fork's model (the setup's shared
# PSS plus n times one worker's growth) with the budget the advice caps -j
# by.  Below: the memory one more worker adds: fork's private growth per
# worker (cowrun --stats), and for the other modes the rise of peak total
# PSS from -j 1, per added worker.  Fork should add little: a process per job
# or shard adds a whole setup.
#
# gnuplot -c memory.gp PARAMS OUTBASE (see speedup.gp); adv/memory.dat has a
# block per mode: n, median peak PSS (MiB), added per worker (MiB), min, max;
# advice.gp sets mem_ok, mem_shared, mem_per, mem_budget, mem_title.
load "style.gp"
load ARG1
outbase = ARG2
mem = adv."/memory.dat"
model(n) = mem_ok ? mem_shared + n * mem_per : NaN

set xlabel "workers (processes or threads, -j)"
set xrange [0.8:xmax + 0.2]
if (xmax <= 16) { set xtics 1 }
set arrow 1 from cores, graph 0 to cores, graph 1 nohead dt 3 lc rgb "#888888"
set label 1 sprintf(" %d cores", cores) at cores, graph 0.97 left tc rgb "#666666"

do for [fmt in "png svg"] {
	if (fmt eq "png") {
		set terminal pngcairo size 1100,1200 font "DejaVu Sans,11" noenhanced
	} else {
		set terminal svg size 1100,1200 font "DejaVu Sans,11" noenhanced background rgb "white"
	}
	set output outbase.".".fmt
	set multiplot layout 2,1 title title."\nmemory: the whole run, and what one more worker adds"

	set title "peak total PSS of the whole run, every process summed (median)".\
		(mem_ok ? "\n".mem_title : "")
	set ylabel "peak total PSS (MiB)"
	set yrange [0:*]
	set key top left
	plot mem index 0 using 1:2 with points pt 7 ps 1.5 lc rgb mode_color("serial") title "serial", \
		for [i=1:words(modes)] mem index i using 1:2 with linespoints lw 2 \
			pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i), \
		model(x) with lines dt 4 lw 1.5 lc rgb mode_color("fork") title (mem_ok ? "fork model" : "")

	set title "memory one more worker adds: fork, each worker's private growth (cowrun --stats; bars min..max);\nother modes, (peak PSS at -j n - at -j 1) / (n - 1)"
	set ylabel "MiB per added worker"
	set logscale y
	set yrange [*:*]
	plot for [i=1:words(modes)] mem index i using 1:3:4:5 with yerrorlines lw 2 \
		pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
	unset logscale y
	unset multiplot
	set output
}
