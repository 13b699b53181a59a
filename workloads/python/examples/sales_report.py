"""sales_report.py - the nightly sales report in pandas, for `cowrun python`.

    cowrun -j 8 -o reports python sales_report.py --input sales.csv

Reads the CSV that `cowrun sales --input` reads (header
date,store,product,quantity,unit_price; prices with at most 2 decimals),
writes one report per store (store-NNNN.txt, the C workload's names) and
prints the company summary.  Reports and summary are formatted as the C
workload's (workloads/sales: report.c, sales.c's sales_finish), so the two
can be compared byte for byte; a test needs at least the company totals,
these three lines of the summary ("  %-24s %18s" in sales_finish):

      Transactions                         20,000
      Units sold                          130,782
      Revenue                      $13,078,024.30

Load: the CSV's parts (cowrun.csv_parts(), fixed by the file) are read by
pandas on every setup thread (cowrun.parallel(), forked children), each
sorted by store there and sent back as numpy arrays (codes and their
categories); the parent makes the categories one and copies each store's
rows part by part: no frame, no sort.

Memory: setup keeps four flat numpy arrays (day, product, quantity, cents;
12 bytes a row: the day and product as 2-byte codes), sorted by store,
with each store's start and end offsets.  A worker slices those arrays (views: nothing is copied or written)
and builds its small per-store frame in its own memory.  It never calls
DataFrame.take() or similar on a shared frame: pandas consolidates a frame's
column blocks in place on such calls, which makes every forked worker copy
the whole frame.  Money is integer cents throughout, parsed from the text.
"""
import argparse
import gc
import os
import re
import sys
import time
import types

import numpy as np
import pandas as pd

import cowrun

HEADER = "date,store,product,quantity,unit_price"
MAX_ID, MAX_QUANTITY, MAX_CENTS = 999_999_999, 1_000_000, 100_000_000
TOP_PRODUCTS, TOP_STORES = 10, 5
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
ID = re.compile(r"[0-9]+\Z")
PRICE = re.compile(r"([0-9]{1,7})(?:\.([0-9]{1,2}))?\Z")  # [0-9]: \d takes any Unicode digit


# ---- formatting: integers only, so every run prints the same bytes ----------

def count(n):
    return f"{int(n):,}"


def money(cents):
    cents = int(cents)
    return f"{'-' if cents < 0 else ''}${abs(cents) // 100:,}.{abs(cents) % 100:02d}"


