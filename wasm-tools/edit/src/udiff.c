/*
 * Unified diff writer. See udiff.h.
 */
#include "udiff.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CONTEXT 3
/* Myers keeps one V array per edit distance d (d*d integers in all); past
 * this many differing lines the middle is shown as one replacement, which
 * is still a correct diff, only not a minimal one. */
#define MAX_D 2048

typedef struct {
  const char *s;
  size_t n; /* bytes, the '\n' included when there is one */
  uint32_t h;
} line;

enum { EQ, DEL, INS };

typedef struct {
  unsigned char op;
  size_t a, b; /* line indexes in a and b where the op stands */
} op;

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) corral_fail("out of memory while writing the diff");
  return p;
}

static line *split(const char *s, size_t n, size_t *count) {
  size_t c = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\n') c++;
  if (n && s[n - 1] != '\n') c++;
  line *ls = xmalloc(c * sizeof *ls);
  size_t k = 0, start = 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\n' || i == n - 1) {
      ls[k].s = s + start;
      ls[k].n = i + 1 - start;
      uint32_t h = 2166136261u;
      for (size_t j = start; j <= i; j++) h = (h ^ (unsigned char)s[j]) * 16777619u;
      ls[k].h = h;
      k++;
      start = i + 1;
    }
  *count = c;
  return ls;
}

static int same(const line *x, const line *y) {
  return x->h == y->h && x->n == y->n && memcmp(x->s, y->s, x->n) == 0;
}

/*
 * Marks del[i] for lines of A[0..n) not in the LCS and ins[j] for lines of
 * B[0..m) not in it (Myers 1986, forward greedy with the V arrays kept for
 * the walk back). Returns 0, or -1 when the edit distance passes MAX_D.
 */
static int myers(const line *A, size_t n, const line *B, size_t m,
                 unsigned char *del, unsigned char *ins) {
  long N = (long)n, M = (long)m;
  long max = N + M;
  if (max == 0) return 0;
  long dlimit = max < MAX_D ? max : MAX_D;
  long **trace = xmalloc((size_t)(dlimit + 1) * sizeof *trace);
  long *V = xmalloc((size_t)(2 * dlimit + 3) * sizeof *V);
  long off = dlimit + 1;
  V[off + 1] = 0;
  long D = -1;
  for (long d = 0; d <= dlimit && D < 0; d++) {
    for (long k = -d; k <= d; k += 2) {
      long x;
      if (k == -d || (k != d && V[off + k - 1] < V[off + k + 1])) x = V[off + k + 1];
      else x = V[off + k - 1] + 1;
      long y = x - k;
      while (x < N && y < M && same(&A[x], &B[y])) {
        x++;
        y++;
      }
      V[off + k] = x;
      if (x >= N && y >= M) {
        D = d;
        break;
      }
    }
    trace[d] = xmalloc((size_t)(2 * d + 1) * sizeof(long));
    memcpy(trace[d], &V[off - d], (size_t)(2 * d + 1) * sizeof(long));
  }
  if (D < 0) {
    for (long d = 0; d <= dlimit; d++) free(trace[d]);
    free(trace);
    free(V);
    return -1;
  }
  long x = N, y = M;
  for (long d = D; d > 0; d--) {
    long *P = trace[d - 1]; /* P[k + d - 1] is V[k] after step d-1 */
    long k = x - y;
    long pk;
    if (k == -d || (k != d && P[k - 1 + d - 1] < P[k + 1 + d - 1])) pk = k + 1;
    else pk = k - 1;
    long px = P[pk + d - 1], py = px - pk;
    /* The point the edit step reached, then the snake of equal lines. */
    long mx = pk == k + 1 ? px : px + 1, my = mx - k;
    while (x > mx && y > my) {
      x--;
      y--;
    }
    if (pk == k + 1) ins[py] = 1; /* down: B[py] inserted */
    else del[px] = 1;             /* right: A[px] deleted */
    x = px;
    y = py;
  }
  for (long d = 0; d <= D; d++) free(trace[d]);
  free(trace);
  free(V);
  return 0;
}

/* git's quote_c_style, for names with '"', '\', control bytes or bytes >= 0x80. */
static int needs_quote(const char *s) {
  for (const unsigned char *p = (const unsigned char *)s; *p; p++)
    if (*p < 0x20 || *p == '"' || *p == '\\' || *p >= 0x7f) return 1;
  return 0;
}

static void name(corral_writer *w, const char *prefix, const char *path) {
  if (!needs_quote(path)) {
    corral_appendf(w, "%s%s", prefix, path);
    return;
  }
  corral_append(w, "\"", 1);
  corral_appendf(w, "%s", prefix);
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    unsigned char c = *p;
    const char *esc = NULL;
    switch (c) {
      case '\a': esc = "\\a"; break;
      case '\b': esc = "\\b"; break;
      case '\t': esc = "\\t"; break;
      case '\n': esc = "\\n"; break;
      case '\v': esc = "\\v"; break;
      case '\f': esc = "\\f"; break;
      case '\r': esc = "\\r"; break;
      case '"': esc = "\\\""; break;
      case '\\': esc = "\\\\"; break;
      default: break;
    }
    if (esc) corral_appendf(w, "%s", esc);
    else if (c < 0x20 || c >= 0x7f) corral_appendf(w, "\\%03o", c);
    else corral_append(w, p, 1);
  }
  corral_append(w, "\"", 1);
}

