# timeline.gp: which worker ran which task when, from a `cowrun --timeline`
# CSV (task,name,worker,pid,start_s,end_s,status): one bar per task on its
# worker's row, so idle gaps and a late straggler are visible.
#
# gnuplot -c timeline.gp PARAMS: PARAMS (written by plots/plot) sets data
# (the CSV), outbase, title, workers (rows), labels (1: print task numbers
# in the bars).
load "style.gp"
load ARG1

set datafile separator ","
set title title
set xlabel "time since the task phase began (s)"
set ylabel "worker (slot or thread)"
set yrange [-0.6:workers - 0.4]
set ytics 1
set xrange [0:*]
set grid noytics
set key off
set style fill solid 0.85 border lc rgb "white"

# bar_color(TASK, STATUS): alternate two blues so neighbours stay apart; red
# for a task that did not end "ok".
bar_color(t, s) = s ne "ok" ? 0xD55E00 : (int(t) % 2 ? 0x56B4E9 : 0x0072B2)

plot data skip 1 using (($5 + $6) / 2):3:(($6 - $5) / 2):(0.38):(bar_color($1, strcol(7))) \
		with boxxyerror lc rgb variable, \
	data skip 1 using (($5 + $6) / 2):3:(labels ? sprintf("%d", $1) : "") \
		with labels font ",8" tc rgb "white"

eval png_terminal
set output outbase.".png"
replot
eval svg_terminal
set output outbase.".svg"
replot
