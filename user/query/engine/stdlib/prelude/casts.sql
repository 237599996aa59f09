-- The cast_int!, cast_double! and cast_string! macros: CAST(x AS INT),
-- CAST(x AS REAL) and CAST(x AS TEXT), as upstream offers them without an
-- INCLUDE. They are text substitution: the argument is any expression.

CREATE PERFETTO MACRO cast_int(value Expr) RETURNS Expr AS CAST($value AS INT);
CREATE PERFETTO MACRO cast_double(value Expr) RETURNS Expr AS CAST($value AS REAL);
CREATE PERFETTO MACRO cast_string(value Expr) RETURNS Expr AS CAST($value AS TEXT);
