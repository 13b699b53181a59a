# speedup-panels.gp: the speedup plot's panel(s) on the current terminal,
# loaded by speedup.gp once per terminal, with everything speedup.gp set;
# bars: 1 draws min..max bars, 0 medians only (text).
medians = bars ? "median; bars: min..max over repetitions" : "medians"
if (two) {
	set multiplot layout 2,1 title title
	set title sprintf("%s (%s)", panel1, medians)
} else {
	set title sprintf("%s\n%s (%s)", title, panel1, medians)
}
set ylabel "speedup (serial median wall time / median wall time)"
if (bars) {
	plot ideal(x) title ideal_title(cores) with lines dt 2 lw 1.5 lc rgb "#999999", \
		(dofit && x <= cores ? S(x) : NaN) title (dofit ? fit_title : "") with lines dt 4 lw 2 lc rgb mode_color("fork"), \
		for [i=1:words(modes)] data index i using 2:7:8:9 with yerrorlines lw 2 \
			pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i)
} else {
	plot ideal(x) title ideal_title(cores) with lines, \
		(dofit && x <= cores ? S(x) : NaN) title (dofit ? fit_title : "") with lines, \
		for [i=1:words(modes)] data index i using 2:7 with linespoints title word(modes, i)
}
if (two) {
	set title sprintf("%s (%s)%s", panel2, medians, panel2_note)
	set ylabel "task-phase speedup (serial median task_s / median task_s)"
	if (bars) {
		plot ideal(x) title ideal_title(cores) with lines dt 2 lw 1.5 lc rgb "#999999", \
			for [s in task_blocks] data index int(s) using 2:16:17:18 with yerrorlines lw 2 \
				pt mode_point(word(modes, int(s))) lc rgb mode_color(word(modes, int(s))) \
				title word(modes, int(s))." (task phase)"
	} else {
		plot ideal(x) title ideal_title(cores) with lines, \
			for [s in task_blocks] data index int(s) using 2:16 with linespoints \
				title word(modes, int(s))." (task phase)"
	}
	unset multiplot
}
