/*
 * util.c - dates, numbers and text: the small helpers every part of sales uses.
 */
#include "sales.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Categories of the generated catalogue, with their price ranges. */
const struct category categories[NCATEGORIES] = {
	{ "Produce", 79, 599, { "Apples", "Bananas", "Tomatoes", "Lettuce", "Carrots", "Grapes" } },
	{ "Dairy", 89, 799, { "Milk", "Yogurt", "Cheddar", "Butter", "Cream", "Eggs" } },
	{ "Bakery", 99, 699, { "Sourdough", "Bagels", "Croissants", "Muffins", "Rye Bread", "Baguette" } },
	{ "Beverages", 69, 1499, { "Cola", "Orange Juice", "Coffee", "Green Tea", "Sparkling Water", "Lemonade" } },
	{ "Snacks", 99, 649, { "Crisps", "Pretzels", "Trail Mix", "Cookies", "Popcorn", "Granola Bars" } },
	{ "Frozen", 199, 1299, { "Pizza", "Ice Cream", "Peas", "Fish Fingers", "Dumplings", "Berries" } },
	{ "Pantry", 89, 999, { "Pasta", "Rice", "Olive Oil", "Tomato Sauce", "Cereal", "Peanut Butter" } },
	{ "Household", 149, 2499, { "Detergent", "Paper Towels", "Dish Soap", "Sponges", "Trash Bags", "Light Bulbs" } },
	{ "Personal Care", 199, 1999, { "Shampoo", "Toothpaste", "Soap", "Deodorant", "Razors", "Sunscreen" } },
	{ "Meat", 299, 2999, { "Chicken Breast", "Ground Beef", "Pork Chops", "Bacon", "Salmon", "Sausages" } },
};


const char *const weekday_name[7] = {
	"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun",
};

/* ---- small helpers ---------------------------------------------------------- */

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; H. Hinnant). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;

	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int)((int64_t)yoe + era * 400 + (*m <= 2));
}

/* A "day number" counts days from 1000-01-01, the earliest date accepted,
 * so it fits a uint32_t. */
int64_t day_zero(void)
{
	return days_from_civil(1000, 1, 1);
}

uint32_t day_number(int y, unsigned m, unsigned d)
{
	return (uint32_t)(days_from_civil(y, m, d) - day_zero());
}

