# sales_report.R - the nightly sales report in R with data.table, for `cowrun r`.
#
#     cowrun -j 8 -o reports r sales_report.R --input sales.csv
#
# Reads the CSV that `cowrun sales --input` reads (header
# date,store,product,quantity,unit_price; prices with at most 2 decimals),
# writes one report per store (store-NNNN.txt, the C workload's names) and
# prints the company summary.  Reports and summary are formatted as the C
# workload's (workloads/sales: report.c, sales.c's sales_finish), so the two
# can be compared byte for byte, as workloads/python/examples/sales_report.py
# is for pandas; the company totals are these lines of the summary:
#
#       Transactions                         20,000
#       Units sold                          130,782
#       Revenue                      $13,078,024.30
#
# Load: one data.table::fread() with every column's class given
# (colClasses), quoting and white-space stripping off (the C reader has
# neither), and any warning of fread's an error: a column fread would bump
# to another type (an integer above 2^31, a date that is not one) stops
# the setup with one line instead of arriving as character or integer64.
#
# Memory (what a forked worker copies): the state holds a data.table of
# four integer columns (day, product, quantity, cents: 16 bytes a row,
# sorted by store) and each store's row offsets; no character column and
# no factor of per-row strings survives the setup.  The date is read as
# fread's IDate (an integer: no string is ever made for it); product and
# price are read as text, turned into integer codes with chmatch() against
# their few distinct values (about 5,000 products and 40,000 prices at 5M
# rows), and the text columns dropped.  Why: R's garbage collector writes
# the mark bits in the header of every object it visits, and every string
# is an object, so a worker whose GC sweeps 5M strings writes to (and
# copies) every page holding them: the issue's probe measured 339 MB
# private per worker for 5M unique strings against 31-37 MB for numeric
# and factor columns.  An integer vector is one object: the GC writes one
# header, and the worker's reads leave its pages shared.  A factor would
# do as well (it is an integer vector too) but fread would build the
# character column first; the codes here are built from the few distinct
# values instead.  A worker copies only its store's rows (sales[rows]).
#
# Money is integer cents held in doubles (exact below 2^53; setup refuses
# a file whose revenue could round), every printed ratio is computed with
# %/% on whole numbers, so every run prints the same bytes.
#
# i counts from 0 (cowrun's task index, as in --tasks and its messages):
# store i's rows are offsets[i + 1] + 1 .. offsets[i + 2].

suppressPackageStartupMessages(library(data.table))

