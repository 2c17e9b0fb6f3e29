// Which calls a session has prepared, and the statement each is prepared as.
#include "common/db/prepared_calls.hpp"

#include <utility>

namespace rr::db {

std::string prepared_call_sql(const std::string& function, std::size_t arity) {
  std::string sql = "SELECT * FROM " + function + "(";
  for (std::size_t i = 1; i <= arity; ++i) {
    if (i > 1) sql += ", ";
    sql += '$';
    sql += std::to_string(i);
  }
  sql += ')';
  return sql;
}

const PreparedCalls::Entry* PreparedCalls::find(PGconn* conn, const std::string& function, std::size_t arity) {
  const int server_pid = PQbackendPID(conn);
  if (conn != conn_ || server_pid != server_pid_) {
    entries_.clear();
    conn_ = conn;
    server_pid_ = server_pid;
  }
  for (const auto& entry : entries_) {
    if (entry.arity == arity && entry.function == function) return &entry;
  }
  return nullptr;
}

PreparedCalls::Entry PreparedCalls::next(const std::string& function, std::size_t arity) const {
  return Entry{function, arity, "rr_call_" + std::to_string(entries_.size() + 1), prepared_call_sql(function, arity)};
}

const PreparedCalls::Entry& PreparedCalls::remember(Entry entry) { return entries_.emplace_back(std::move(entry)); }

}  // namespace rr::db
