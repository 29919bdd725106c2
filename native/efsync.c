// efsync: a DuckDB extension with the two functions the accuracy statistics spend their time in
// (src/accuracy/compute/stats.ts), in one loop over each vector instead of an SQL expression per
// operation, and the one that gives the C heap's free memory back to the kernel. In DuckDB SQL the
// ~30 sums, counts, minima and maxima of a group and the logarithmic bins of its values cost about
// 10x one scan-aggregate; here they cost about 4x (docs/accuracy.md, "Speed"). stats.ts keeps the
// same statistics in SQL for a DuckDB that cannot load this file.
//
//   efsync_point_stats(actual, forecast, reference, capacity, mape_floor, deadband) -> STRUCT
//     an aggregate: the point statistics of pointStatsSql, under the same names, with SQL's
//     NULL semantics (a sum or minimum over no value is NULL, a count 0).
//   efsync_bin(x) -> INTEGER
//     binSql(x): round(ln|x| * BIN_SCALE), the negative values mirrored below NEGATIVE_BINS, 0 in
//     ZERO_BIN; the same libm logarithm and the same rounding (nearbyint) as DuckDB's SQL.
//   efsync_trim() -> BOOLEAN
//     glibc's malloc_trim(0): the free pages inside the C heap go back to the kernel, not only
//     its top (the executor's handBackPool calls it; docs/decisions/memory-budget.md). With one
//     malloc arena (bin/efsync) Node's and DuckDB's allocations share that heap, and what they
//     freed between two steps stays in the RSS until trimmed. Whether memory went back; false
//     where the C library is not glibc.
//
// Built by scripts/build-native.js and loaded with `LOAD '<path>'` into every database efsync
// opens (src/warehouse/native.ts). It uses DuckDB's C API (duckdb.h), linked against the
// libduckdb.so of @duckdb/node-bindings: the extension entry point only hands over the database.
// The declarations below are the few the file calls, as the C API reference gives them.
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef uint64_t idx_t;
typedef enum { DuckDBSuccess = 0, DuckDBError = 1 } duckdb_state;
typedef struct _duckdb_database { void *internal_ptr; } *duckdb_database;
typedef struct _duckdb_connection { void *internal_ptr; } *duckdb_connection;
typedef struct _duckdb_logical_type { void *internal_ptr; } *duckdb_logical_type;
typedef struct _duckdb_function_info { void *internal_ptr; } *duckdb_function_info;
typedef struct _duckdb_aggregate_function { void *internal_ptr; } *duckdb_aggregate_function;
typedef struct _duckdb_scalar_function { void *internal_ptr; } *duckdb_scalar_function;
typedef struct _duckdb_aggregate_state { void *internal_ptr; } *duckdb_aggregate_state;
typedef struct _duckdb_data_chunk { void *internal_ptr; } *duckdb_data_chunk;
typedef struct _duckdb_vector { void *internal_ptr; } *duckdb_vector;
typedef struct _duckdb_extension_info { void *internal_ptr; } *duckdb_extension_info;

enum { DUCKDB_TYPE_BOOLEAN = 1, DUCKDB_TYPE_INTEGER = 4, DUCKDB_TYPE_BIGINT = 5, DUCKDB_TYPE_DOUBLE = 11 };

struct duckdb_extension_access {
  void (*set_error)(duckdb_extension_info info, const char *error);
  duckdb_database *(*get_database)(duckdb_extension_info info);
  const void *(*get_api)(duckdb_extension_info info, const char *version);
};

duckdb_state duckdb_connect(duckdb_database database, duckdb_connection *out);
void duckdb_disconnect(duckdb_connection *connection);
duckdb_logical_type duckdb_create_logical_type(int type);
duckdb_logical_type duckdb_create_struct_type(duckdb_logical_type *types, const char **names, idx_t count);
void duckdb_destroy_logical_type(duckdb_logical_type *type);
idx_t duckdb_data_chunk_get_size(duckdb_data_chunk chunk);
duckdb_vector duckdb_data_chunk_get_vector(duckdb_data_chunk chunk, idx_t index);
void *duckdb_vector_get_data(duckdb_vector vector);
uint64_t *duckdb_vector_get_validity(duckdb_vector vector);
void duckdb_vector_ensure_validity_writable(duckdb_vector vector);
void duckdb_validity_set_row_invalid(uint64_t *validity, idx_t row);
duckdb_vector duckdb_struct_vector_get_child(duckdb_vector vector, idx_t index);

