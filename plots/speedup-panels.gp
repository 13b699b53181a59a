# speedup-panels.gp: the speedup plot's panel(s) on the current terminal,
# loaded by speedup.gp once per terminal, with everything speedup.gp set;
# draw_bars: 1 draws min..max bars, 0 medians only (text, or one run each).
medians = draw_bars ? "median; bars: min..max over repetitions" : \
	(bars ? "medians" : "one run each: no spread shown")
# The counts above the ideal, labelled with their spread (a macro: nothing
# when there are none, as gnuplot will not plot an empty file quietly).
noise_plot = has_noise ? sprintf(", '%s' using 1:2:3 with labels offset 0,1.2 tc rgb '#D55E00' title 'above the ideal: noise (runs min..max)'", noise) : ""
# The fitted curve at whole worker counts only (its last-round term jumps
# between them), or nothing but its key entry ("no fit: ...").
usl_plot = usl_ok ? sprintf("[1:%d:1] '+' using 1:(S($1))", usl_top) : "NaN"
amdahl_key = amdahl_title eq "" ? "" : "NaN title amdahl_title with lines dt 3 lw 1 lc rgb mode_color('fork'),"
# The advice: an arrow down to the axis at the recommended -j, labelled
# short; the whole of it in the key.
set arrow 2 from advice_jobs, graph 0.9 to advice_jobs, graph 0 lw 2 lc rgb "#CC79A7" front
set label 2 sprintf("-j %d", advice_jobs) at advice_jobs, graph 0.93 center tc rgb "#CC79A7" front
advice_key = "NaN title advice_title with lines lw 2 lc rgb '#CC79A7'"
if (two) {
	set multiplot layout 2,1 title title
	set title sprintf("%s (%s)", panel1, medians)
} else {
	set title sprintf("%s\n%s (%s)", title, panel1, medians)
}
set ylabel "speedup (serial median wall time / median wall time)"
if (draw_bars) {
	plot ideal(x) title ideal_title(cores) with lines dt 2 lw 1.5 lc rgb "#999999", \
		@usl_plot title usl_title with lines dt 4 lw 2 lc rgb mode_color("fork"), @amdahl_key @advice_key, \
		for [i=1:words(modes)] data index i using 2:7:8:9 with yerrorlines lw 2 \
			pt mode_point(word(modes, i)) lc rgb mode_color(word(modes, i)) title word(modes, i) \
		@noise_plot
} else {
	plot ideal(x) title ideal_title(cores) with lines, \
		@usl_plot title usl_title with lines, @amdahl_key @advice_key, \
		for [i=1:words(modes)] data index i using 2:7 with linespoints title word(modes, i) \
		@noise_plot
}
unset arrow 2
unset label 2
if (two) {
	set title sprintf("%s (%s)%s", panel2, medians, panel2_note)
	set ylabel "task-phase speedup (serial median task_s / median task_s)"
	if (draw_bars) {
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