def avg_money(num, den):
    """num / den cents, rounded half up (the C workload's rounding)."""
    return money((int(num) + int(den) // 2) // int(den) if den > 0 else 0)


def ratio(num, den):
    """num / den with two decimals, rounded half up."""
    h = (int(num) * 100 + int(den) // 2) // int(den) if den > 0 else 0
    return f"{h // 100}.{h % 100:02d}"


def share(part, whole):
    if whole <= 0:
        return "-"
    permille = (int(part) * 1000 + int(whole) // 2) // int(whole)
    return f"{permille // 10}.{permille % 10}%"


def plural(n):
    return "" if n == 1 else "s"


# ---- setup (the parent, once) ------------------------------------------------

def cents_of(text):
    """Exact cents of a price like '3', '3.4' or '3.49' (never via float)."""
    m = PRICE.match(text)
    if m is None:
        raise ValueError(f"bad unit price {text!r} (at most 2 decimals)")
    whole, frac = m.groups()
    cents = int(whole) * 100 + int((frac or "0").ljust(2, "0"))
    if cents > MAX_CENTS:
        raise ValueError(f"unit price {text!r} above 1000000.00")
    return cents


def check_range(name, values, lo, hi):
    if values.min() < lo or values.max() > hi:
        raise ValueError(f"{name} out of range {lo} to {hi}")


DTYPES = {"date": "category", "store": "int32", "product": "category",
          "quantity": "int32", "unit_price": "category"}
CATEGORIES = ("date", "product", "unit_price")


def read_part(part):
    """One part of the CSV (cowrun.csv_parts()), in a child of the setup:
    explicit dtypes, since a part's inference is not the whole file's."""
    return flat_part(pd.read_csv(part.open(), dtype=DTYPES, keep_default_na=False, na_values=[""]))


def flat_part(df):
    """A part's rows as plain numpy arrays (no frame: a frame pickles its
    index, and the parent would rebuild it), stably sorted by store, with
    each store's run: [bounds[i], bounds[i + 1]) holds store stores[i].
    Each text column is its own categories (sorted strings) and codes;
    the parent makes them one.  Sorting here, on every setup thread,
    leaves the parent no sort: it copies each store's run of each part in
    part order, the same order as a stable sort of the file's rows."""
    store = df["store"].to_numpy()
    order = sort_order(store)
    store = store[order]
    new = np.ones(len(store), dtype=bool)
    new[1:] = store[1:] != store[:-1]
    start = np.flatnonzero(new)
    quantity = df["quantity"].to_numpy()[order]
    part = types.SimpleNamespace(
        rows=len(store), stores=store[start], bounds=np.append(start, len(store)),
        quantity=quantity, categories={}, codes={}, missing=False,
        extremes={"store": store[[0, -1]] if len(store) else store,
                  "quantity": np.array([quantity.min(), quantity.max()]) if len(store) else quantity})
    for column in CATEGORIES:
        cat = df[column].cat
        part.categories[column] = cat.categories.tolist()
        part.codes[column] = cat.codes.to_numpy()[order]
        part.missing |= bool((part.codes[column] < 0).any())  # an empty field
    return part


def sort_order(store):
    """np.argsort(store, kind="stable"), in a fifth of the time where the
    store ids span less than 65536: as 16-bit keys numpy sorts them by
    radix, in one pass, where int32 keys take a timsort."""
    if len(store) and int(store.max()) - int(store.min()) < 65536:
        return np.argsort((store - store.min()).astype(np.uint16), kind="stable")
    return np.argsort(store, kind="stable")


def code_dtype(n):
    """The dtype of pandas' codes for n categories (coerce_indexer_dtype)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n < np.iinfo(dtype).max:
            return dtype
    return np.int64


class Joined:
    """The parts as one, in store order: each text column's categories
    made one (sorted, as union_categoricals(sort_categories=True) makes
    them), and column() the rows of a column through a table of values
    per category, written run by run (a store's rows of part 0, then of
    part 1, ...): no frame, no sort, no recoded copy of every part."""

    def __init__(self, parts, path):
        self.parts = parts
        rows = sum(p.rows for p in parts)
        if rows == 0 or any(p.missing for p in parts):
            raise ValueError(f"{path}: no sales, or empty fields")
        for name, hi in (("store", MAX_ID), ("quantity", MAX_QUANTITY)):
            check_range(name, np.concatenate([p.extremes[name] for p in parts]), 1, hi)
        self.labels = {c: sorted(set().union(*(p.categories[c] for p in parts))) for c in CATEGORIES}
        self.store_ids = np.unique(np.concatenate([p.stores for p in parts]))
        # count[s, i]: store s's rows in part i; where each run goes.
        count = np.zeros((len(self.store_ids), len(parts)), dtype=np.int64)
        self.store_of = []
        for i, p in enumerate(parts):
            self.store_of.append(np.searchsorted(self.store_ids, p.stores))
            count[self.store_of[-1], i] = np.diff(p.bounds)
        self.offsets = np.append(0, np.cumsum(count.sum(axis=1)))
        self.to = self.offsets[:-1, None] + np.cumsum(count, axis=1) - count

    def column(self, name, values=None):
        """Column name in store order; a text column as values[code]
        (values: per category of self.labels[name]), or its codes."""
        out, index = None, None
        if name in CATEGORIES:
            index = pd.Index(self.labels[name])
            if values is None:
                values = np.arange(len(index), dtype=code_dtype(len(index)))
        for i, p in enumerate(self.parts):
            if name in CATEGORIES:
                table = values[index.get_indexer(p.categories[name])]
                src = p.codes[name]
            else:
                table, src = None, getattr(p, name)
            if out is None:
                out = np.empty(self.offsets[-1], dtype=(table if table is not None else src).dtype)
            for s, a, b in zip(self.store_of[i], p.bounds[:-1], p.bounds[1:]):
                to = out[self.to[s, i]:self.to[s, i] + b - a]
                if table is None:
                    to[:] = src[a:b]
                else:
                    np.take(table, src[a:b], out=to)
        return out


def load(path):
    regular = os.path.isfile(path)  # a pipe is read once: its header below
    if regular:
        with open(path, encoding="utf-8") as f:
            if f.readline().rstrip("\n") != HEADER:
                raise ValueError(f"{path}: the header is not {HEADER}")
    # Dates, products and prices as categories: each distinct text is kept
    # (and parsed) once, the rows hold 2-byte codes; no column of 5 million
    # Python strings is ever built.  The parts load on every setup thread
    # (cowrun.parallel); each part has categories of its own, made one by
    # Joined, which maps every part's codes through a table.
    t0 = time.monotonic()
    # A pipe has no parts (csv_parts() refuses it): read whole, as is
    # compare/bench-python's baseline (SALES_REPORT_LOAD=whole).
    whole = os.environ.get("SALES_REPORT_LOAD") == "whole" or not regular
    if whole:
        df = pd.read_csv(path, dtype=DTYPES, keep_default_na=False, na_values=[""])
        if ",".join(df.columns) != HEADER:
            raise ValueError(f"{path}: the header is not {HEADER}")
        # One part: what a child does with each (read_part), counted in
        # the load as the children's is (bench-python's serial fraction).
        parts = [flat_part(df)]
        del df
    else:
        # Parts of 4 blocks (16 MiB): each read_csv() call has a fixed
        # cost; at 5M rows (132 MB) 8 parts loaded in 1.47-1.49 s against
        # 1.74-1.78 s for 32 parts of one block (-j 2, 2 runs each), the
        # parent's peak RSS 416-421 MB against 478-493 MB.
        # SALES_REPORT_PART_BLOCKS changes it (the tests' small CSVs).
        blocks = int(os.environ.get("SALES_REPORT_PART_BLOCKS", "4"))
        parts = cowrun.parallel(read_part, cowrun.csv_parts(path, blocks=blocks))
    if cowrun.verbosity():
        print(f"sales_report.py: load {time.monotonic() - t0:.3f} s", file=sys.stderr)
    return Joined(parts, path)


def calendar(first, last):
    """Dates, weekdays and month indexes of the days first..last (day numbers)."""
    days = np.arange(first, last + 1).astype("datetime64[D]")
    months = days.astype("datetime64[M]")
    month_of_day = (months - months[0]).astype(np.int32)
    weekday = ((np.arange(first, last + 1) + 3) % 7).astype(np.int8)  # 1970-01-01: a Thursday
    return (np.datetime_as_string(days).tolist(), weekday, month_of_day, np.datetime_as_string(np.unique(months)).tolist())


def setup(argv):
    p = argparse.ArgumentParser(prog="sales_report.py", description="nightly sales reports")
    p.add_argument("--input", required=True, metavar="FILE", help="the sales CSV")
    args = p.parse_args(argv)
    data = load(args.input)  # cowrun.csv_parts() declares the input, hashed once

    dates = pd.Index(data.labels["date"], dtype=object)
    if not dates.str.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}").all():
        raise ValueError(f"{args.input}: dates must be YYYY-MM-DD")
    day_number = pd.to_datetime(dates, format="%Y-%m-%d").values.astype("datetime64[D]").astype(np.int64)
    first, last = int(day_number.min()), int(day_number.max())
    cents_of_code = np.array([cents_of(t) for t in data.labels["unit_price"]], dtype=np.int32)

    # Products: ids before names, ids by number (catalogue order, as in C);
    # a product's list price is the highest price it sold at (C does the same).
    labels = data.labels["product"]
    catalogue = sorted(range(len(labels)), key=lambda c: (0, int(labels[c]), "")
                       if ID.match(labels[c]) else (1, 0, labels[c]))
    rank = np.empty(len(labels), dtype=np.int32)
    rank[catalogue] = np.arange(len(labels))

    # Four flat arrays in store order (the parts came sorted) and the offsets.
    s = types.SimpleNamespace(  # plain types: picklable anywhere (joblib sends it)
        source=args.input, first=first, ndays=last - first + 1,
        day=data.column("date", (day_number - first).astype(np.int16 if last - first < 32768 else np.int32)),
        product=data.column("product"), quantity=data.column("quantity"),
        cents=data.column("unit_price", cents_of_code),
        labels=labels, product_rank=rank, store_ids=data.store_ids, offsets=data.offsets)
    s.list_price = pd.Series(s.cents).groupby(s.product, sort=False).max().reindex(
        range(len(labels)), fill_value=0).to_numpy()  # unsorted groups: a third less time
    s.dates, s.weekday, s.month_of_day, s.months = calendar(first, last)
    s.merged = []
    # Free the parts before the fork, so the workers inherit a compact heap.
    del data
    gc.collect()
    return s


def tasks(s):
    return [f"store-{int(i):04d}.txt" for i in s.store_ids]


# ---- run (a forked worker, one store) -----------------------------------------

def store_frame(s, k):
    """Store k's sales in a frame of this worker's own (slices of the shared arrays)."""
    a, b = s.offsets[k], s.offsets[k + 1]
    sale = pd.DataFrame({"day": s.day[a:b], "product": s.product[a:b],
                         "units": s.quantity[a:b].astype(np.int64),
                         "price": s.cents[a:b].astype(np.int64)})
    sale["revenue"] = sale["units"] * sale["price"]
    # The list price is the highest price seen, so the discount is >= 0.
    sale["discount"] = (s.list_price[sale["product"]] - sale["price"]) * sale["units"]
    sale["month"] = s.month_of_day[sale["day"]]
    sale["weekday"] = s.weekday[sale["day"]]
    return sale


def tally(sale, key, index):
    t = sale.groupby(key).agg(tx=("units", "size"), units=("units", "sum"),
                              revenue=("revenue", "sum"))
    return t.reindex(index, fill_value=0)


def nearest_rank(sorted_values, pct):
    return sorted_values[(len(sorted_values) * pct + 99) // 100 - 1]


def write_report(f, s, store_id, sale):
    """Store store_id's report on f; returns its totals (the task's result).
    A store has a sale at least: the stores are the file's."""
    rev, units, tx = int(sale["revenue"].sum()), int(sale["units"].sum()), len(sale)
    discount, below = int(sale["discount"].sum()), int((sale["discount"] > 0).sum())
    by_day = tally(sale, "day", range(s.ndays))
    trading = by_day[by_day["tx"] > 0]
    # idxmax/idxmin return the first (earliest) day of a tie.
    best, worst = trading["revenue"].idxmax(), trading["revenue"].idxmin()
    title = f"NIGHTLY SALES REPORT - STORE {store_id:04d}"
    print(f"{title}\n{'=' * len(title)}", file=f)
    print(f"Period covered:  {s.dates[0]} to {s.dates[-1]} ({s.ndays} day{plural(s.ndays)})", file=f)
    print(f"Source:          {s.source}\n\nSummary", file=f)
    first_last = f" (first sale {s.dates[trading.index[0]]}, last sale {s.dates[trading.index[-1]]})"
    for what, value, after in (
            ("Transactions", count(tx), ""), ("Units sold", count(units), ""),
            ("Revenue", money(rev), ""), ("Average transaction", avg_money(rev, tx), ""),
            ("Average units per transaction", ratio(units, tx), ""),
            ("Average revenue per trading day", avg_money(rev, len(trading)), ""),
            ("Sold below list price", count(below), f" ({share(below, tx)} of transactions)"),
            ("Discount given", money(discount), ""),
            ("Trading days", f"{len(trading)} of {s.ndays}", first_last)):
        print(f"  {what:<31} {value:>16}{after}", file=f)
    print("\nRevenue and units by month", file=f)
    print(f"  {'Month':<8} {'Transactions':>14} {'Units':>12} {'Revenue':>18} {'Share':>8}", file=f)
    months = tally(sale, "month", range(len(s.months)))
    months.index = s.months
    months.loc["Total"] = (tx, units, rev)
    for m, t in months.iterrows():
        print(f"  {m:<8} {count(t.tx):>14} {count(t.units):>12} {money(t.revenue):>18} "
              f"{share(t.revenue, rev):>8}", file=f)

    # Best sellers: revenue descending, ties in catalogue order.
    prod = tally(sale, "product", sale["product"].unique())
    prod["rank"] = s.product_rank[prod.index]
    top = prod.sort_values(["revenue", "rank"], ascending=[False, True]).head(TOP_PRODUCTS)
    print(f"\nTop {TOP_PRODUCTS} products by revenue", file=f)
    print(f"  {'Rank':>4} {'Units':>10} {'Revenue':>16} {'Avg price':>10} {'List':>10}  Product", file=f)
    for n, (p, t) in enumerate(top.iterrows(), 1):
        print(f"  {n:>4} {count(t.units):>10} {money(t.revenue):>16} "
              f"{avg_money(t.revenue, t.units):>10} {money(s.list_price[p]):>10}  {s.labels[p]}", file=f)

    basket, ticket = np.sort(sale["units"].to_numpy()), np.sort(sale["revenue"].to_numpy())
    print(f"\nPer transaction         {'p50':>14} {'p90':>14} {'p99':>14} {'max':>14}", file=f)
    for what, values, fmt in (("Units (basket size)", basket, count), ("Revenue", ticket, money)):
        cells = [fmt(nearest_rank(values, p)) for p in (50, 90, 99, 100)]
        print(f"  {what:<21}" + "".join(f" {c:>14}" for c in cells), file=f)

    print(file=f)
    for what, d in (("Best day:", best), ("Worst day:", worst)):
        t = by_day.loc[d]
        print(f"{what:<10} {s.dates[d]} {WEEKDAYS[s.weekday[d]]} {money(t.revenue):>14} "
              f"in {count(t.tx)} transaction{plural(t.tx)}", file=f)

    print(f"\nWeekday profile\n  {'Weekday':<7} {'Days':>5} {'Transactions':>14} {'Units':>12} "
          f"{'Revenue':>18} {'Avg per day':>14} {'Share':>7}", file=f)
    days = np.bincount(s.weekday, minlength=7)
    for w, t in tally(sale, "weekday", range(7)).iterrows():
        print(f"  {WEEKDAYS[w]:<7} {days[w]:>5} {count(t.tx):>14} {count(t.units):>12} "
              f"{money(t.revenue):>18} {avg_money(t.revenue, days[w]):>14} "
              f"{share(t.revenue, rev):>7}", file=f)
    return {"store": store_id, "revenue": rev, "units": units, "transactions": tx,
            "discount": discount, "best_day": int(best), "best_day_revenue": int(by_day.loc[best, "revenue"])}


def run(s, k, name):
    return write_report(cowrun.report(), s, int(s.store_ids[k]), sale=store_frame(s, k))


# ---- merge and finish (the parent) --------------------------------------------

def merge(s, k, name, result):
    if result["store"] != s.store_ids[k]:
        raise ValueError(f"task {k} ({name}): a result for store {result['store']}")
    s.merged.append(result)


def finish(s, out):
    """The company summary, formatted as cowrun sales prints it."""
    total = {key: sum(r[key] for r in s.merged) for key in ("revenue", "units", "transactions", "discount")}
    rev, n = total["revenue"], len(s.merged)
    print("Sales summary", file=out)
    for what, value in (("Source", s.source),
                        ("Period", f"{s.dates[0]} to {s.dates[-1]} ({s.ndays} day{plural(s.ndays)})"),
                        ("Stores reported", f"{n} of {len(s.store_ids)}")):
        print(f"  {what:<24} {value}", file=out)
    # The company totals a test compares with cowrun sales: these lines.
    for what, value in (("Transactions", count(total["transactions"])), ("Units sold", count(total["units"])),
                        ("Revenue", money(rev)), ("Average per store", avg_money(rev, n)),
                        ("Average transaction", avg_money(rev, total["transactions"])),
                        ("Discount given", money(total["discount"]))):
        print(f"  {what:<24} {value:>18}", file=out)
    # Biggest stores: revenue descending, ties in store order (sorted is stable).
    print(f"\nTop {TOP_STORES} stores by revenue", file=out)
    print(f"  {'Rank':>4} {'Store':>6} {'Revenue':>18} {'Share':>7} {'Transactions':>14}  Best day", file=out)
    for n, r in enumerate(sorted(s.merged, key=lambda r: -r["revenue"])[:TOP_STORES], 1):
        print(f"  {n:>4}   {r['store']:04d} {money(r['revenue']):>18} {share(r['revenue'], rev):>7} "
              f"{count(r['transactions']):>14}  {s.dates[r['best_day']]} {money(r['best_day_revenue'])}",
              file=out)
