# forkcost.gp: what fork() costs against the size of the parent's setup, with
# the setup in 4 KiB pages and in the huge-page arena (compare/forkcost's CSV).
# Left: fork() latency in the parent (median; bars: min..max) and fork to the
# child's first instruction.  Right: a fresh child's first full read of the
# setup, and the same read in the parent.  Both log-log.
#
# gnuplot -c forkcost.gp CSV OUTBASE TITLE [NOTE] writes OUTBASE.png and
# OUTBASE.svg; NOTE (e.g. the 1 GiB ratio) goes under the fork panel's key.
# compare/forkcost runs it with plots/ on GNUPLOT_LIB, for style.gp.
load "style.gp"
data = ARG1
outbase = ARG2
title = ARG3
note = ARG4

set datafile separator ","
# Rows of both kinds alternate: a row of the other kind reads as NaN, and
# "missing" makes the line skip it instead of breaking there.
set datafile missing NaN

kinds = "4k huge"
kind_title(k) = k eq "4k" ? "4 KiB pages (malloc)" : "huge-page arena (2 MiB)"
kind_color(k) = k eq "4k" ? "#D55E00" : "#0072B2"
kind_point(k) = k eq "4k" ? 7 : 5
# col(K, C): column C on rows of kind K, NaN on the others.
col(k, c) = strcol(2) eq k ? column(c) : NaN

# x: the sizes measured, a little room either side, a tic at each.
stats data using 1 nooutput
set logscale x 2
set xrange [STATS_min / 1.3 : STATS_max * 1.3]
set xtics () nomirror
do for [e = 0:40] { if (2**e >= STATS_min && 2**e <= STATS_max) { set xtics add (sprintf("%d", 2**e) 2**e) } }
set xlabel "setup size (MiB, log scale)"
set logscale y 10
set format y "%g"
set ylabel "time (ms, log scale)"
set key top left

do for [fmt in "png svg"] {
	if (fmt eq "png") {
		set terminal pngcairo size 1400,650 font "DejaVu Sans,11" noenhanced
	} else {
		set terminal svg size 1400,650 font "DejaVu Sans,11" noenhanced background rgb "white"
	}
	set output outbase.".".fmt
	set multiplot layout 1,2 title title."\nfork() cost against the size of the parent's setup" font ",13"

	set title "fork() latency (median of the forks; bars: min..max)"
	if (strlen(note) > 0) { set label 2 note at graph 0.98, graph 0.05 right }
	set arrow 1 from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb "#888888"
	set label 1 "1 ms" at graph 0.98, first 1.15 right tc rgb "#666666"
	plot for [k in kinds] data using 1:(col(k, 3)):(col(k, 4)):(col(k, 5)) \
			with yerrorlines lw 2 pt kind_point(k) lc rgb kind_color(k) \
			title "fork() in the parent, ".kind_title(k), \
		for [k in kinds] data using 1:(col(k, 6)) with lines dt 2 lw 1.5 \
			lc rgb kind_color(k) title "fork() to child's first instruction, ".k
	unset arrow 1
	unset label 1
	unset label 2

	set title "reading the whole setup once (one 8-byte word per 64-byte line)"
	plot for [k in kinds] data using 1:(col(k, 8)) with linespoints lw 2 \
			pt kind_point(k) lc rgb kind_color(k) \
			title "child's first read, ".kind_title(k), \
		for [k in kinds] data using 1:(col(k, 9)) with lines dt 3 lw 1.5 \
			lc rgb kind_color(k) title "same read in the parent, ".k
	unset multiplot
	set output
}
