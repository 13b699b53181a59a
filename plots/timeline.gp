# timeline.gp: which worker ran which task when, from a `cowrun --timeline`
# CSV (task,name,worker,pid,start_s,end_s,status[,slot]): one bar per task on its
# worker's row, so idle gaps and a late straggler are visible; when the
# phases are known (compare --timeline), the setup and the merge and summary
# on the parent's row below the workers, and time counts from the run's start.
#
# gnuplot -c timeline.gp PARAMS OUTBASE writes OUTBASE.png and OUTBASE.svg.
# PARAMS (written by plots/plot) sets: data (plots/plot's digest of the CSV,
# columns: task worker start_s end_s ok shade, shifted by the setup), title,
# workers (rows to draw), labels (1: print task numbers in the bars), phases
# (1: setup, task and merge, in seconds, are known).
load "style.gp"
load ARG1
outbase = ARG2

set title title
set xlabel phases ? "time since the run began (s): setup, task phase, merge and summary" : \
	"time since the task phase began (s)"
set ylabel "worker (slot or thread)"
set yrange [(phases ? -1.6 : -0.6):workers - 0.4]
set ytics 1
if (phases) { set ytics add ("parent" -1) }
set xrange [0:*]
set grid noytics
set key off
set style fill solid 0.85 border lc rgb "white"

# bar_color(OK, SHADE): two blues alternating along a row; red for a task
# that did not end "ok".
bar_color(ok, shade) = ok == 0 ? 0xD55E00 : (shade == 1 ? 0x56B4E9 : 0x0072B2)

# The parent's row: the setup, then (after the task phase) the merge and
# summary, as rectangles; a merge too short to see still gets its label.
if (phases) {
	set object 1 rect from 0, -1.38 to setup, -0.62 fc rgb "#E69F00" fs solid 0.85 noborder
	set label 1 sprintf(" setup %.3f s", setup) at setup, -1 left front
	set object 2 rect from setup + task, -1.38 to setup + task + merge, -0.62 fc rgb "#009E73" fs solid 0.85 noborder
	set label 2 sprintf("merge and summary %.3f s ", merge) at setup + task, -1 right front
	set arrow 3 from setup, graph 0 to setup, graph 1 nohead dt 3 lc rgb "#888888"
	set arrow 4 from setup + task, graph 0 to setup + task, graph 1 nohead dt 3 lc rgb "#888888"
}

eval png_terminal
set output outbase.".png"
plot data using (($3 + $4) / 2):2:(($4 - $3) / 2):(0.38):(bar_color($5, $6)) \
		with boxxyerror lc rgb variable, \
	data using (($3 + $4) / 2):2:(labels ? sprintf("%d", $1) : "") \
		with labels font ",8" tc rgb "white"
eval svg_terminal
set output outbase.".svg"
replot
