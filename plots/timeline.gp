# timeline.gp: which worker ran which task when, from a `cowrun --timeline`
# CSV (task,name,worker,pid,start_s,end_s,status): one bar per task on its
# worker's row, so idle gaps and a late straggler are visible.
#
# gnuplot -c timeline.gp PARAMS OUTBASE writes OUTBASE.png and OUTBASE.svg.
# PARAMS (written by plots/plot) sets: data (plots/plot's digest of the CSV,
# columns: task worker start_s end_s ok shade), title, workers (rows to
# draw), labels (1: print task numbers in the bars).
load "style.gp"
load ARG1
outbase = ARG2

set title title
set xlabel "time since the task phase began (s)"
set ylabel "worker (slot or thread)"
set yrange [-0.6:workers - 0.4]
set ytics 1
set xrange [0:*]
set grid noytics
set key off
set style fill solid 0.85 border lc rgb "white"

# bar_color(OK, SHADE): two blues alternating along a row; red for a task
# that did not end "ok".
bar_color(ok, shade) = ok == 0 ? 0xD55E00 : (shade == 1 ? 0x56B4E9 : 0x0072B2)

eval png_terminal
set output outbase.".png"
plot data using (($3 + $4) / 2):2:(($4 - $3) / 2):(0.38):(bar_color($5, $6)) \
		with boxxyerror lc rgb variable, \
	data using (($3 + $4) / 2):2:(labels ? sprintf("%d", $1) : "") \
		with labels font ",8" tc rgb "white"
eval svg_terminal
set output outbase.".svg"
replot