static unsigned days_in_month(int y, unsigned m)
{
	static const unsigned len[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return len[m - 1] + (m == 2 && leap);
}

static unsigned digits_value(const char *s, size_t n)
{
	unsigned v = 0;

	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	return v;
}

/* Parse a strict YYYY-MM-DD (years 1000-9999) into a day number.
 * Returns 0, or -1 if s is not exactly that or not a real date. */
int parse_date(const char *s, uint32_t *out)
{
	static const char pattern[] = "dddd-dd-dd";

	for (size_t i = 0; i < sizeof pattern - 1; i++) {
		int digit = s[i] >= '0' && s[i] <= '9';
		if (pattern[i] == 'd' ? !digit : s[i] != '-')
			return -1;
	}
	if (s[sizeof pattern - 1] != '\0')
		return -1;
	int y = (int)digits_value(s, 4);
	unsigned m = digits_value(s + 5, 2), d = digits_value(s + 8, 2);
	if (y < 1000 || m < 1 || m > 12 || d < 1 || d > days_in_month(y, m))
		return -1;
	*out = day_number(y, m, d);
	return 0;
}

/* Writes n as exactly `width` digits; the caller bounds n. */
void put_digits(char *out, unsigned n, int width)
{
	for (int i = width - 1; i >= 0; i--, n /= 10)
		out[i] = (char)('0' + n % 10);
}

/* Parse a whole field as a decimal integer in [min, max].  Digits only:
 * a sign or a space in a CSV field is more likely damage than intent. */
int parse_int(const char *s, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

/* Parse "3", "3.4" or "3.49" into cents (at most MAX_PRICE). */
int parse_price(const char *s, uint32_t *cents)
{
	char whole[16];
	const char *dot = strchr(s, '.');
	size_t wlen = dot ? (size_t)(dot - s) : strlen(s);
	long long units;
	unsigned frac = 0;

	if (wlen == 0 || wlen >= sizeof whole)
		return -1;
	memcpy(whole, s, wlen);
	whole[wlen] = '\0';
	if (parse_int(whole, 0, MAX_PRICE / 100, &units) != 0)
		return -1;
	if (dot) {
		size_t flen = strlen(dot + 1);
		if (flen < 1 || flen > 2 || strspn(dot + 1, "0123456789") != flen)
			return -1;
		frac = digits_value(dot + 1, flen) * (flen == 1 ? 10 : 1);
	}
	if (units * 100 + frac > MAX_PRICE)
		return -1;
	*cents = (uint32_t)(units * 100 + frac);
	return 0;
}

/* Room for `need` elements of `size` bytes in p (capacity *cap), doubling.
 * Returns the possibly moved array, or NULL with p still valid and *cap
 * unchanged. */
void *grow_array(void *p, size_t *cap, size_t need, size_t size)
{
	size_t n = *cap ? *cap : 64;

	if (need <= *cap)
		return p;
	while (n < need) {
		if (n > SIZE_MAX / 2 / size)
			return NULL;
		n *= 2;
	}
	p = realloc(p, n * size);
	if (p)
		*cap = n;
	return p;
}

/* ---- number formatting (integers only, so output never varies) ---------- */

/* "1,234,567" into buf (NUMBUF bytes). */
const char *fmt_count(char *buf, int64_t v)
{
	return cowrun_fmt_count(buf, NUMBUF, v);
}

/* "$1,234.56" into buf (NUMBUF bytes). */
const char *fmt_money(char *buf, int64_t cents)
{
	char whole[32]; /* 19 digits and 6 commas at most */
	uint64_t u = cents < 0 ? -(uint64_t)cents : (uint64_t)cents;

	cowrun_fmt_count(whole, sizeof whole, (int64_t)(u / 100));
	snprintf(buf, NUMBUF, "%s$%s.%02u", cents < 0 ? "-" : "", whole,
		 (unsigned)(u % 100));
	return buf;
}

/* part / whole, rounded half up, as "12.3%"; "-" when whole is 0.  Setup
 * caps total revenue so part * 1000 cannot overflow. */
const char *fmt_share(char *buf, int64_t part, int64_t whole)
{
	if (whole <= 0) {
		snprintf(buf, NUMBUF, "-");
		return buf;
	}
	int64_t pm = (part * 1000 + whole / 2) / whole;
	snprintf(buf, NUMBUF, "%" PRId64 ".%" PRId64 "%%", pm / 10, pm % 10);
	return buf;
}

/* num / den rounded half up, as "$12.34" (den > 0). */
const char *fmt_avg_money(char *buf, int64_t num, int64_t den)
{
	return fmt_money(buf, den > 0 ? (num + den / 2) / den : 0);
}

/* num / den with two decimals, rounded half up, as "1.90" (den > 0). */
const char *fmt_ratio(char *buf, int64_t num, int64_t den)
{
	int64_t h = den > 0 ? (num * 100 + den / 2) / den : 0;

	snprintf(buf, NUMBUF, "%" PRId64 ".%02" PRId64, h / 100, h % 100);
	return buf;
}

const char *plural(int64_t n)
{
	return n == 1 ? "" : "s";
}

/* How reports name a product: "1234 Organic Apples", "1234" or a CSV name. */
const char *product_label(const struct sales *s, uint32_t idx,
				 char *buf, size_t size)
{
	const struct product *p = &s->product[idx];

	if (p->id != 0 && p->name != NO_NAME)
		snprintf(buf, size, "%" PRIu32 " %s", p->id, s->names + p->name);
	else if (p->id != 0)
		snprintf(buf, size, "%" PRIu32, p->id);
	else
		snprintf(buf, size, "%s", s->names + p->name);
	return buf;
}

/* A 64-bit mixer (splitmix64's finaliser): hashes and random streams. */
uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}
