// Package where is the episode filter of 'rlrec copy --where': a small
// SQL-like language of comparisons between the columns of the episodes
// table and literals, joined by AND, OR and NOT, with parentheses.
//
//	status = 'completed' AND success = true AND step_count > 10
//	(env_index IN (0, 1) OR NOT truncated) AND cumulative_reward >= 0.5
//	ended_at IS NOT NULL AND started_at >= '2026-03-01T12:00:00Z'
//
// # Grammar
//
//	filter     = or
//	or         = and { OR and }
//	and        = not { AND not }
//	not        = NOT not | primary
//	primary    = "(" or ")" | predicate
//	predicate  = column op literal
//	           | column IS [NOT] NULL
//	           | column [NOT] IN "(" literal { "," literal } ")"
//	           | column                       (a bool column alone: column = true)
//	op         = "=" | "==" | "!=" | "<>" | "<" | "<=" | ">" | ">="
//	literal    = string | number | TRUE | FALSE
//	string     = "'" { any character but "'" | "''" } "'"
//	number     = [ "-" | "+" ] ( digits [ "." { digit } ] | "." digits ) [ ( "e" | "E" ) [ "-" | "+" ] digits ]
//	column     = letter { letter | digit | "_" } | '"' { any character but '"' | '""' } '"'
//
// Keywords (AND, OR, NOT, IS, NULL, IN, TRUE, FALSE) and column names are
// case-insensitive; blanks separate tokens. NOT binds tighter than AND,
// AND tighter than OR, as in SQL. A column stands on the left of its
// comparison. Nesting is limited to MaxDepth levels.
//
// # Columns and types
//
// Every column of the episodes table that is not binary, and the
// recording's partition columns (see Columns):
//
//	string     session_id, env_id, episode_record_id, episode_id,
//	           env_component_id, model_component_id, status, final_info,
//	           steps_file, success_source
//	integer    episode_index, env_index, step_count, steps_recorded, duration_ms,
//	           seed, trial_index, lane
//	float      cumulative_reward, reward_sum, predict_ms, step_ms
//	bool       started_from_auto_reset, terminated, truncated, success
//	timestamp  started_at, ended_at
//
// A string column compares with a string literal (byte by byte, as DuckDB
// compares VARCHAR), a number column with a number (integers exactly, a
// fractional literal as float64; NaN equals NaN and sorts above every
// other value, as in DuckDB), a bool column with TRUE or FALSE (= and !=
// only), a timestamp column with a string literal holding a time:
// RFC 3339 ('2026-03-01T12:00:00.5Z', '2026-03-01T13:00:00+01:00'), or
// '2026-03-01 12:00:00[.ffffff]', '2026-03-01T12:00:00[.ffffff]' or
// '2026-03-01', read as UTC, compared to the microsecond. Any other
// pairing is an error when the filter is parsed, naming the column and
// its type.
//
// # NULL
//
// step_count, cumulative_reward, duration_ms, success, ended_at,
// final_info and steps_file may be null, and so may schema version 3's
// columns (rlmesh 0.1: seed, trial_index, success_source, lane,
// predict_ms, step_ms), which are null in every version 2 row. As in SQL, a comparison with a
// null value is unknown, NOT unknown is unknown, FALSE AND unknown is
// FALSE, TRUE OR unknown is TRUE, and an episode is selected only when
// the whole filter is TRUE. "column = NULL" is refused: write
// "column IS NULL".
package where