static void emit_line(corral_writer *w, char mark, const line *l) {
  corral_append(w, &mark, 1);
  corral_append(w, l->s, l->n);
  if (l->n == 0 || l->s[l->n - 1] != '\n') corral_appendf(w, "\n\\ No newline at end of file\n");
}

void udiff(corral_writer *out, const char *path, const char *a, size_t alen,
           const char *b, size_t blen, size_t *additions, size_t *deletions) {
  *additions = *deletions = 0;
  size_t n, m;
  line *A = split(a, alen, &n);
  line *B = split(b, blen, &m);
  size_t pre = 0;
  while (pre < n && pre < m && same(&A[pre], &B[pre])) pre++;
  size_t suf = 0;
  while (suf < n - pre && suf < m - pre && same(&A[n - 1 - suf], &B[m - 1 - suf])) suf++;
  unsigned char *del = calloc(n + 1, 1), *ins = calloc(m + 1, 1);
  if (!del || !ins) corral_fail("out of memory while writing the diff");
  if (myers(A + pre, n - pre - suf, B + pre, m - pre - suf, del + pre, ins + pre) != 0) {
    memset(del + pre, 1, n - pre - suf);
    memset(ins + pre, 1, m - pre - suf);
  }

  /* The edit script, deletions before insertions in each change. */
  op *ops = xmalloc((n + m + 1) * sizeof *ops);
  size_t k = 0, i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && del[i]) {
      ops[k++] = (op){DEL, i, j};
      i++;
    } else if (j < m && ins[j]) {
      ops[k++] = (op){INS, i, j};
      j++;
    } else {
      ops[k++] = (op){EQ, i, j};
      i++;
      j++;
    }
  }
  size_t nops = k;

  int header = 0;
  const char *func = NULL;
  size_t func_len = 0;
  long func_limit = -1;
  for (size_t at = 0; at < nops;) {
    if (ops[at].op == EQ) {
      at++;
      continue;
    }
    size_t start = at >= CONTEXT ? at - CONTEXT : 0;
    size_t e = at, end;
    for (;;) {
      while (e < nops && ops[e].op != EQ) e++;
      size_t last = e, q = e;
      while (q < nops && ops[q].op == EQ) q++;
      if (q == nops) {
        end = last + CONTEXT < nops ? last + CONTEXT : nops;
        break;
      }
      if (q - last <= 2 * CONTEXT) {
        e = q;
        continue;
      }
      end = last + CONTEXT;
      break;
    }
    if (!header) {
      corral_appendf(out, "diff --git ");
      name(out, "a/", path);
      corral_append(out, " ", 1);
      name(out, "b/", path);
      const char *tab = !needs_quote(path) && strchr(path, ' ') ? "\t" : "";
      corral_appendf(out, "\n--- ");
      name(out, "a/", path);
      corral_appendf(out, "%s\n+++ ", tab);
      name(out, "b/", path);
      corral_appendf(out, "%s\n", tab);
      header = 1;
    }
    size_t c1 = 0, c2 = 0;
    for (size_t q = start; q < end; q++) {
      if (ops[q].op != INS) c1++;
      if (ops[q].op != DEL) c2++;
    }
    size_t s1 = ops[start].a + 1, s2 = ops[start].b + 1;
    corral_appendf(out, "@@ -%zu", c1 ? s1 : s1 - 1);
    if (c1 != 1) corral_appendf(out, ",%zu", c1);
    corral_appendf(out, " +%zu", c2 ? s2 : s2 - 1);
    if (c2 != 1) corral_appendf(out, ",%zu", c2);
    /* git's default function line: the nearest line above the hunk, back
     * to the previous hunk's start, that begins with a letter, '_' or '$';
     * kept from the hunk before when there is none in between. */
    for (long l = (long)ops[start].a - 1; l > func_limit && l >= 0; l--) {
      const line *f = &A[l];
      unsigned char c = f->n ? (unsigned char)f->s[0] : 0;
      if (isalpha(c) || c == '_' || c == '$') {
        func_len = f->n < 80 ? f->n : 80;
        while (func_len > 0 && isspace((unsigned char)f->s[func_len - 1])) func_len--;
        func = f->s;
        break;
      }
    }
    func_limit = (long)ops[start].a - 1;
    corral_appendf(out, " @@");
    if (func_len) {
      corral_append(out, " ", 1);
      corral_append(out, func, func_len);
    }
    corral_append(out, "\n", 1);
    for (size_t q = start; q < end; q++) {
      if (ops[q].op == EQ) emit_line(out, ' ', &A[ops[q].a]);
      else if (ops[q].op == DEL) {
        emit_line(out, '-', &A[ops[q].a]);
        (*deletions)++;
      } else {
        emit_line(out, '+', &B[ops[q].b]);
        (*additions)++;
      }
    }
    at = end;
  }
  free(ops);
  free(del);
  free(ins);
  free(A);
  free(B);
}
