# phases.gp: where the time goes at each worker count, as cowrun -v reports
# it: the setup (on -j threads: it shrinks with -j too), the task phase, the
# merge and summary after it, and the rest of the wall time (start-up, fork,
# exit), stacked; serial first, then fork at each -j (medians).  The phase
# that does not shrink with -j is the one that limits the speedup.
#
# gnuplot -c phases.gp PARAMS OUTBASE (see speedup.gp); adv/phases.dat has
# one row per bar: "label" setup tasks merge other.
load "style.gp"
load ARG1
outbase = ARG2
phases = adv."/phases.dat"

set title title."\nwhere the time goes: the phases cowrun -v reports (medians)"
set ylabel "seconds"
set yrange [0:*]
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border lc rgb "white"
set boxwidth 0.6
set key top right
set xtics nomirror

eval png_terminal
set output outbase.".png"
plot phases using 2:xtic(1) title "setup (on -j threads)" lc rgb "#E69F00", \
	'' using 3 title "task phase" lc rgb "#0072B2", \
	'' using 4 title "merge and summary" lc rgb "#009E73", \
	'' using 5 title "other: start-up, fork, exit" lc rgb "#BBBBBB"
eval svg_terminal
set output outbase.".svg"
replot
