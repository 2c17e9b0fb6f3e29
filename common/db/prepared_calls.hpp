// The one-trip calls one database session has prepared. In prepared-statement mode a
// pooled session is ours alone, so a call goes out as a prepared statement,
//   SELECT * FROM function($1, ..., $n)
// parsed and planned once per session, its arguments sent as parameters: PostgreSQL neither
// parses nor plans the call again (about a tenth of its CPU per new key, measured with pgbench
// on the product's two calls), and the API escapes nothing.
#pragma once

#include <libpq-fe.h>

#include <cstddef>
#include <string>
#include <vector>

namespace rr::db {

// The statement a call of `function` with `arity` arguments is prepared as.
std::string prepared_call_sql(const std::string& function, std::size_t arity);

class PreparedCalls {
 public:
  struct Entry {
    std::string function;
    std::size_t arity = 0;
    std::string name;  // rr_call_N, unique in the session
    std::string sql;   // prepared_call_sql(function, arity)
  };

  // The entry for `function` with `arity` arguments if session `conn` prepared it, else nullptr.
  // A session other than the one the entries were prepared in (another PGconn, or the same one
  // reconnected to another server process) starts with none.
  const Entry* find(PGconn* conn, const std::string& function, std::size_t arity);
  // What to prepare for a call not found: a name no entry of this session uses.
  Entry next(const std::string& function, std::size_t arity) const;
  // Records `entry` once the session has prepared it; returns the entry as recorded.
  const Entry& remember(Entry entry);

 private:
  PGconn* conn_ = nullptr;
  int server_pid_ = 0;
  std::vector<Entry> entries_;  // a handful: the product calls three functions
};

}  // namespace rr::db