HEADER <- "date,store,product,quantity,unit_price"
USAGE <- "usage: sales_report.R --input FILE (a sales CSV with header date,store,product,quantity,unit_price)"
MAX_ID <- 999999999
MAX_QUANTITY <- 1000000
MAX_CENTS <- 100000000
MAX_SPAN_DAYS <- 36525
TOP_PRODUCTS <- 10L
TOP_STORES <- 5L
WEEKDAYS <- c("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

fail <- function(...) stop(paste0("sales_report.R: ", ...), call. = FALSE)

# ---- formatting: whole numbers only, so every run prints the same bytes ----

# 1234567 -> "1,234,567" (vectorised; sprintf("%.0f") is exact for whole
# doubles; a regex rather than formatC(big.mark=), 7x faster per call).
count <- function(n) gsub("(?<=[0-9])(?=(?:[0-9]{3})+$)", ",", sprintf("%.0f", n), perl = TRUE)

money <- function(cents) {
  a <- abs(cents)
  paste0(ifelse(cents < 0, "-", ""), "$", count(a %/% 100), ".", sprintf("%02.0f", a %% 100))
}

# num / den cents, rounded half up (the C workload's rounding); 0 if den is 0.
avg_money <- function(num, den) money((num + den %/% 2) %/% pmax(den, 1) * (den > 0))

# num / den with two decimals, rounded half up.
ratio <- function(num, den) {
  h <- if (den > 0) (num * 100 + den %/% 2) %/% den else 0
  sprintf("%.0f.%02.0f", h %/% 100, h %% 100)
}

# part of whole as "12.3%", "-" where whole is 0.
share <- function(part, whole) {
  w <- pmax(whole, 1)
  pm <- (part * 1000 + w %/% 2) %/% w
  out <- sprintf("%.0f.%.0f%%", pm %/% 10, pm %% 10)
  out[rep_len(whole <= 0, length(out))] <- "-"
  out
}

plural <- function(n) ifelse(n == 1, "", "s")

# ---- setup (the parent, once) ------------------------------------------------

parse_args <- function(args) {
  input <- NULL
  i <- 1L
  while (i <= length(args)) {
    a <- args[[i]]
    if (a == "--input" && i < length(args)) {
      input <- args[[i + 1L]]
      i <- i + 2L
    } else if (startsWith(a, "--input=") && nchar(a) > 8L) {
      input <- substring(a, 9L)
      i <- i + 1L
    } else if (a %in% c("--help", "-h")) {
      fail(USAGE)
    } else if (a == "--input") {
      fail("--input needs a FILE; ", USAGE)
    } else {
      fail("unknown argument '", a, "'; ", USAGE)
    }
  }
  if (is.null(input)) fail("--input FILE is required; ", USAGE)
  input
}

# fread with every class explicit; any warning (a type bump, a short line
# where fread stops early) is an error naming the file.
read_sales <- function(path) {
  first <- tryCatch(readLines(path, n = 1L, warn = FALSE), error = function(e)
    fail("cannot read '", path, "': ", conditionMessage(e)))
  first <- sub("^\xEF\xBB\xBF", "", sub("\r$", "", first), useBytes = TRUE)
  if (length(first) == 0L || first != HEADER)
    fail(path, ": bad header '", substr(first[1], 1, 60), "' (expected '", HEADER, "')")
  withCallingHandlers(
    fread(path, sep = ",", header = TRUE, quote = "", strip.white = FALSE,
          na.strings = NULL, blank.lines.skip = TRUE, showProgress = FALSE,
          colClasses = c(date = "IDate", store = "integer", product = "character",
                         quantity = "integer", unit_price = "character")),
    warning = function(w) fail(path, ": ", conditionMessage(w)),
    error = function(e) fail(path, ": ", conditionMessage(e)))
}

# x: an integer column (an IDate is one); lo and hi: its bounds.
check_column <- function(path, x, name, class, lo, hi) {
  if (!inherits(x, class)) fail(path, ": column ", name, " is not ", class)
  if (anyNA(x)) fail(path, ": an empty or bad ", name, " at data row ", which(is.na(x))[1])
  x <- unclass(x)
  if (min(x) < lo || max(x) > hi)  # min and max: 8x faster than range() here
    fail(path, ": ", name, " out of range ", format(lo), " to ", format(hi, scientific = FALSE))
}

# A text column as integer codes, 1.. in first-appearance order (data.table's
# grouping: one pass, no string made); returns the distinct texts, code k's
# text at [k], and leaves the codes in column `code`.
encode <- function(dt, col, code) {
  dt[, (code) := .GRP, by = col]
  text <- character(max(dt[[code]]))
  text[dt[[code]]] <- dt[[col]]
  text
}

# Exact cents of prices like "3", "3.4", "3.49" (never via a float parse);
# the C reader's rule: digits, at most 2 decimals, at most 1000000.00.
cents_of <- function(path, text) {
  ok <- grepl("^[0-9]{1,15}(\\.[0-9]{1,2})?$", text)
  if (!all(ok)) fail(path, ": bad unit price '", text[!ok][1], "' (at most 2 decimals)")
  whole <- as.numeric(sub("\\..*", "", text))
  frac <- sub("^[0-9]+\\.?", "", text)
  cents <- whole * 100 + ifelse(nchar(frac) == 0L, 0, as.numeric(frac) * ifelse(nchar(frac) == 1L, 10, 1))
  if (any(cents > MAX_CENTS)) fail(path, ": unit price '", text[cents > MAX_CENTS][1], "' above 1000000.00")
  cents
}

# The catalogue of the distinct product texts: a text starting with a digit
# is an id (so "007" is product 7, as in C), any other a name; ids first by
# number, then names in byte order (radix sorts in the C locale).  Returns
# each text's catalogue index and the catalogue's labels.
catalogue <- function(path, text) {
  is_id <- grepl("^[0-9]", text)
  id <- suppressWarnings(as.numeric(ifelse(is_id, text, NA)))
  bad <- is_id & (!grepl("^[0-9]+$", text) | is.na(id) | id < 1 | id > MAX_ID)
  bad <- bad | (!is_id & (nchar(text, "bytes") > 64L | grepl("^ | $|[\x01-\x1f\"\x7f]", text, useBytes = TRUE) | text == ""))
  if (any(bad)) fail(path, ": bad product '", text[bad][1], "'")
  key <- ifelse(is_id, sprintf("%.0f", id), text)
  keys <- unique(key)
  kid <- id[match(keys, key)]
  ord <- order(is.na(kid), kid, keys, method = "radix")
  list(index = match(key, keys[ord]), label = keys[ord])
}

calendar <- function(first, last) {
  days <- as.IDate(first:last)
  ym <- as.integer(format(days, "%Y")) * 12L + as.integer(format(days, "%m"))
  list(dates = format(days, "%Y-%m-%d"),
       weekday = (first:last + 3L) %% 7L + 1L,       # 1970-01-01: a Thursday; 1 = Mon
       month_of_day = ym - ym[1] + 1L,
       months = unique(format(days, "%Y-%m")))
}

timer <- function(what) {
  if (nzchar(Sys.getenv("SALES_REPORT_VERBOSE"))) {
    now <- proc.time()[["elapsed"]]
    if (!is.null(what)) message(sprintf("sales_report.R: %-12s %.3f s", what, now - timer_at))
    timer_at <<- now
  }
}
timer_at <- 0

load_sales <- function(path) {
  timer(NULL)
  dt <- read_sales(path)
  timer("fread")
  if (nrow(dt) == 0L) fail(path, ": no data rows")
  check_column(path, dt$date, "date", "IDate", unclass(as.IDate("1000-01-01")),
               unclass(as.IDate("9999-12-31")))
  check_column(path, dt$store, "store", "integer", 1, MAX_ID)
  check_column(path, dt$quantity, "quantity", "integer", 1, MAX_QUANTITY)
  for (col in c("product", "unit_price"))
    if (!is.character(dt[[col]]) || anyNA(dt[[col]])) fail(path, ": column ", col, " is not text")
  first <- min(unclass(dt$date))
  last <- max(unclass(dt$date))
  if (last - first >= MAX_SPAN_DAYS) fail(path, ": dates span more than 100 years")
  timer("checks")
  # Price texts -> integer codes -> cents, through their distinct values.
  cents <- as.integer(cents_of(path, encode(dt, "unit_price", "ccode")))
  dt[, `:=`(cents = cents[ccode], unit_price = NULL, ccode = NULL)]
  timer("prices")
  # Products: one grouping gives the distinct texts and each one's list
  # price, the highest price it sold at (as in C); chmatch() the codes.
  p <- dt[, .(list_price = max(cents)), by = product]
  catl <- catalogue(path, p$product)
  list_price <- numeric(length(catl$label))
  list_price[catl$index] <- p$list_price
  dt[, `:=`(day = as.integer(date) - first + 1L, product = catl$index[chmatch(product, p$product)],
            date = NULL)]
  timer("products")
  # Shares multiply revenue by 1000: keep that below 2^53, exact in doubles.
  if (dt[, sum(as.numeric(quantity) * cents)] * 1000 >= 2^53)
    fail(path, ": total revenue too large for exact arithmetic in doubles")
  setorder(dt, store)  # radix: stable, so each store's rows stay in file order
  timer("sort")
  list(dt = dt, first = first, last = last, labels = catl$label, list_price = list_price)
}

setup <- function(args) {
  input <- parse_args(args)
  if (exists("cowrun_input", mode = "function")) cowrun_input(input)
  t0 <- proc.time()[["elapsed"]]
  d <- load_sales(input)
  stores <- d$dt[, .N, keyby = store]
  d$dt[, store := NULL]  # the offsets say it
  state <- c(list(source = input, ndays = d$last - d$first + 1L, sales = d$dt,
                  store_ids = stores$store, offsets = c(0L, cumsum(stores$N)),
                  labels = d$labels, list_price = d$list_price, merged = list()),
             calendar(d$first, d$last))
  if (nzchar(Sys.getenv("SALES_REPORT_VERBOSE")))
    message(sprintf("sales_report.R: setup %.3f s, %d rows, %d stores",
                    proc.time()[["elapsed"]] - t0, nrow(d$dt), length(state$store_ids)))
  rm(d, stores)
  invisible(gc())  # the text columns and fread's buffers freed before the fork
  state
}

task_names <- function(ids) sprintf("store-%04d.txt", ids)

tasks <- function(state) task_names(state$store_ids)

# --dry-run: the file's stores from its store column alone.
plan <- function(args) {
  input <- parse_args(args)
  s <- fread(input, select = "store", colClasses = c(store = "integer"), showProgress = FALSE)
  task_names(sort(unique(s$store)))
}

# ---- run (a forked worker, one store) ----------------------------------------

# Sums of tx, units and revenue of dt by key (integers in 1..n), with a
# row for every key in 1..n (zeros where dt has none).
tally <- function(dt, g, n) {
  t <- dt[, .(tx = sum(tx), units = sum(units), revenue = sum(revenue)), keyby = .(k = g)]
  out <- data.table(tx = numeric(n), units = numeric(n), revenue = numeric(n))
  out[t$k, `:=`(tx = t$tx, units = t$units, revenue = t$revenue)]
  out
}

nearest_rank <- function(sorted, pct) sorted[(length(sorted) * pct + 99) %/% 100]

report_lines <- function(s, id, sale) {
  rev <- sum(sale$revenue); units <- sum(sale$units); tx <- nrow(sale)
  discount <- sum(sale$discount); below <- sum(sale$discount > 0)
  by_day <- tally(sale, sale$day, s$ndays)
  trading <- which(by_day$tx > 0)
  # which.max/which.min: the first, the earliest day of a tie.
  best <- trading[which.max(by_day$revenue[trading])]
  worst <- trading[which.min(by_day$revenue[trading])]
  title <- sprintf("NIGHTLY SALES REPORT - STORE %04d", id)
  period <- sprintf("%s to %s (%d day%s)", s$dates[1], s$dates[s$ndays], s$ndays, plural(s$ndays))
  summary <- sprintf("  %-31s %16s%s",
    c("Transactions", "Units sold", "Revenue", "Average transaction",
      "Average units per transaction", "Average revenue per trading day",
      "Sold below list price", "Discount given", "Trading days"),
    c(count(tx), count(units), money(rev), avg_money(rev, tx), ratio(units, tx),
      avg_money(rev, length(trading)), count(below), money(discount),
      sprintf("%d of %d", length(trading), s$ndays)),
    c(rep("", 6), sprintf(" (%s of transactions)", share(below, tx)), "",
      sprintf(" (first sale %s, last sale %s)", s$dates[trading[1]], s$dates[trading[length(trading)]])))

  m <- tally(by_day, s$month_of_day, length(s$months))
  months <- sprintf("  %-8s %14s %12s %18s %8s", c(s$months, "Total"),
    count(c(m$tx, tx)), count(c(m$units, units)), money(c(m$revenue, rev)),
    share(c(m$revenue, rev), rev))

  # Best sellers: revenue descending, ties in catalogue order (keyby sorts
  # by catalogue index; order() in i is data.table's forder, stable).
  p <- sale[, .(units = sum(units), revenue = sum(revenue)), keyby = product]
  p <- p[order(-revenue)][seq_len(min(.N, TOP_PRODUCTS))]
  products <- sprintf("  %4d %10s %16s %10s %10s  %s", seq_len(nrow(p)), count(p$units),
    money(p$revenue), avg_money(p$revenue, p$units), money(s$list_price[p$product]),
    s$labels[p$product])

  basket <- sort(sale$units); ticket <- sort(sale$revenue)
  pct <- c(50, 90, 99, 100)
  cells <- function(v) paste(sprintf(" %14s", v), collapse = "")
  day_line <- function(what, d) sprintf("%-10s %s %s %14s in %s transaction%s", what,
    s$dates[d], WEEKDAYS[s$weekday[d]], money(by_day$revenue[d]), count(by_day$tx[d]),
    plural(by_day$tx[d]))

  days <- tabulate(s$weekday, 7L)
  w <- tally(by_day, s$weekday, 7L)
  weekdays <- sprintf("  %-7s %5d %14s %12s %18s %14s %7s", WEEKDAYS, days, count(w$tx),
    count(w$units), money(w$revenue), avg_money(w$revenue, days), share(w$revenue, rev))

  lines <- c(title, strrep("=", nchar(title)),
    paste("Period covered: ", period), paste("Source:         ", s$source), "",
    "Summary", summary, "",
    "Revenue and units by month",
    sprintf("  %-8s %14s %12s %18s %8s", "Month", "Transactions", "Units", "Revenue", "Share"),
    months, "",
    sprintf("Top %d products by revenue", TOP_PRODUCTS),
    sprintf("  %4s %10s %16s %10s %10s  %s", "Rank", "Units", "Revenue", "Avg price", "List", "Product"),
    products, "",
    sprintf("Per transaction         %14s %14s %14s %14s", "p50", "p90", "p99", "max"),
    sprintf("  %-21s%s", "Units (basket size)", cells(count(nearest_rank(basket, pct)))),
    sprintf("  %-21s%s", "Revenue", cells(money(nearest_rank(ticket, pct)))), "",
    day_line("Best day:", best), day_line("Worst day:", worst), "",
    "Weekday profile",
    sprintf("  %-7s %5s %14s %12s %18s %14s %7s", "Weekday", "Days", "Transactions",
            "Units", "Revenue", "Avg per day", "Share"),
    weekdays)
  list(lines = lines,
       result = c(store = id, revenue = rev, units = units, transactions = tx,
                  discount = discount, best_day = best, best_day_revenue = by_day$revenue[best]))
}

run <- function(state, i, name) {
  k <- i + 1L
  rows <- (state$offsets[k] + 1L):state$offsets[k + 1L]
  # This worker's own copy of its store's rows (a few thousand); the shared
  # columns are only read.  Doubles from here: exact whole numbers to 2^53.
  sale <- state$sales[rows]
  sale[, `:=`(tx = 1, units = as.numeric(quantity), revenue = as.numeric(quantity) * cents,
              discount = (state$list_price[product] - cents) * as.numeric(quantity))]
  r <- report_lines(state, state$store_ids[k], sale)
  # useBytes: product names go out as the file's bytes (UTF-8), whatever the locale.
  writeLines(r$lines, cowrun_report(), useBytes = TRUE)
  r$result
}

# ---- merge and finish (the parent) ---------------------------------------------

merge <- function(state, i, name, result) {
  if (!is.numeric(result) || result[["store"]] != state$store_ids[i + 1L])
    fail("task ", i, " (", name, "): a result for another store")
  state$merged[[length(state$merged) + 1L]] <- result
  state
}

finish <- function(state, out) {
  r <- do.call(rbind, state$merged)
  n <- length(state$merged)
  total <- if (n > 0) colSums(r) else c(revenue = 0, units = 0, transactions = 0, discount = 0)
  rev <- total[["revenue"]]
  lines <- c("Sales summary",
    sprintf("  %-24s %s", c("Source", "Period", "Stores reported"),
      c(state$source, sprintf("%s to %s (%d day%s)", state$dates[1], state$dates[state$ndays],
                              state$ndays, plural(state$ndays)),
        sprintf("%d of %d", n, length(state$store_ids)))),
    # The company totals, the lines a test compares with cowrun sales.
    sprintf("  %-24s %18s",
      c("Transactions", "Units sold", "Revenue", "Average per store", "Average transaction",
        "Discount given"),
      c(count(total[["transactions"]]), count(total[["units"]]), money(rev), avg_money(rev, n),
        avg_money(rev, total[["transactions"]]), money(total[["discount"]]))),
    "", sprintf("Top %d stores by revenue", TOP_STORES),
    sprintf("  %4s %6s %18s %7s %14s  %s", "Rank", "Store", "Revenue", "Share", "Transactions",
            "Best day"))
  if (n > 0) {
    # Revenue descending, ties in store (task) order: radix order is stable.
    top <- r[head(order(-r[, "revenue"], method = "radix"), TOP_STORES), , drop = FALSE]
    lines <- c(lines, sprintf("  %4d   %04.0f %18s %7s %14s  %s %s", seq_len(nrow(top)),
      top[, "store"], money(top[, "revenue"]), share(top[, "revenue"], rev),
      count(top[, "transactions"]), state$dates[top[, "best_day"]], money(top[, "best_day_revenue"])))
  }
  writeLines(lines, out, useBytes = TRUE)
}
