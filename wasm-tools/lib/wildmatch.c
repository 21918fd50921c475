/*
 * wildmatch: glob matching with git's semantics (the matcher behind
 * .gitignore and `:(glob)` pathspecs), written from git's documented
 * behaviour (gitignore(5), gitglossary(7) "pathspec"):
 *
 *   *      any run of bytes; with WM_PATHNAME not '/'
 *   ?      one byte; with WM_PATHNAME not '/'
 *   [...]  a set: ranges a-z, [:class:], negation with ! or ^, \ escapes;
 *          with WM_PATHNAME never '/'
 *   **     with WM_PATHNAME, when it is a whole path segment: "** /x"
 *          (leading) matches x in every folder, "a/ ** /b" (inner) zero or
 *          more folders, "a/ **" (trailing) everything inside a; anywhere
 *          else it is a plain '*'
 *   \c     the byte c
 *
 * Bytes, not characters (git in the C locale). Recursion is bounded by the
 * number of stars in the pattern; the ABORT results prune the search so a
 * pattern like "*a*a*a*a*b" does not go exponential (as in git).
 */
#include "wildmatch.h"

#include <string.h>

#define WM_NOMATCH 1
#define WM_MATCHED 0
#define WM_ABORT_ALL (-1)
#define WM_ABORT_TO_STARSTAR (-2)

typedef unsigned char uchar;

static int is_class(const uchar *s, int len, const char *name) {
  return (int)strlen(name) == len && memcmp(s, name, (size_t)len) == 0;
}

static int in_class(const uchar *s, int len, uchar c, int *ok) {
  *ok = 1;
  if (is_class(s, len, "alnum"))
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (is_class(s, len, "alpha")) return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (is_class(s, len, "blank")) return c == ' ' || c == '\t';
  if (is_class(s, len, "cntrl")) return c < 32 || c == 127;
  if (is_class(s, len, "digit")) return c >= '0' && c <= '9';
  if (is_class(s, len, "graph")) return c > 32 && c < 127;
  if (is_class(s, len, "lower")) return c >= 'a' && c <= 'z';
  if (is_class(s, len, "print")) return c >= 32 && c < 127;
  if (is_class(s, len, "punct"))
    return c > 32 && c < 127 && !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'));
  if (is_class(s, len, "space")) return c == ' ' || (c >= '\t' && c <= '\r');
  if (is_class(s, len, "upper")) return c >= 'A' && c <= 'Z';
  if (is_class(s, len, "xdigit"))
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
  *ok = 0;
  return 0;
}

static int dowild(const uchar *p, const uchar *text, const uchar *start, unsigned flags) {
  uchar p_ch;
  for (; (p_ch = *p) != '\0'; text++, p++) {
    int matched, match_slash, negated;
    uchar t_ch, prev_ch;
    if ((t_ch = *text) == '\0' && p_ch != '*') return WM_ABORT_ALL;
    switch (p_ch) {
      case '\\':
        /* The next byte, literally; a trailing backslash matches nothing. */
        p_ch = *++p;
        if (!p_ch || t_ch != p_ch) return WM_NOMATCH;
        continue;
      default:
        if (t_ch != p_ch) return WM_NOMATCH;
        continue;
      case '?':
        if ((flags & WM_PATHNAME) && t_ch == '/') return WM_NOMATCH;
        continue;
      case '*':
        if (*++p == '*') {
          const uchar *prev_p = p - 2;
          while (*++p == '*') {
          }
          if (!(flags & WM_PATHNAME)) {
            match_slash = 1;
          } else if ((prev_p < start || *prev_p == '/') &&
                     (*p == '\0' || *p == '/' || (p[0] == '\\' && p[1] == '/'))) {
            /* "**" as a whole segment: "** /" may also match no folder. */
            if (p[0] == '/' && dowild(p + 1, text, start, flags) == WM_MATCHED) return WM_MATCHED;
            match_slash = 1;
          } else {
            match_slash = 0; /* "**" inside a segment is a plain '*' */
          }
        } else {
          match_slash = !(flags & WM_PATHNAME);
        }
        if (*p == '\0') {
          /* A trailing star matches the rest, unless that crosses a '/'. */
          if (!match_slash && strchr((const char *)text, '/')) return WM_NOMATCH;
          return WM_MATCHED;
        } else if (!match_slash && *p == '/') {
          /* "*" then "/": the star takes the rest of this segment. */
          const char *slash = strchr((const char *)text, '/');
          if (!slash) return WM_NOMATCH;
          text = (const uchar *)slash;
          break; /* the loop's increment consumes the '/' on both sides */
        }
        for (;;) {
          if (t_ch == '\0') break;
          if ((matched = dowild(p, text, start, flags)) != WM_NOMATCH) {
            if (!match_slash || matched != WM_ABORT_TO_STARSTAR) return matched;
          } else if (!match_slash && t_ch == '/') {
            return WM_ABORT_TO_STARSTAR;
          }
          t_ch = *++text;
        }
        return WM_ABORT_ALL;
      case '[':
        p_ch = *++p;
        if (p_ch == '^') p_ch = '!';
        negated = p_ch == '!';
        if (negated) p_ch = *++p;
        prev_ch = 0;
        matched = 0;
        do {
          if (!p_ch) return WM_ABORT_ALL;
          if (p_ch == '\\') {
            p_ch = *++p;
            if (!p_ch) return WM_ABORT_ALL;
            if (t_ch == p_ch) matched = 1;
          } else if (p_ch == '-' && prev_ch && p[1] && p[1] != ']') {
            p_ch = *++p;
            if (p_ch == '\\') {
              p_ch = *++p;
              if (!p_ch) return WM_ABORT_ALL;
            }
            if (t_ch <= p_ch && t_ch >= prev_ch) matched = 1;
            p_ch = 0; /* a range cannot start another range */
          } else if (p_ch == '[' && p[1] == ':') {
            const uchar *s;
            int len, ok;
            for (s = p += 2; (p_ch = *p) && p_ch != ']'; p++) {
            }
            if (!p_ch) return WM_ABORT_ALL;
            len = (int)(p - s) - 1;
            if (len < 0 || p[-1] != ':') {
              /* Not "[:name:]": a plain '[' in the set. */
              p = s - 2;
              p_ch = '[';
              if (t_ch == p_ch) matched = 1;
              continue;
            }
            if (in_class(s, len, t_ch, &ok)) matched = 1;
            if (!ok) return WM_ABORT_ALL; /* unknown class name */
            p_ch = 0;
          } else if (t_ch == p_ch) {
            matched = 1;
          }
        } while (prev_ch = p_ch, (p_ch = *++p) != ']');
        if (matched == negated || ((flags & WM_PATHNAME) && t_ch == '/')) return WM_NOMATCH;
        continue;
    }
  }
  return *text ? WM_NOMATCH : WM_MATCHED;
}

int wildmatch(const char *pattern, const char *text, unsigned flags) {
  const uchar *p = (const uchar *)pattern;
  return dowild(p, (const uchar *)text, p, flags) == WM_MATCHED;
}

size_t wildmatch_literal_prefix(const char *pattern) {
  size_t i = 0;
  while (pattern[i] && !strchr("*?[\\", pattern[i])) i++;
  return i;
}