typedef idx_t (*duckdb_aggregate_state_size)(duckdb_function_info info);
typedef void (*duckdb_aggregate_init_t)(duckdb_function_info info, duckdb_aggregate_state state);
typedef void (*duckdb_aggregate_update_t)(duckdb_function_info info, duckdb_data_chunk input,
                                          duckdb_aggregate_state *states);
typedef void (*duckdb_aggregate_combine_t)(duckdb_function_info info, duckdb_aggregate_state *source,
                                           duckdb_aggregate_state *target, idx_t count);
typedef void (*duckdb_aggregate_finalize_t)(duckdb_function_info info, duckdb_aggregate_state *source,
                                            duckdb_vector result, idx_t count, idx_t offset);
duckdb_aggregate_function duckdb_create_aggregate_function(void);
void duckdb_destroy_aggregate_function(duckdb_aggregate_function *function);
void duckdb_aggregate_function_set_name(duckdb_aggregate_function function, const char *name);
void duckdb_aggregate_function_add_parameter(duckdb_aggregate_function function, duckdb_logical_type type);
void duckdb_aggregate_function_set_return_type(duckdb_aggregate_function function, duckdb_logical_type type);
void duckdb_aggregate_function_set_functions(duckdb_aggregate_function function,
                                             duckdb_aggregate_state_size state_size,
                                             duckdb_aggregate_init_t init, duckdb_aggregate_update_t update,
                                             duckdb_aggregate_combine_t combine,
                                             duckdb_aggregate_finalize_t finalize);
duckdb_state duckdb_register_aggregate_function(duckdb_connection con, duckdb_aggregate_function function);

typedef void (*duckdb_scalar_function_t)(duckdb_function_info info, duckdb_data_chunk input,
                                         duckdb_vector output);
duckdb_scalar_function duckdb_create_scalar_function(void);
void duckdb_destroy_scalar_function(duckdb_scalar_function *function);
void duckdb_scalar_function_set_name(duckdb_scalar_function function, const char *name);
void duckdb_scalar_function_add_parameter(duckdb_scalar_function function, duckdb_logical_type type);
void duckdb_scalar_function_set_return_type(duckdb_scalar_function function, duckdb_logical_type type);
void duckdb_scalar_function_set_function(duckdb_scalar_function function, duckdb_scalar_function_t fn);
void duckdb_scalar_function_set_volatile(duckdb_scalar_function function);
void duckdb_scalar_function_set_error(duckdb_function_info info, const char *error);
duckdb_state duckdb_register_scalar_function(duckdb_connection con, duckdb_scalar_function function);

// ---------------------------------------------------------------------------------------------
// efsync_point_stats

// The statistics in output order. A count is a BIGINT; every other a DOUBLE that is NULL when
// `count_of` (its count) is 0, as an SQL sum, minimum or maximum over no value is.
enum Field {
  N, C_FORECAST, C_REFERENCE, N_POINT, S_E, S_ABS, S_SQ, N_APE, S_APE, N_NORM, S_NORM, S_ABS_NORM,
  S_SQ_NORM, N_REF, S_SQ_REF, S_D, S_DD, S_O, S_OO, N_F, S_F, S_FF, S_FO, MIN_O, MAX_O, MIN_F,
  MAX_F, N_O, FIELDS
};
static const char *FIELD_NAMES[FIELDS] = {
    "n",      "c_forecast", "c_reference", "n_point", "s_e",   "s_abs",      "s_sq",
    "n_ape",  "s_ape",      "n_norm",      "s_norm",  "s_abs_norm", "s_sq_norm", "n_ref",
    "s_sq_ref", "s_d",      "s_dd",        "s_o",     "s_oo",  "n_f",        "s_f",
    "s_ff",   "s_fo",       "min_o",       "max_o",   "min_f", "max_f",      "n_o"};
