/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Number formatting for large outputs. A 1024-CPU CSV interval holds some 40000 numbers; glibc's
 * "%.17g" costs about half a microsecond each (it is written for any precision, with big-number
 * arithmetic), which made the CLI spend 18-19 us per CPU and sample in formatting. For the
 * values these outputs hold, 17 digits fit in 64 bits and the exact product of a double's
 * mantissa and a power of ten in 128, so the same correctly rounded digits come from integer
 * arithmetic.
 */
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/number-format.h"

#define DIGITS 17
/* 10^22 < 2^74: the mantissa (< 2^53) times it fits in 127 bits */
#define POW10_MAX 22

size_t number_format_u64(uint64_t v, char *buf) {
        static const char pairs[201] =
                "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                "8081828384858687888990919293949596979899";
        char tmp[24], *p = tmp + sizeof(tmp);
        size_t n;

        /* two digits a division */
        while (v >= 100) {
                unsigned d = (unsigned) (v % 100);

                v /= 100;
                p -= 2;
                memcpy(p, pairs + 2 * d, 2);
        }
        if (v >= 10) {
                p -= 2;
                memcpy(p, pairs + 2 * v, 2);
        } else
                *--p = (char) ('0' + v);
        n = (size_t) (tmp + sizeof(tmp) - p);
        memcpy(buf, p, n);
        buf[n] = '\0';
        return n;
}

static unsigned __int128 pow10_u128(unsigned k) {
        static unsigned __int128 table[POW10_MAX + 1];

        if (table[0] == 0) {
                unsigned __int128 p = 1;

                for (unsigned i = 0; i <= POW10_MAX; i++, p *= 10)
                        table[i] = p;
        }
        return table[k];
}

/* round(x * 10^k), ties to even, and floor(x * 10^k) for x = mantissa * 2^exponent; false
 * where it does not fit. */
static bool scaled_digits(uint64_t mantissa, int exponent, int k, uint64_t *ret, uint64_t *ret_floor) {
        unsigned __int128 n, half, rest, q;
        unsigned shift;

        if (k < 0 || k > POW10_MAX)
                return false;
        n = (unsigned __int128) mantissa * pow10_u128((unsigned) k);
        if (exponent >= 0) {
                if (exponent > 10 || (n >> (120 - exponent)) != 0)
                        return false;
                n <<= exponent;
                if (n >> 64)
                        return false;
                *ret = *ret_floor = (uint64_t) n;
                return true;
        }
        shift = (unsigned) -exponent;
        if (shift >= 127)
                return false;
        q = n >> shift;
        if (q >> 64)
                return false;
        *ret_floor = (uint64_t) q;
        rest = n - (q << shift);
        half = (unsigned __int128) 1 << (shift - 1);
        if (rest > half || (rest == half && (q & 1)))
                q++;
        *ret = (uint64_t) q;
        return true;
}

static size_t fallback(double x, char *buf) {
        int n = snprintf(buf, NUMBER_TEXT_MAX, "%.17g", x);

        return n > 0 ? (size_t) n : 0;
}

size_t number_format_g17(double x, char *buf) {
        static const uint64_t low = UINT64_C(10000000000000000), high = UINT64_C(100000000000000000);
        char digits[DIGITS + 1], *p = buf;
        uint64_t bits, mantissa, n = 0, whole = 0;
        int exponent, decimal;
        size_t len;

        if (!isfinite(x) || x == 0.0)
                return fallback(x, buf);
        if (x < 0) {
                *p++ = '-';
                x = -x;
        }
        if (x < 9007199254740992.0 && x == (double) (uint64_t) x)
                return (size_t) (p - buf) + number_format_u64((uint64_t) x, p);
        memcpy(&bits, &x, sizeof(bits));
        if ((bits >> 52) == 0)
                return fallback(buf == p ? x : -x, buf);
        mantissa = (bits & ((UINT64_C(1) << 52) - 1)) | (UINT64_C(1) << 52);
        exponent = (int) (bits >> 52) - 1075;
        /* the decimal exponent of x itself, from the binary one (log10(2) = 0.30103); it may
         * miss by one, which the digit count of the unrounded digits shows */
        decimal = (int) floor((double) (exponent + 52) * 0.30102999566398120);
        for (int tries = 0; tries < 3; tries++) {
                if (!scaled_digits(mantissa, exponent, DIGITS - 1 - decimal, &n, &whole))
                        return fallback(buf == p ? x : -x, buf);
                if (whole >= high)
                        decimal++;
                else if (whole < low)
                        decimal--;
                else
                        break;
        }
        if (whole < low || whole >= high)
                return fallback(buf == p ? x : -x, buf);
        if (n == high) {
                /* 9.99...95 rounded up: one digit more before the point, as printf carries */
                n = low;
                decimal++;
        }
        (void) number_format_u64(n, digits);
        len = DIGITS;
        while (len > 1 && digits[len - 1] == '0')
                len--;
        if (decimal < -4 || decimal >= DIGITS) {
                /* d.ddde+XX, as %g */
                *p++ = digits[0];
                if (len > 1) {
                        *p++ = '.';
                        memcpy(p, digits + 1, len - 1);
                        p += len - 1;
                }
                *p++ = 'e';
                *p++ = decimal < 0 ? '-' : '+';
                if (decimal > -10 && decimal < 10)
                        *p++ = '0';
                p += number_format_u64((uint64_t) (decimal < 0 ? -decimal : decimal), p);
        } else if (decimal >= 0) {
                memcpy(p, digits, (size_t) decimal + 1);
                p += decimal + 1;
                if (len > (size_t) decimal + 1) {
                        *p++ = '.';
                        memcpy(p, digits + decimal + 1, len - (size_t) decimal - 1);
                        p += len - (size_t) decimal - 1;
                }
        } else {
                *p++ = '0';
                *p++ = '.';
                for (int i = -1; i > decimal; i--)
                        *p++ = '0';
                memcpy(p, digits, len);
                p += len;
        }
        *p = '\0';
        return (size_t) (p - buf);
}
