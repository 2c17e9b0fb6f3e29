// What the parts of one pass share (reconciliation_pass.cpp and the matching files): the
// connection it holds, the report it fills, and the helpers that write a repair together with
// its break row.
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/db/connection_pool.hpp"
#include "common/db/transaction.hpp"
#include "common/reconciliation/reconciliation_pass.hpp"

namespace rr::reconciliation {

// A JSON object of string and integer fields, for a break row's details.
class Details {
 public:
  Details& text(const char* name, const std::string& value);
  Details& integer(const char* name, std::int64_t value);
  std::string json() const;

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // name, JSON value
};

struct ReconciliationPass::Context {
  db::ConnectionPool::Lease& conn;
  const PassOptions& options;
  PassReport& report;
  std::int64_t now = 0;              // unix seconds when the pass started
  std::set<std::string> listed_ids;  // every charge and refund the listing returned

  // A read in a transaction of its own.
  db::Result read(const db::Statement& statement, const auto&... args) {
    db::Transaction tx(conn.conn(), conn.statement_timeout());
    auto result = conn.exec(tx, statement, args...);
    tx.commit();
    return result;
  }

  // Runs `repair` and records `line` in one transaction (unless dry_run): both commit or neither.
  // The repair runs whenever asked (the caller saw it is needed); a break row already recorded is
  // not added again nor reported. Returns whether the break was new (with dry_run: would be).
  bool record(const BreakLine& line, const std::function<void(db::Transaction&)>& repair = {});
};

}  // namespace rr::reconciliation