// The count each statistic is over: itself for a count.
static const enum Field COUNT_OF[FIELDS] = {
    [N] = N, [C_FORECAST] = C_FORECAST, [C_REFERENCE] = C_REFERENCE, [N_POINT] = N_POINT,
    [S_E] = N_POINT, [S_ABS] = N_POINT, [S_SQ] = N_POINT, [N_APE] = N_APE, [S_APE] = N_APE,
    [N_NORM] = N_NORM, [S_NORM] = N_NORM, [S_ABS_NORM] = N_NORM, [S_SQ_NORM] = N_NORM,
    [N_REF] = N_REF, [S_SQ_REF] = N_REF, [S_D] = N_POINT, [S_DD] = N_POINT, [S_O] = N_O,
    [S_OO] = N_O, [N_F] = N_F, [S_F] = C_FORECAST, [S_FF] = C_FORECAST, [S_FO] = N_POINT,
    [MIN_O] = N_O, [MAX_O] = N_O, [MIN_F] = C_FORECAST, [MAX_F] = C_FORECAST, [N_O] = N_O};

static bool is_count(enum Field f) { return COUNT_OF[f] == f; }

// Counts are kept as doubles too (exact to 2^53 pairs), so that combining is one loop.
typedef struct {
  double v[FIELDS];
} PointStats;

static idx_t point_state_size(duckdb_function_info info) {
  (void)info;
  return sizeof(PointStats);
}

static void point_init(duckdb_function_info info, duckdb_aggregate_state state) {
  (void)info;
  PointStats *s = (PointStats *)state;
  memset(s, 0, sizeof *s);
  s->v[MIN_O] = s->v[MIN_F] = INFINITY;
  s->v[MAX_O] = s->v[MAX_F] = -INFINITY;
}

static bool valid(const uint64_t *validity, idx_t row) {
  return !validity || (validity[row >> 6] >> (row & 63)) & 1;
}

// x - o, or 0 where |x - o| <= 1e-8 + deadband * |o| (numpy.isclose, as errorSql).
static double error_of(double x, double o, double deadband) {
  if (deadband > 0 && fabs(x - o) <= 1e-8 + deadband * fabs(o)) return 0.0;
  return x - o;
}

static void point_update(duckdb_function_info info, duckdb_data_chunk input, duckdb_aggregate_state *states) {
  (void)info;
  idx_t rows = duckdb_data_chunk_get_size(input);
  const double *col[6];
  const uint64_t *ok[6];
  for (idx_t c = 0; c < 6; c++) {
    duckdb_vector v = duckdb_data_chunk_get_vector(input, c);
    col[c] = (const double *)duckdb_vector_get_data(v);
    ok[c] = duckdb_vector_get_validity(v);
  }
  for (idx_t i = 0; i < rows; i++) {
    double *v = ((PointStats *)states[i])->v;
    bool has_o = valid(ok[0], i), has_f = valid(ok[1], i), has_r = valid(ok[2], i);
    double o = col[0][i], f = col[1][i], r = col[2][i];
    // a NULL capacity, mape_floor or deadband counts as none, as the SQL's CASEs read it
    double capacity = valid(ok[3], i) ? col[3][i] : 0.0;
    double mape_floor = valid(ok[4], i) ? col[4][i] : 0.0;
    double deadband = valid(ok[5], i) ? col[5][i] : 0.0;
    v[N] += 1;
    if (has_o) {
      v[N_O] += 1;
      v[S_O] += o;
      v[S_OO] += o * o;
      if (o < v[MIN_O]) v[MIN_O] = o;
      if (o > v[MAX_O]) v[MAX_O] = o;
    }
    if (has_r) v[C_REFERENCE] += 1;
    if (!has_f) continue;
    v[C_FORECAST] += 1;
    v[N_F] += 1;
    v[S_F] += f;
    v[S_FF] += f * f;
    if (f < v[MIN_F]) v[MIN_F] = f;
    if (f > v[MAX_F]) v[MAX_F] = f;
    if (!has_o) continue;
    double e = error_of(f, o, deadband), d = f - o;
    v[N_POINT] += 1;
    v[S_E] += e;
    v[S_ABS] += fabs(e);
    v[S_SQ] += e * e;
    v[S_D] += d;
    v[S_DD] += d * d;
    v[S_FO] += f * o;
    double floor = capacity > 0 ? mape_floor * capacity : 0.0;
    if (fabs(o) > floor) {
      v[N_APE] += 1;
      v[S_APE] += fabs(e / o);
    }
    if (capacity > 0) {
      double e_norm = e / capacity;
      v[N_NORM] += 1;
      v[S_NORM] += e_norm;
      v[S_ABS_NORM] += fabs(e_norm);
      v[S_SQ_NORM] += e_norm * e_norm;
    }
    if (has_r) {
      double e_ref = error_of(r, o, deadband);
      v[N_REF] += 1;
      v[S_SQ_REF] += e_ref * e_ref;
    }
  }
}

