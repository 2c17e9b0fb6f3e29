// How operator output spells a timestamp: RFC 3339 in UTC with milliseconds, rendered by
// PostgreSQL itself so that it does not depend on the session's TimeZone.
#pragma once

// Expands to SQL text; `column` is a string literal naming a timestamptz expression.
#define RR_SQL_UTC_TEXT(column) "to_char(" column " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"
