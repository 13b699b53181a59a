# style.gp: what every cowrun plot shares: fonts, sizes, grid, and one colour
# per mode, so a mode looks the same in every plot.  Loaded by the other
# scripts (plots/plot puts this directory on GNUPLOT_LIB).

set encoding utf8
set datafile commentschars "#"
set grid lc rgb "#dddddd"
set border lc rgb "#555555"
set key top left box opaque noenhanced
set title noenhanced
set pointsize 1.2

# mode_color(MODE): the colour of a mode's line (Okabe-Ito, colour-blind safe).
mode_color(m) = m eq "fork" ? "#0072B2" : m eq "omp" ? "#009E73" : \
	m eq "parallel-task" ? "#D55E00" : m eq "parallel-shard" ? "#E69F00" : \
	m eq "serial" ? "#555555" : "#CC79A7"
# mode_point(MODE): its point type, for black-and-white print.
mode_point(m) = m eq "fork" ? 7 : m eq "omp" ? 5 : m eq "parallel-task" ? 9 : \
	m eq "parallel-shard" ? 11 : 13

# Each script plots to the PNG first, then replots into the SVG.
png_terminal = "set terminal pngcairo size 1100,700 font 'DejaVu Sans,11' noenhanced"
svg_terminal = "set terminal svg size 1100,700 font 'DejaVu Sans,11' noenhanced background rgb 'white'"

# ideal(n): the best speedup n workers can give, by what the tasks wait on
# (io and cores come from PARAMS: plots/plot reads the CSV's "# bound:"
# line): n when they wait on I/O, min(n, cores) when they compute.
# ideal_title(c): its name in a key, for c cores.
ideal(n) = io ? n : (n < cores ? n : cores)
ideal_title(c) = io ? "ideal: speedup = workers (I/O-bound)" : \
	sprintf("ideal: min(workers, %d cores)", c)