static void point_combine(duckdb_function_info info, duckdb_aggregate_state *source,
                          duckdb_aggregate_state *target, idx_t count) {
  (void)info;
  for (idx_t k = 0; k < count; k++) {
    const double *a = ((PointStats *)source[k])->v;
    double *b = ((PointStats *)target[k])->v;
    for (int f = 0; f < FIELDS; f++) {
      if (f == MIN_O || f == MIN_F) b[f] = fmin(a[f], b[f]);
      else if (f == MAX_O || f == MAX_F) b[f] = fmax(a[f], b[f]);
      else b[f] += a[f];
    }
  }
}

static void point_finalize(duckdb_function_info info, duckdb_aggregate_state *source, duckdb_vector result,
                           idx_t count, idx_t offset) {
  (void)info;
  for (int f = 0; f < FIELDS; f++) {
    duckdb_vector child = duckdb_struct_vector_get_child(result, (idx_t)f);
    void *data = duckdb_vector_get_data(child);
    for (idx_t k = 0; k < count; k++) {
      const double *v = ((PointStats *)source[k])->v;
      idx_t row = offset + k;
      if (is_count((enum Field)f)) {
        ((int64_t *)data)[row] = (int64_t)v[f];
      } else if (v[COUNT_OF[f]] > 0) {
        ((double *)data)[row] = v[f];
      } else {
        duckdb_vector_ensure_validity_writable(child);
        duckdb_validity_set_row_invalid(duckdb_vector_get_validity(child), row);
      }
    }
  }
}

static bool register_point_stats(duckdb_connection con) {
  duckdb_logical_type dbl = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
  duckdb_logical_type big = duckdb_create_logical_type(DUCKDB_TYPE_BIGINT);
  duckdb_logical_type types[FIELDS];
  for (int f = 0; f < FIELDS; f++) types[f] = is_count((enum Field)f) ? big : dbl;
  duckdb_logical_type out = duckdb_create_struct_type(types, FIELD_NAMES, FIELDS);
  duckdb_aggregate_function fn = duckdb_create_aggregate_function();
  duckdb_aggregate_function_set_name(fn, "efsync_point_stats");
  for (int p = 0; p < 6; p++) duckdb_aggregate_function_add_parameter(fn, dbl);
  duckdb_aggregate_function_set_return_type(fn, out);
  duckdb_aggregate_function_set_functions(fn, point_state_size, point_init, point_update, point_combine,
                                          point_finalize);
  bool ok = duckdb_register_aggregate_function(con, fn) == DuckDBSuccess;
  duckdb_destroy_aggregate_function(&fn);
  duckdb_destroy_logical_type(&out);
  duckdb_destroy_logical_type(&big);
  duckdb_destroy_logical_type(&dbl);
  return ok;
}

// ---------------------------------------------------------------------------------------------
// efsync_bin: the constants of binSql in src/accuracy/stats.ts (BIN_SCALE, NEGATIVE_BINS,
// ZERO_BIN), which test/accuracy-native.test.ts holds the two to.

#define BIN_SCALE 250.0
#define NEGATIVE_BINS (-1000000)
#define ZERO_BIN (-500000)

static void bin_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  idx_t rows = duckdb_data_chunk_get_size(input);
  duckdb_vector in = duckdb_data_chunk_get_vector(input, 0);
  const double *x = (const double *)duckdb_vector_get_data(in);
  const uint64_t *ok = duckdb_vector_get_validity(in);
  int32_t *bin = (int32_t *)duckdb_vector_get_data(output);
  for (idx_t i = 0; i < rows; i++) {
    if (!valid(ok, i)) {
      duckdb_vector_ensure_validity_writable(output);
      duckdb_validity_set_row_invalid(duckdb_vector_get_validity(output), i);
      continue;
    }
    if (!isfinite(x[i])) {
      duckdb_scalar_function_set_error(info, "efsync_bin: a value is not finite");
      return;
    }
    if (x[i] > 0) bin[i] = (int32_t)nearbyint(log(x[i]) * BIN_SCALE);
    else if (x[i] < 0) bin[i] = NEGATIVE_BINS - (int32_t)nearbyint(log(-x[i]) * BIN_SCALE);
    else bin[i] = ZERO_BIN;
  }
}

static bool register_bin(duckdb_connection con) {
  duckdb_logical_type dbl = duckdb_create_logical_type(DUCKDB_TYPE_DOUBLE);
  duckdb_logical_type integer = duckdb_create_logical_type(DUCKDB_TYPE_INTEGER);
  duckdb_scalar_function fn = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(fn, "efsync_bin");
  duckdb_scalar_function_add_parameter(fn, dbl);
  duckdb_scalar_function_set_return_type(fn, integer);
  duckdb_scalar_function_set_function(fn, bin_function);
  bool ok = duckdb_register_scalar_function(con, fn) == DuckDBSuccess;
  duckdb_destroy_scalar_function(&fn);
  duckdb_destroy_logical_type(&integer);
  duckdb_destroy_logical_type(&dbl);
  return ok;
}

// ---------------------------------------------------------------------------------------------
// efsync_trim

static void trim_function(duckdb_function_info info, duckdb_data_chunk input, duckdb_vector output) {
  (void)info;
  bool released = false;
#ifdef __GLIBC__
  released = malloc_trim(0) == 1;
#endif
  bool *out = (bool *)duckdb_vector_get_data(output);
  for (idx_t i = 0, rows = duckdb_data_chunk_get_size(input); i < rows; i++) out[i] = released;
}

// Volatile: run at each call, never folded into a constant when the statement is planned.
static bool register_trim(duckdb_connection con) {
  duckdb_logical_type boolean = duckdb_create_logical_type(DUCKDB_TYPE_BOOLEAN);
  duckdb_scalar_function fn = duckdb_create_scalar_function();
  duckdb_scalar_function_set_name(fn, "efsync_trim");
  duckdb_scalar_function_set_return_type(fn, boolean);
  duckdb_scalar_function_set_volatile(fn);
  duckdb_scalar_function_set_function(fn, trim_function);
  bool ok = duckdb_register_scalar_function(con, fn) == DuckDBSuccess;
  duckdb_destroy_scalar_function(&fn);
  duckdb_destroy_logical_type(&boolean);
  return ok;
}

// ---------------------------------------------------------------------------------------------

bool efsync_init_c_api(duckdb_extension_info info, struct duckdb_extension_access *access) {
  duckdb_database *db = access->get_database(info);
  if (!db) return false; // get_database has set the error
  duckdb_connection con;
  if (duckdb_connect(*db, &con) != DuckDBSuccess) {
    access->set_error(info, "efsync: could not connect to the database");
    return false;
  }
  bool ok = register_point_stats(con) && register_bin(con) && register_trim(con);
  duckdb_disconnect(&con);
  if (!ok) access->set_error(info, "efsync: could not register its functions");
  return ok;
}
